package registry

import (
	"crypto/ed25519"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"golang.org/x/mod/sumdb/note"
)

// A witness's cosignature (C2SP tlog-cosignature, cosignature/v1) on a
// checkpoint verifies with its key, and with no other; a checkpoint whose
// text changed, or that carries none, is refused.
func TestVerifyCosignature(t *testing.T) {
	skey, vkey, err := note.GenerateKey(rand.Reader, "registry.test/log")
	if err != nil {
		t.Fatal(err)
	}
	signer, _ := note.NewSigner(skey)
	text := "registry.test/log\n3\n" + base64.StdEncoding.EncodeToString(make([]byte, 32)) + "\n"
	signed, err := note.Sign(&note.Note{Text: text}, signer)
	if err != nil {
		t.Fatal(err)
	}
	witness := func(name string) (string, func(string, uint64) string) {
		pub, priv, _ := ed25519.GenerateKey(rand.Reader)
		raw := append([]byte{0x04}, pub...)
		sum := sha256.Sum256(append([]byte(name+"\n"), raw...))
		vkey := fmt.Sprintf("%s+%08x+%s", name, binary.BigEndian.Uint32(sum[:4]), base64.StdEncoding.EncodeToString(raw))
		return vkey, func(text string, at uint64) string {
			sig := ed25519.Sign(priv, fmt.Appendf(nil, "cosignature/v1\ntime %d\n%s", at, text))
			line := append(append(append([]byte{}, sum[:4]...), binary.BigEndian.AppendUint64(nil, at)...), sig...)
			return "— " + name + " " + base64.StdEncoding.EncodeToString(line) + "\n"
		}
	}
	w1, cosign1 := witness("witness.test/one")
	w2, _ := witness("witness.test/two")
	cosigned := string(signed) + cosign1(text, 1_700_000_000)
	at, err := VerifyCosignature(cosigned, w1)
	if err != nil || !at.Equal(time.Unix(1_700_000_000, 0)) {
		t.Fatalf("cosigned: %v %v", at, err)
	}
	if _, err := VerifyCheckpoint(cosigned, vkey); err != nil {
		t.Errorf("the cosigned checkpoint no longer opens with the log's key: %v", err)
	}
	for name, c := range map[string]struct{ signed, key string }{
		"another witness":   {cosigned, w2},
		"no cosignature":    {string(signed), w1},
		"the text changed":  {strings.Replace(cosigned, "\n3\n", "\n4\n", 1), w1},
		"over another text": {string(signed) + cosign1("registry.test/log\n2\n", 1), w1},
	} {
		if _, err := VerifyCosignature(c.signed, c.key); !errors.Is(err, ErrUnverified) {
			t.Errorf("%s: %v", name, err)
		}
	}
	if _, err := VerifyCosignature(cosigned, strings.Replace(w1, "+", "+0", 1)); err == nil {
		t.Error("a malformed key was taken")
	}
}
