package model

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
	inString, escaped := false, false
	for _, c := range raw {
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
		case c == '{' || c == '[':
			depth++
			deepest = max(deepest, depth)
		case c == '}' || c == ']':
			depth--
		}
	}
	return deepest
}
