package tlog

import (
	"github.com/assetregistry/registry/pkg/access"
	"github.com/assetregistry/registry/pkg/store"
)

// LogReader is what a store that reads the log's events stands on (the
// feed's, the passports'): the kit's store, the log whose leaves and
// proofs it reads, and the copy of who sees which asset its reads filter
// on.
type LogReader struct {
	*store.Store
	Log    *Store
	access *access.Copy
}

// NewLogReader reads through s and log. Its copy of the assets' access is
// the schema's alone (nothing refreshes it from the assets service) until
// UseAccess names the service's.
func NewLogReader(s *store.Store, log *Store) *LogReader {
	return &LogReader{Store: s, Log: log, access: access.New(s, nil)}
}

// UseAccess makes c the copy the reads filter on and the ingest teaches.
func (r *LogReader) UseAccess(c *access.Copy) { r.access = c }

// Access is the copy of the assets' access the reads filter on.
func (r *LogReader) Access() *access.Copy { return r.access }
