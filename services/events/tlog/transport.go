package tlog

import (
	"net/http"
	"strconv"
	"strings"

	"github.com/assetregistry/registry/pkg/endpoints"
	"github.com/assetregistry/registry/pkg/httpx"
)

// Routes adds the log's routes to r: its checkpoints, keys, proofs and
// entries.
func Routes(r *httpx.Router, e Endpoints) {
	handle := r.Handle
	// A verifier handed a passport needs no token to fetch these.
	handle("GET", "/log/checkpoint", endpoints.Serve(e.Checkpoint, noQuery, endpoints.Anonymous))
	handle("GET", "/log/keys", endpoints.Serve(e.LogKeys, noQuery, endpoints.Anonymous))
	handle("GET", "/log/inclusion", endpoints.Serve(e.Inclusion, decodeInclusion))
	handle("GET", "/log/consistency", endpoints.Serve(e.Consistency, decodeConsistency))
	handle("GET", "/log/entry", endpoints.Serve(e.Entry, decodeEntry))
}

func noQuery(r *http.Request) (struct{}, error) { return struct{}{}, httpx.NoQuery(r) }

// leafNumber reads a non-negative integer parameter (digits only).
func leafNumber(q *httpx.Query, name string) *uint64 {
	v := q.String(name)
	if v == nil {
		return nil
	}
	n, err := strconv.ParseUint(*v, 10, 63)
	if err != nil || strings.TrimLeft(*v, "0123456789") != "" {
		q.Bad(name, "must be a whole number from 0")
		return nil
	}
	return &n
}

// decodeInclusion reads the event (event_id or leaf_index, exactly one)
// and tree_size.
func decodeInclusion(r *http.Request) (InclusionQuery, error) {
	q := httpx.ParseQuery(r, "event_id", "leaf_index", "tree_size")
	iq := InclusionQuery{EventID: q.UUID("event_id"), LeafIndex: leafNumber(q, "leaf_index"), TreeSize: leafNumber(q, "tree_size")}
	if (q.String("event_id") == nil) == (q.String("leaf_index") == nil) {
		q.Invalid("event_id", "name the event: give event_id or leaf_index, one of them")
	}
	return iq, q.Err()
}

// decodeEntry reads leaf_index, which is required.
func decodeEntry(r *http.Request) (uint64, error) {
	q := httpx.ParseQuery(r, "leaf_index")
	leaf := leafNumber(q, "leaf_index")
	if leaf == nil && q.String("leaf_index") == nil {
		q.Invalid("leaf_index", "is required: the index of the leaf whose entry to read")
	}
	if leaf == nil {
		return 0, q.Err()
	}
	return *leaf, q.Err()
}

// decodeConsistency reads from (required) and to.
func decodeConsistency(r *http.Request) (ConsistencyQuery, error) {
	q := httpx.ParseQuery(r, "from", "to")
	cq := ConsistencyQuery{To: leafNumber(q, "to")}
	if from := leafNumber(q, "from"); from != nil {
		cq.From = *from
	} else if q.String("from") == nil {
		q.Invalid("from", "is required: the size of the tree you hold a checkpoint of")
	}
	return cq, q.Err()
}
