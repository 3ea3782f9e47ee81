package tlog

import "github.com/google/uuid"

// LogCheckpoint is the latest signed checkpoint: its signed note (the
// C2SP tlog-checkpoint format, what a client verifies and keeps) and, for
// reading, what the note says.
type LogCheckpoint struct {
	Origin   string `json:"origin"`
	TreeSize uint64 `json:"tree_size"`
	RootHash []byte `json:"root_hash"`
	Note     string `json:"note"`
}

// LogKeysAnswer are the log's public keys: the one that signs now first,
// then those that signed before (a key rotation keeps old checkpoints
// verifiable).
type LogKeysAnswer struct {
	Origin string   `json:"origin"`
	Keys   []string `json:"keys"`
}

// InclusionQuery asks for the proof that an event (by id, or its leaf
// index) is in the tree of TreeSize leaves (nil: the latest checkpoint's).
type InclusionQuery struct {
	EventID   *uuid.UUID
	LeafIndex *uint64
	TreeSize  *uint64
}

// InclusionAnswer is an inclusion proof (RFC 9162 section 2.1.3): the
// hashes from the leaf's sibling up, standard base64.
type InclusionAnswer struct {
	LeafIndex uint64   `json:"leaf_index"`
	TreeSize  uint64   `json:"tree_size"`
	Hashes    [][]byte `json:"hashes"`
}

// ConsistencyQuery asks for the proof that the tree of From leaves is a
// prefix of the tree of To (nil: the latest checkpoint's).
type ConsistencyQuery struct {
	From uint64
	To   *uint64
}

// ConsistencyAnswer is a consistency proof (RFC 9162 section 2.1.4).
type ConsistencyAnswer struct {
	From   uint64   `json:"from"`
	To     uint64   `json:"to"`
	Hashes [][]byte `json:"hashes"`
}

// LogEntry is a leaf's entry: the bytes whose leaf hash the tree holds
// (standard base64), and what they are: an event, or the entry that
// records an event's redaction (RedactionEntry).
type LogEntry struct {
	LeafIndex uint64 `json:"leaf_index"`
	Type      string `json:"type"` // EntryEvent or RedactionEntryType
	Entry     []byte `json:"entry"`
}

// The types of log entries.
const (
	EntryEvent         = "event"
	RedactionEntryType = "log.redaction"
)
