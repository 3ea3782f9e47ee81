// Lists of what links to a resource (an organization's people, an asset
// type's documents) grow by one entry with every link anyone makes. A
// resource's answer, and so its change event, carries only the first
// MaxEmbedded of them; the whole list is a sub-resource, paged in link
// order by a LinkKey.

package model

import (
	"crypto/subtle"
	"encoding/base64"
	"encoding/binary"
	"time"

	"github.com/google/uuid"
)

// MaxEmbedded is the most entries a list embedded in a resource's answer
// holds; a resource with more says so beside the list (its
// `<list>_truncated` member) and serves the whole list as a paged
// sub-resource. It keeps every answer, and every change event, of a
// resource many things link to within a few tens of KiB.
const MaxEmbedded = 100

// LinkKey is a position in a list of links in link order: when the link
// was made, the id at its other end and, where one end may be linked to
// the other more than once, the relation's name ("" otherwise).
type LinkKey struct {
	At   time.Time
	ID   uuid.UUID
	Name string
}

// LinkPage asks for up to Limit links after After (nil: from the first).
type LinkPage struct {
	Limit int
	After *LinkKey
}

// LinkPaged is one page of links; Next is the position to continue after,
// nil on the last page.
type LinkPaged[T any] struct {
	Items []T
	Next  *LinkKey
}

// TrimLinks turns the Limit+1 rows a store fetched into a page, as
// TrimPage does for id-ordered lists.
func TrimLinks[T any](rows []T, page LinkPage, key func(T) LinkKey) LinkPaged[T] {
	if rows == nil {
		rows = []T{}
	}
	if len(rows) > page.Limit {
		rows = rows[:page.Limit]
		next := key(rows[len(rows)-1])
		return LinkPaged[T]{Items: rows, Next: &next}
	}
	return LinkPaged[T]{Items: rows}
}

// maxLinkName bounds a LinkKey's name in a cursor: relation types are at
// most 64 characters.
const maxLinkName = 128

// EncodeLinkCursor makes the opaque cursor of a position in a list of
// links, bound to the query's filters as EncodeCursor's is.
func EncodeLinkCursor(k LinkKey, binding string) string {
	key := binary.BigEndian.AppendUint64(make([]byte, 0, 24+len(k.Name)+cursorMACSize), uint64(k.At.UnixMicro()))
	key = append(key, k.ID[:]...)
	key = append(key, k.Name...)
	return base64.RawURLEncoding.EncodeToString(append(key, cursorMAC(key, linkBinding(binding))...))
}

// DecodeLinkCursor reverses EncodeLinkCursor.
func DecodeLinkCursor(cursor, binding string) (LinkKey, error) {
	raw, err := base64.RawURLEncoding.DecodeString(cursor)
	if err != nil || len(raw) < 24+cursorMACSize || len(raw) > 24+maxLinkName+cursorMACSize {
		return LinkKey{}, ErrCursor
	}
	key := raw[:len(raw)-cursorMACSize]
	if subtle.ConstantTimeCompare(raw[len(key):], cursorMAC(key, linkBinding(binding))) != 1 {
		return LinkKey{}, ErrCursor
	}
	id, _ := uuid.FromBytes(key[8:24]) // 16 bytes: cannot fail
	return LinkKey{At: time.UnixMicro(int64(binary.BigEndian.Uint64(key[:8]))).UTC(), ID: id, Name: string(key[24:])}, nil
}

// linkBinding keeps a link cursor from passing for an id cursor of the
// same filters, and the other way round.
func linkBinding(binding string) string { return "links\x00" + binding }
