package documents

import (
	"strconv"
	"strings"
)

// RangeSpec is one byte range as a client asked for it (RFC 9110 section
// 14.1.2), before the file's size is known: First-Last, First- (to the
// end), or the last Suffix bytes.
type RangeSpec struct {
	First, Last int64 // Last < 0: to the end
	Suffix      int64 // > 0: the last Suffix bytes; First and Last unused
}

// ParseRange reads a Range header with a single byte range. Anything else
// (absent, another unit, several ranges, bad syntax) is nil: the server
// then sends the whole file, as RFC 9110 allows.
func ParseRange(header string) *RangeSpec {
	spec, ok := strings.CutPrefix(strings.TrimSpace(header), "bytes=")
	if !ok || strings.Contains(spec, ",") {
		return nil
	}
	first, last, ok := strings.Cut(strings.TrimSpace(spec), "-")
	if !ok {
		return nil
	}
	if first == "" {
		n, err := strconv.ParseInt(last, 10, 64)
		if err != nil || n < 0 || !digits(last) {
			return nil
		}
		return &RangeSpec{Suffix: n, Last: -1, First: -1}
	}
	f, err := strconv.ParseInt(first, 10, 64)
	if err != nil || !digits(first) {
		return nil
	}
	r := &RangeSpec{First: f, Last: -1}
	if last != "" {
		l, err := strconv.ParseInt(last, 10, 64)
		if err != nil || !digits(last) || l < f {
			return nil
		}
		r.Last = l
	}
	return r
}

func digits(s string) bool {
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return s != ""
}

// Resolve turns the spec into the bytes of a file of size bytes; false
// when no byte of the file is in it (a 416).
func (r RangeSpec) Resolve(size int64) (ByteRange, bool) {
	if r.First < 0 { // a suffix
		if r.Suffix == 0 || size == 0 {
			return ByteRange{}, false
		}
		return ByteRange{First: max(size-r.Suffix, 0), Last: size - 1}, true
	}
	if r.First >= size {
		return ByteRange{}, false
	}
	last := size - 1
	if r.Last >= 0 && r.Last < last {
		last = r.Last
	}
	return ByteRange{First: r.First, Last: last}, true
}
