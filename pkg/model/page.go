// Pages are keyset pagination over UUIDv7 ids. Ids sort by
// creation time, so "after this id" gives creation order, stays stable while
// rows are inserted, and costs an index range scan however deep the page.

package model

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"math"

	"github.com/google/uuid"
)

// Limits of a page, from the contract.
const (
	DefaultLimit = 100
	MaxLimit     = 1000
	// MaxPageBytes bounds a page by size as well as by count: a page
	// stops early, before the item that would take it past this, and its
	// Link continues right after its last item; its first item is always
	// in it, so every page makes progress. A thousand actions of the
	// largest data would otherwise be a body (and a process holding it)
	// of half a GiB, a thousand of the largest events over a GiB.
	MaxPageBytes = 4 << 20
)

// Page asks for up to Limit items after the item with id After (uuid.Nil:
// from the start).
type Page struct {
	Limit int
	After uuid.UUID
	// AfterSub orders the items that share an id, in lists whose key has a
	// second part (a compliance row is an asset's id and its action type);
	// 0 in every other list.
	AfterSub uint8
}

// Paged is one page; Next (and NextSub) is the position to continue after,
// uuid.Nil on the last page.
type Paged[T any] struct {
	Items   []T
	Next    uuid.UUID
	NextSub uint8
}

// TrimPage turns the Limit+1 rows a store fetched into a page: the extra row
// only says that more follow.
func TrimPage[T any](rows []T, page Page, id func(T) uuid.UUID) Paged[T] {
	if len(rows) > page.Limit {
		rows = rows[:page.Limit]
		return Paged[T]{Items: rows, Next: id(rows[len(rows)-1])}
	}
	if rows == nil {
		rows = []T{}
	}
	return Paged[T]{Items: rows}
}

// ErrCursor is returned for a cursor the service did not issue for this
// query.
var ErrCursor = errors.New("cursor was not issued by this service for this query")

const cursorMACSize = 10

// EncodeCursor makes an opaque cursor bound to the query's filters
// (binding), so a cursor cannot be replayed against another filter set and
// garbage is told apart from a real position. It is a checksum, not a
// secret: a forged position would only let a caller read what it may read
// anyway.
func EncodeCursor(after uuid.UUID, binding string) string { return EncodeCursorAt(after, 0, binding) }

// EncodeCursorAt is EncodeCursor for a position with a second part (see
// Page.AfterSub). A sub of 0 gives EncodeCursor's cursor.
func EncodeCursorAt(after uuid.UUID, sub uint8, binding string) string {
	key := after[:]
	if sub != 0 {
		key = append(append([]byte{}, after[:]...), sub)
	}
	buf := make([]byte, 0, len(key)+cursorMACSize)
	buf = append(buf, key...)
	buf = append(buf, cursorMAC(key, binding)...)
	return base64.RawURLEncoding.EncodeToString(buf)
}

// DecodeCursor reverses EncodeCursorAt (and EncodeCursor, whose sub is 0).
func DecodeCursor(cursor, binding string) (uuid.UUID, uint8, error) {
	raw, err := base64.RawURLEncoding.DecodeString(cursor)
	if err != nil || (len(raw) != 16+cursorMACSize && len(raw) != 17+cursorMACSize) {
		return uuid.Nil, 0, ErrCursor
	}
	key := raw[:len(raw)-cursorMACSize]
	id, err := uuid.FromBytes(key[:16])
	if err != nil || subtle.ConstantTimeCompare(raw[len(key):], cursorMAC(key, binding)) != 1 {
		return uuid.Nil, 0, ErrCursor
	}
	var sub uint8
	if len(key) == 17 {
		sub = key[16]
	}
	return id, sub, nil
}

func cursorMAC(key []byte, binding string) []byte {
	h := sha256.New()
	h.Write([]byte("asset-registry cursor v1\x00"))
	h.Write([]byte(binding))
	h.Write([]byte{0})
	h.Write(key)
	return h.Sum(nil)[:cursorMACSize]
}

// EncodeSequenceCursor is EncodeCursor for a position in a numbered
// sequence rather than after an id (the change feed's global order).
func EncodeSequenceCursor(seq int64, binding string) string {
	buf := binary.BigEndian.AppendUint64(make([]byte, 0, 8+cursorMACSize), uint64(seq))
	buf = append(buf, cursorMAC(buf[:8], binding)...)
	return base64.RawURLEncoding.EncodeToString(buf)
}

// DecodeSequenceCursor reverses EncodeSequenceCursor.
func DecodeSequenceCursor(cursor, binding string) (int64, error) {
	raw, err := base64.RawURLEncoding.DecodeString(cursor)
	if err != nil || len(raw) != 8+cursorMACSize || subtle.ConstantTimeCompare(raw[8:], cursorMAC(raw[:8], binding)) != 1 {
		return 0, ErrCursor
	}
	seq := binary.BigEndian.Uint64(raw[:8])
	if seq > math.MaxInt64 {
		return 0, ErrCursor
	}
	return int64(seq), nil
}
