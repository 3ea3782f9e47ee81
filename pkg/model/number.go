package model

import (
	"fmt"
	"strconv"
)

// Numbers a client sends in free-form JSON (an action's data and
// meta_data) are stored by PostgreSQL as jsonb, which keeps a number as a
// numeric and prints it back in full: 1e6 is answered as 1000000, and
// 1e131071 as 131,072 characters. A number is therefore accepted only when
// the registry can store it and answer it about as written: within the
// range of a 64-bit float (what most clients decode a number into), at
// most MaxNumberGrowth characters longer once printed in full, and within
// numeric's own limits (past which PostgreSQL refuses the value).
//
// MaxNumberGrowth allows the exponents of everyday measurements (1e15,
// 6.022e23, 1.6e-12) and bounds what one number can add to what is stored
// and answered: a body of numbers such as 1e19 (5 bytes with its comma,
// 21 once printed) is stored at most 4.2 times as large.
const MaxNumberGrowth = 16

// numericMaxScale is the most digits after the decimal point PostgreSQL's
// numeric keeps (NUMERIC_DSCALE_MAX); numericMaxExponent bounds the
// exponents it reads at all (INT_MAX / 2).
const (
	numericMaxScale    = 16383
	numericMaxExponent = 1<<30 - 1
)

// NumberStored checks the JSON number literal lit (valid JSON number
// syntax, as json.Valid has checked) and returns how many characters
// PostgreSQL prints for it, or a problem that says why the registry
// cannot store it as written (a 422 on its field).
func NumberStored(lit []byte) (storedLen int, problem string) {
	// The usual number has no exponent and is short: it is printed as
	// written (no JSON number has leading zeros), but for the sign of a
	// negative zero.
	if len(lit) <= 300 && !hasExponent(lit) {
		if lit[0] == '-' && isZero(lit[1:]) {
			return len(lit) - 1, ""
		}
		return len(lit), ""
	}
	n := splitNumber(lit)
	if n.exponentTooLarge || n.exponent >= numericMaxExponent || n.exponent <= -numericMaxExponent {
		return 0, fmt.Sprintf("has an exponent too large to store (%s)", abbreviate(lit))
	}
	if f, err := strconv.ParseFloat(string(lit), 64); err != nil || (f == 0 && !n.zero) {
		return 0, fmt.Sprintf("must be within the range of a 64-bit floating-point number (a magnitude from about 5e-324 to 1.8e308, or 0); %s is not", abbreviate(lit))
	}
	scale := max(0, int64(len(n.fraction))-n.exponent)
	if scale > numericMaxScale {
		return 0, fmt.Sprintf("must have at most %d digits after the decimal point once written out in full; %s has %d", numericMaxScale, abbreviate(lit), scale)
	}
	// Digits before the decimal point: from the first significant digit
	// to the point, or a lone 0.
	integer := int64(1)
	if !n.zero {
		integer = max(1, int64(len(n.integer))+n.exponent-int64(n.leadingZeros))
	}
	stored := integer
	if scale > 0 {
		stored += 1 + scale
	}
	if n.negative && !n.zero {
		stored++
	}
	if stored > int64(len(lit)+MaxNumberGrowth) {
		return 0, fmt.Sprintf("would be stored and answered written out in full, as %d characters where %d were sent; at most %d more are allowed (1e15 is fine, 1e20 is not)",
			stored, len(lit), MaxNumberGrowth)
	}
	return int(stored), ""
}

// StoredJSONSize is how many bytes the compact JSON text raw takes once
// stored and printed back by PostgreSQL and compacted again: raw's own
// size with every number written out in full (strings and names never
// grow: jsonb escapes no more than a JSON text must). Numbers must have
// passed NumberStored.
func StoredJSONSize(raw []byte) int {
	size := len(raw)
	outsideStrings(raw, func(i int) int {
		if c := raw[i]; c != '-' && (c < '0' || c > '9') {
			return 0
		}
		end := i + 1
		for end < len(raw) && isNumberByte(raw[end]) {
			end++
		}
		if stored, problem := NumberStored(raw[i:end]); problem == "" {
			size += stored - (end - i)
		}
		return end - 1 - i
	})
	return size
}

func isNumberByte(c byte) bool {
	return (c >= '0' && c <= '9') || c == '.' || c == 'e' || c == 'E' || c == '+' || c == '-'
}

func isZero(digits []byte) bool {
	for _, c := range digits {
		if c >= '1' && c <= '9' {
			return false
		}
	}
	return true
}

func hasExponent(lit []byte) bool {
	for _, c := range lit {
		if c == 'e' || c == 'E' {
			return true
		}
	}
	return false
}

// number is a JSON number literal taken apart.
type number struct {
	negative, zero   bool
	integer          []byte // the digits before the point
	fraction         []byte // the digits after it
	leadingZeros     int    // zeros before the first significant digit of integer+fraction
	exponent         int64
	exponentTooLarge bool
}

func splitNumber(lit []byte) number {
	var n number
	i := 0
	if i < len(lit) && lit[i] == '-' {
		n.negative = true
		i++
	}
	start := i
	for i < len(lit) && lit[i] >= '0' && lit[i] <= '9' {
		i++
	}
	n.integer = lit[start:i]
	if i < len(lit) && lit[i] == '.' {
		i++
		start = i
		for i < len(lit) && lit[i] >= '0' && lit[i] <= '9' {
			i++
		}
		n.fraction = lit[start:i]
	}
	if i < len(lit) && (lit[i] == 'e' || lit[i] == 'E') {
		i++
		sign := int64(1)
		if i < len(lit) && (lit[i] == '+' || lit[i] == '-') {
			if lit[i] == '-' {
				sign = -1
			}
			i++
		}
		for ; i < len(lit); i++ {
			if n.exponent > numericMaxExponent {
				n.exponentTooLarge = true
				break
			}
			n.exponent = n.exponent*10 + int64(lit[i]-'0')
		}
		n.exponent *= sign
	}
	n.zero = true
	for _, digits := range [][]byte{n.integer, n.fraction} {
		for _, d := range digits {
			if d != '0' {
				n.zero = false
				return n
			}
			n.leadingZeros++
		}
	}
	return n
}

// abbreviate shows a long literal by its ends.
func abbreviate(lit []byte) string {
	if len(lit) <= 40 {
		return string(lit)
	}
	return string(lit[:16]) + "…" + string(lit[len(lit)-16:])
}
