package telemetry

import (
	"bytes"
	"encoding"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"reflect"
	"strconv"
	"sync"
	"unicode/utf8"

	"github.com/go-kit/log"
)

// jsonLogger writes one JSON object per line, as go-kit's JSON logger
// does, without its per-line map and reflection: every request's access
// log line goes through here, on the gateway and again on the service, and
// go-kit's encoder cost a tenth of each process's CPU under load. Keys
// keep the order they are logged in; a key logged twice keeps its first
// place and its last value (go-kit's map kept only the last value too).
// Values are rendered as go-kit's logger renders them: a json.Marshaler or
// encoding.TextMarshaler as such, an error by Error(), a fmt.Stringer by
// String(), anything else as encoding/json would.
type jsonLogger struct{ w io.Writer }

func newJSONLogger(w io.Writer) log.Logger { return &jsonLogger{w: w} }

var lineBuffers = sync.Pool{New: func() any { b := make([]byte, 0, 512); return &b }}

func (l *jsonLogger) Log(keyvals ...any) error {
	if len(keyvals)%2 == 1 {
		keyvals = append(keyvals, log.ErrMissingValue)
	}
	bp := lineBuffers.Get().(*[]byte)
	b := append((*bp)[:0], '{')
	first := true
	for i := 0; i < len(keyvals); i += 2 {
		key := keyString(keyvals[i])
		if seenBefore(keyvals[:i], key) {
			continue // written at its first place with its last value
		}
		v := keyvals[i+1]
		for j := i + 2; j < len(keyvals); j += 2 {
			if keyString(keyvals[j]) == key {
				v = keyvals[j+1]
			}
		}
		if !first {
			b = append(b, ',')
		}
		first = false
		b = appendString(b, key)
		b = append(b, ':')
		b = appendValue(b, v)
	}
	b = append(b, '}', '\n')
	_, err := l.w.Write(b)
	if cap(b) <= 64<<10 {
		*bp = b
		lineBuffers.Put(bp)
	}
	return err
}

func seenBefore(keyvals []any, key string) bool {
	for i := 0; i < len(keyvals); i += 2 {
		if keyString(keyvals[i]) == key {
			return true
		}
	}
	return false
}

func keyString(k any) string {
	switch x := k.(type) {
	case string:
		return x
	case fmt.Stringer:
		return safeString(x)
	default:
		return fmt.Sprint(x)
	}
}

func appendValue(b []byte, v any) []byte {
	switch x := v.(type) {
	case nil:
		return append(b, "null"...)
	case string:
		return appendString(b, x)
	case bool:
		return strconv.AppendBool(b, x)
	case int:
		return strconv.AppendInt(b, int64(x), 10)
	case int64:
		return strconv.AppendInt(b, x, 10)
	case float64:
		// encoding/json's form for the usual magnitudes; the rest (and
		// NaN or ±Inf, which it refuses) go through it below.
		if a := math.Abs(x); a == 0 || a >= 1e-6 && a < 1e21 {
			return strconv.AppendFloat(b, x, 'f', -1, 64)
		}
	case json.Marshaler:
	case encoding.TextMarshaler:
		if isNilPointer(x) {
			return append(b, "null"...)
		}
		text, err := x.MarshalText()
		if err != nil {
			return appendString(b, "error marshaling value: "+err.Error())
		}
		return appendString(b, string(text))
	case error:
		if isNilPointer(x) {
			return append(b, "null"...)
		}
		return appendString(b, safeError(x))
	case fmt.Stringer:
		return appendString(b, safeString(x))
	}
	return appendMarshaled(b, v)
}

// appendString writes s as a JSON string: plain printable ASCII directly,
// anything else (quotes, control characters, non-ASCII) the way
// encoding/json writes it with HTML escaping off.
func appendString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c == '"' || c == '\\' || c >= utf8.RuneSelf {
			return appendMarshaled(b, s)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}

func appendMarshaled(b []byte, v any) []byte {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return appendString(b, fmt.Sprintf("error marshaling value of type %T: %v", v, err))
	}
	return append(b, bytes.TrimSuffix(buf.Bytes(), []byte{'\n'})...)
}

func isNilPointer(v any) bool {
	r := reflect.ValueOf(v)
	return r.Kind() == reflect.Pointer && r.IsNil()
}

func safeString(s fmt.Stringer) (out string) {
	defer func() {
		if p := recover(); p != nil {
			if isNilPointer(s) {
				out = "NULL"
			} else {
				out = fmt.Sprintf("PANIC in String method: %v", p)
			}
		}
	}()
	return s.String()
}

func safeError(err error) (out string) {
	defer func() {
		if p := recover(); p != nil {
			out = fmt.Sprintf("PANIC in Error method: %v", p)
		}
	}()
	return err.Error()
}
