// Package witness has the log's checkpoints cosigned by witnesses (C2SP
// tlog-witness): the leader submits each new checkpoint, with the
// consistency proof from the one the witness saw last, to every witness
// the operator configured, checks the cosignature it returns (C2SP
// tlog-cosignature, cosignature/v1) against the witness's key and keeps
// it; the served checkpoint carries the cosignatures as signature lines.
package witness

import (
	"bytes"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// Witness is a cosigner: where it takes checkpoints, and its key.
type Witness struct {
	URL string // its base URL: checkpoints go to URL + "/add-checkpoint"
	Key Key
}

// Key is a witness's cosigning key (a note verifier key of type 0x04,
// cosignature/v1: "<name>+<hash>+<base64 of 0x04 and the Ed25519 key>").
type Key struct {
	Name   string
	Hash   [4]byte
	Public ed25519.PublicKey
}

// cosignatureAlg is the note key type of a cosignature/v1 key.
const cosignatureAlg = 0x04

// ParseKey reads a witness's verifier key.
func ParseKey(vkey string) (Key, error) {
	parts := strings.SplitN(strings.TrimSpace(vkey), "+", 3)
	if len(parts) != 3 || parts[0] == "" || strings.ContainsAny(parts[0], " \n") {
		return Key{}, fmt.Errorf("%q is not a note verifier key (name+hash+key)", vkey)
	}
	raw, err := base64.StdEncoding.DecodeString(parts[2])
	if err != nil || len(raw) != 1+ed25519.PublicKeySize || raw[0] != cosignatureAlg {
		return Key{}, fmt.Errorf("%q is not a cosignature/v1 key (type 0x04, an Ed25519 key)", vkey)
	}
	k := Key{Name: parts[0], Public: ed25519.PublicKey(raw[1:])}
	k.Hash = keyHash(k.Name, raw)
	if h, err := strconv.ParseUint(parts[1], 16, 32); err != nil || len(parts[1]) != 8 || uint32(h) != binary.BigEndian.Uint32(k.Hash[:]) {
		return Key{}, fmt.Errorf("%q: the key hash %q is not the key's", vkey, parts[1])
	}
	return k, nil
}

// keyHash is a note key's hash: the first 4 bytes of SHA-256 of its name,
// a newline and the key (its type byte first).
func keyHash(name string, key []byte) [4]byte {
	sum := sha256.Sum256(append([]byte(name+"\n"), key...))
	return [4]byte(sum[:4])
}

// ParseWitnesses reads the setting transparency.witnesses: witnesses
// separated by commas, each "<url> <verifier key>".
func ParseWitnesses(setting string) ([]Witness, error) {
	var out []Witness
	for _, item := range strings.Split(setting, ",") {
		f := strings.Fields(item)
		if len(f) == 0 {
			continue
		}
		if len(f) != 2 {
			return nil, fmt.Errorf("transparency.witnesses: %q is not \"<url> <verifier key>\"", strings.TrimSpace(item))
		}
		u, err := url.Parse(f[0])
		if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
			return nil, fmt.Errorf("transparency.witnesses: %q is no http(s) URL", f[0])
		}
		k, err := ParseKey(f[1])
		if err != nil {
			return nil, fmt.Errorf("transparency.witnesses: %w", err)
		}
		for _, w := range out {
			if w.Key.Name == k.Name {
				return nil, fmt.Errorf("transparency.witnesses: two witnesses named %q", k.Name)
			}
		}
		out = append(out, Witness{URL: strings.TrimSuffix(f[0], "/"), Key: k})
	}
	return out, nil
}

// CosignedMessage is what a cosignature/v1 signs: its header, the time,
// and the checkpoint's body (the note's text, its lines above the blank
// one).
func CosignedMessage(body string, at uint64) []byte {
	return []byte("cosignature/v1\ntime " + strconv.FormatUint(at, 10) + "\n" + body)
}

// Verify checks a cosignature line ("— <name> <base64>", its newline
// optional) by k over the checkpoint's body, and answers when it was made.
func (k Key) Verify(body, line string) (time.Time, error) {
	name, sig, ok := strings.Cut(strings.TrimSuffix(strings.TrimPrefix(line, "— "), "\n"), " ")
	if !strings.HasPrefix(line, "— ") || !ok || name != k.Name {
		return time.Time{}, fmt.Errorf("%q is not a signature line of witness %q", line, k.Name)
	}
	raw, err := base64.StdEncoding.DecodeString(sig)
	if err != nil || len(raw) != 4+8+ed25519.SignatureSize || !bytes.Equal(raw[:4], k.Hash[:]) {
		return time.Time{}, fmt.Errorf("witness %q: %q is no cosignature/v1 of its key", k.Name, line)
	}
	at := binary.BigEndian.Uint64(raw[4:12])
	if !ed25519.Verify(k.Public, CosignedMessage(body, at), raw[12:]) {
		return time.Time{}, errors.New("witness " + k.Name + ": the cosignature does not verify")
	}
	return time.Unix(int64(at), 0).UTC(), nil
}

// Line is a cosignature line of k: its name, and its key hash, the time
// and the signature in base64.
func (k Key) Line(at uint64, sig []byte) string {
	raw := append(append(append([]byte{}, k.Hash[:]...), binary.BigEndian.AppendUint64(nil, at)...), sig...)
	return "— " + k.Name + " " + base64.StdEncoding.EncodeToString(raw) + "\n"
}

// NewKey makes a witness key of name from an Ed25519 public key: the
// verifier key's text and the key (a witness of the tests).
func NewKey(name string, public ed25519.PublicKey) (string, Key) {
	raw := append([]byte{cosignatureAlg}, public...)
	h := keyHash(name, raw)
	vkey := fmt.Sprintf("%s+%08x+%s", name, binary.BigEndian.Uint32(h[:]), base64.StdEncoding.EncodeToString(raw))
	return vkey, Key{Name: name, Hash: h, Public: public}
}
