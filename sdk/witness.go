package registry

import (
	"bytes"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// VerifyCosignature checks that a signed checkpoint (the note, as
// VerifyCheckpoint takes it: check that first) carries a witness's
// cosignature over its text: witnessKey is the witness's note verifier key
// of type 0x04 ("<name>+<hash>+<base64 of 0x04 and the Ed25519 key>", C2SP
// tlog-cosignature, cosignature/v1). It answers when the witness signed. A
// witness cosigns a checkpoint only once the log proved it consistent with
// every checkpoint that witness saw before, so the registry could not have
// shown another history to anyone who checks the same witness.
func VerifyCosignature(signed, witnessKey string) (time.Time, error) {
	parts := strings.SplitN(strings.TrimSpace(witnessKey), "+", 3)
	if len(parts) != 3 {
		return time.Time{}, fmt.Errorf("registry: %q is not a note verifier key (name+hash+key)", witnessKey)
	}
	name := parts[0]
	key, err := base64.StdEncoding.DecodeString(parts[2])
	if err != nil || len(key) != 1+ed25519.PublicKeySize || key[0] != 0x04 {
		return time.Time{}, fmt.Errorf("registry: %q is not a witness's cosignature/v1 key (type 0x04, an Ed25519 key)", witnessKey)
	}
	sum := sha256.Sum256(append([]byte(name+"\n"), key...))
	if parts[1] != fmt.Sprintf("%08x", binary.BigEndian.Uint32(sum[:4])) {
		return time.Time{}, fmt.Errorf("registry: %q: the key hash is not the key's", witnessKey)
	}
	split := strings.Index(signed, "\n\n")
	if split < 0 {
		return time.Time{}, unverified("the checkpoint is not a signed note")
	}
	text := signed[:split+1]
	for _, line := range strings.Split(signed[split+2:], "\n") {
		sig, ok := strings.CutPrefix(line, "— "+name+" ")
		if !ok {
			continue
		}
		raw, err := base64.StdEncoding.DecodeString(sig)
		if err != nil || len(raw) != 4+8+ed25519.SignatureSize || !bytes.Equal(raw[:4], sum[:4]) {
			continue
		}
		at := binary.BigEndian.Uint64(raw[4:12])
		msg := "cosignature/v1\ntime " + strconv.FormatUint(at, 10) + "\n" + text
		if ed25519.Verify(ed25519.PublicKey(key[1:]), []byte(msg), raw[12:]) {
			return time.Unix(int64(at), 0).UTC(), nil
		}
	}
	return time.Time{}, unverified("the checkpoint carries no valid cosignature of witness %q", name)
}
