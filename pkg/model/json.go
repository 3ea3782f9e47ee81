package model

import (
	"bytes"
	"encoding/json"
	"io"
)

// Marshal is JSON as the registry writes it in answers, events and ETags:
// what json.Marshal writes, but without its HTML escaping, which writes
// each '<', '>' and '&' as six bytes (\u003c): a string of them would be
// answered six times as large as it was sent. Answers are
// application/json with X-Content-Type-Options: nosniff, never HTML.
// (Go still writes U+2028 and U+2029 as \u2028, three bytes as six, in
// the strings it encodes itself; json.RawMessage values such as an
// action's data pass through as they are.)
func Marshal(v any) ([]byte, error) {
	var b bytes.Buffer
	if err := EncodeJSON(&b, v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

// EncodeJSON writes v and a newline to w as Marshal renders it.
func EncodeJSON(w io.Writer, v any) error {
	e := json.NewEncoder(w)
	e.SetEscapeHTML(false)
	return e.Encode(v)
}

// MaxJSONObject bounds each free-form JSON object a client stores (an
// action's data and meta_data), counted as it is stored and answered:
// without insignificant whitespace and with every number written out in
// full (StoredJSONSize). The largest change event follows from it
// (pkg/outbox, MaxEventSize).
const MaxJSONObject = 256 << 10

// MaxJSONDepth bounds how deeply the free-form JSON objects a client stores
// (an action's data and meta_data) may nest. Every reader of a stored
// object, a webhook receiver among them, would otherwise have to parse
// whatever depth one client sent; 32 levels is far beyond any record of an
// inspection.
const MaxJSONDepth = 32

// JSONDepth is how deeply the valid JSON text raw nests objects and arrays:
// 0 for a scalar, 1 for {} or [], one more for each level inside.
func JSONDepth(raw []byte) int {
	depth, deepest := 0, 0
	outsideStrings(raw, func(i int) int {
		switch raw[i] {
		case '{', '[':
			depth++
			deepest = max(deepest, depth)
		case '}', ']':
			depth--
		}
		return 0
	})
	return deepest
}

// outsideStrings calls visit with the index of every byte of the valid
// JSON text raw that is not part of a string (or a member name); visit
// returns how many of the following bytes to pass over.
func outsideStrings(raw []byte, visit func(i int) (skip int)) {
	inString, escaped := false, false
	for i := 0; i < len(raw); i++ {
		c := raw[i]
		switch {
		case inString:
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
		case c == '"':
			inString = true
		default:
			i += visit(i)
		}
	}
}
