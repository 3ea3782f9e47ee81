package tlog

import (
	"crypto/ed25519"
	"encoding/base64"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"golang.org/x/mod/sumdb/note"

	"github.com/assetregistry/registry/services/events/tlog/heads"
)

// Checkpoints are C2SP tlog-checkpoint signed notes: the log's origin, its
// size and its root hash (standard base64), one a line, then the Ed25519
// signature of golang.org/x/mod/sumdb/note. The origin is the signing
// key's name, so a key names the log it signs.

// Checkpoint is a signed checkpoint as stored.
type Checkpoint struct {
	Size uint64
	Root []byte
	Note string // the signed note, as served
}

// checkpointText is a checkpoint's body (what is signed): with the asset
// heads' commitment (h, nil for none) as an extension line,
// "asset-heads <from> <root>", the leaf from which the chains hold every
// event and the heads map's root (standard base64).
func checkpointText(origin string, size uint64, root []byte, h *heads.Commitment) string {
	text := origin + "\n" + strconv.FormatUint(size, 10) + "\n" + base64.StdEncoding.EncodeToString(root) + "\n"
	if h != nil {
		text += HeadsLine + " " + strconv.FormatUint(h.From, 10) + " " + base64.StdEncoding.EncodeToString(h.Root) + "\n"
	}
	return text
}

// HeadsLine begins a checkpoint's line of the asset heads' commitment.
const HeadsLine = "asset-heads"

// parseCheckpointText reads a checkpoint's body.
func parseCheckpointText(text string) (origin string, size uint64, root []byte, err error) {
	lines := strings.SplitN(text, "\n", 4)
	if len(lines) < 4 {
		return "", 0, nil, errors.New("a checkpoint has an origin, a size and a root hash, one a line")
	}
	size, err = strconv.ParseUint(lines[1], 10, 64)
	if err != nil || strconv.FormatUint(size, 10) != lines[1] {
		return "", 0, nil, fmt.Errorf("checkpoint size %q is not a decimal number", lines[1])
	}
	root, err = base64.StdEncoding.DecodeString(lines[2])
	if err != nil || len(root) != hashSize {
		return "", 0, nil, fmt.Errorf("checkpoint root %q is not a base64 SHA-256 hash", lines[2])
	}
	return lines[0], size, root, nil
}

// LogKeys are the log's signing key and the public keys that verify what
// it signed, the current one first, then those of keys it used before
// (rotation: checkpoints signed with an older key stay verifiable).
type LogKeys struct {
	signer    note.Signer // nil: checkpoints are not signed
	verifiers []note.Verifier
	public    []string // the verifier keys, as published
}

// ParseLogKeys reads a note signing key ("PRIVATE+KEY+<name>+<hash>+<key>",
// empty for none) and the verifier keys of earlier ones.
func ParseLogKeys(signingKey string, previous []string) (LogKeys, error) {
	var k LogKeys
	if signingKey != "" {
		signer, err := note.NewSigner(signingKey)
		if err != nil {
			return k, fmt.Errorf("transparency.signing-key is not a note signing key (PRIVATE+KEY+name+hash+key): %w", err)
		}
		public, err := verifierKeyOf(signingKey)
		if err != nil {
			return k, err
		}
		k.signer = signer
		previous = append([]string{public}, previous...)
	}
	for _, vkey := range previous {
		vkey = strings.TrimSpace(vkey)
		if vkey == "" {
			continue
		}
		v, err := note.NewVerifier(vkey)
		if err != nil {
			return k, fmt.Errorf("transparency.previous-keys: %q is not a note verifier key (name+hash+key): %w", vkey, err)
		}
		if k.signer != nil && v.Name() != k.signer.Name() {
			return k, fmt.Errorf("transparency.previous-keys: key %q names log %q, the signing key %q", vkey, v.Name(), k.signer.Name())
		}
		k.verifiers = append(k.verifiers, v)
		k.public = append(k.public, vkey)
	}
	return k, nil
}

// verifierKeyOf derives the verifier key of an Ed25519 note signing key.
func verifierKeyOf(skey string) (string, error) {
	parts := strings.SplitN(skey, "+", 5)
	if len(parts) != 5 {
		return "", errors.New("transparency.signing-key is not PRIVATE+KEY+name+hash+key")
	}
	raw, err := base64.StdEncoding.DecodeString(parts[4])
	if err != nil || len(raw) != 1+ed25519.SeedSize || raw[0] != 1 {
		return "", errors.New("transparency.signing-key is not an Ed25519 note key")
	}
	return note.NewEd25519VerifierKey(parts[2], ed25519.NewKeyFromSeed(raw[1:]).Public().(ed25519.PublicKey))
}

// CanSign reports whether a signing key is set.
func (k LogKeys) CanSign() bool { return k.signer != nil }

// Origin is the log's name, the signing key's.
func (k LogKeys) Origin() string {
	if k.signer != nil {
		return k.signer.Name()
	}
	if len(k.verifiers) > 0 {
		return k.verifiers[0].Name()
	}
	return ""
}

// Public are the verifier keys, the current one first.
func (k LogKeys) Public() []string { return k.public }

// Sign signs the checkpoint of a tree of size with root, and the asset
// heads' commitment h over the same leaves (nil: none).
func (k LogKeys) Sign(size uint64, root []byte, h *heads.Commitment) (Checkpoint, error) {
	if k.signer == nil {
		return Checkpoint{}, errors.New("no signing key (transparency.signing-key)")
	}
	msg, err := note.Sign(&note.Note{Text: checkpointText(k.signer.Name(), size, root, h)}, k.signer)
	if err != nil {
		return Checkpoint{}, fmt.Errorf("sign checkpoint: %w", err)
	}
	return Checkpoint{Size: size, Root: root, Note: string(msg)}, nil
}

// Open checks a signed checkpoint against the keys and reads it.
func (k LogKeys) Open(signed string) (Checkpoint, error) {
	n, err := note.Open([]byte(signed), note.VerifierList(k.verifiers...))
	if err != nil {
		return Checkpoint{}, fmt.Errorf("checkpoint signature: %w", err)
	}
	origin, size, root, err := parseCheckpointText(n.Text)
	if err != nil {
		return Checkpoint{}, err
	}
	if origin != k.Origin() {
		return Checkpoint{}, fmt.Errorf("checkpoint of log %q, not %q", origin, k.Origin())
	}
	return Checkpoint{Size: size, Root: root, Note: signed}, nil
}
