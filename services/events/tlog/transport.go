package tlog

import (
	"net/http"
	"strconv"
	"strings"

	"github.com/assetregistry/registry/pkg/apperr"
	"github.com/assetregistry/registry/pkg/endpoints"
	"github.com/assetregistry/registry/pkg/httpx"
)

// Routes is the route table of the log: its checkpoints, keys, proofs and
// entries, per route the operation's endpoint, its decoder and its rules.
func Routes(s Service) []endpoints.Route {
	return []endpoints.Route{
		// A verifier handed a passport needs no token to fetch these.
		endpoints.On("GET", "/log/checkpoint", endpoints.New(checkpointAs(s)), decodeCheckpoint, endpoints.Anonymous),
		endpoints.On("GET", "/log/keys", endpoints.New(s.LogKeys), noQuery, endpoints.Anonymous),
		endpoints.On("GET", "/log/inclusion", endpoints.New(s.Inclusion), decodeInclusion),
		endpoints.On("GET", "/log/consistency", endpoints.New(s.Consistency), decodeConsistency),
		endpoints.On("GET", "/log/entry", endpoints.New(s.Entry), decodeEntry),
		// The tiles of hashes, for the standard tools (C2SP tlog-tiles); the
		// entries, the events' bytes, are not among them.
		endpoints.On("GET", "/log/tile/{tile...}", endpoints.New(servedTile(s)), decodeTile, endpoints.Anonymous),
	}
}

// decodeCheckpoint reads which form of the checkpoint the request prefers.
func decodeCheckpoint(r *http.Request) (CheckpointQuery, error) {
	return CheckpointQuery{Text: prefersText(r.Header.Values("Accept"))}, httpx.NoQuery(r)
}

// prefersText says whether an Accept header ranks text/plain above
// application/json: a client that names text/plain (or text/*) with a
// higher weight, or names it and not JSON. No header, */* alone, or a tie
// answer JSON, as before the text form existed.
func prefersText(accept []string) bool {
	var text, json float64
	for _, field := range accept {
		for _, item := range strings.Split(field, ",") {
			media, params, _ := strings.Cut(strings.TrimSpace(item), ";")
			q := 1.0
			for _, p := range strings.Split(params, ";") {
				if k, v, ok := strings.Cut(strings.TrimSpace(p), "="); ok && strings.EqualFold(k, "q") {
					if f, err := strconv.ParseFloat(v, 64); err == nil {
						q = f
					}
				}
			}
			switch strings.ToLower(strings.TrimSpace(media)) {
			case "text/plain", "text/*":
				text = max(text, q)
			case "application/json", "application/*":
				json = max(json, q)
			}
		}
	}
	return text > json
}

// decodeTile reads a tile's path; one that names no tile of hashes (an
// entries tile among them) is a 404, as a tile not there yet.
func decodeTile(r *http.Request) (TilePath, error) {
	if err := httpx.NoQuery(r); err != nil {
		return TilePath{}, err
	}
	t, ok := ParseTilePath(r.PathValue("tile"))
	if !ok {
		return t, apperr.New(apperr.KindNotFound, "no tile at "+r.URL.Path+
			": tiles of hashes are tile/<level>/<index>[.p/<width>] (C2SP tlog-tiles, height 8); entries are not served")
	}
	return t, nil
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
