package devinfra

import (
	"bufio"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/xdg-go/scram"
)

// NewSecret returns a random password: 48 hex digits, so it needs no
// quoting in a URL, a config file or SQL.
func NewSecret() (string, error) {
	b := make([]byte, 24)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("generate secret: %w", err)
	}
	return hex.EncodeToString(b), nil
}

// readCredentials reads the name=value lines of a credentials file,
// tightening its mode to 0600 in case it was copied or restored with a
// looser one. A missing file is os.ErrNotExist.
func readCredentials(path string) (map[string]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	values := map[string]string{}
	lines := bufio.NewScanner(f)
	for lines.Scan() {
		line := strings.TrimSpace(lines.Text())
		if k, v, ok := strings.Cut(line, "="); ok && !strings.HasPrefix(line, "#") {
			values[strings.TrimSpace(k)] = strings.TrimSpace(v)
		}
	}
	if err := lines.Err(); err != nil {
		return nil, fmt.Errorf("read credentials file: %w", err)
	}
	if err := os.Chmod(path, 0o600); err != nil {
		return nil, fmt.Errorf("restrict credentials file: %w", err)
	}
	return values, nil
}

// writePrivateFile writes content to path with mode 0600, by way of a
// temporary file, so a reader never sees a half-written file and the secret
// is never readable by others, not even for a moment.
func writePrivateFile(path, content string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name()) // after a successful rename, a no-op
	if _, err := tmp.WriteString(content); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}

// WritePrivateFile is writePrivateFile for the launchers built on this
// package (tools/devstack): mode 0600 from the first byte, replaced
// atomically.
func WritePrivateFile(path, content string) error { return writePrivateFile(path, content) }

// scramIterations is PostgreSQL's own default (scram_iterations).
const scramIterations = 4096

// PostgresPasswordVerifier returns the SCRAM-SHA-256 verifier PostgreSQL
// stores for password, in the form `ALTER ROLE ... PASSWORD` accepts as
// already hashed. Sending the verifier instead of the password keeps the
// password itself out of the server's logs (a failed statement is logged
// with its text) and out of pg_stat_activity.
func PostgresPasswordVerifier(password string) (string, error) {
	salt := make([]byte, 16)
	if _, err := rand.Read(salt); err != nil {
		return "", fmt.Errorf("generate salt: %w", err)
	}
	client, err := scram.SHA256.NewClient("", password, "")
	if err != nil {
		return "", fmt.Errorf("scram: %w", err)
	}
	creds, err := client.GetStoredCredentialsWithError(scram.KeyFactors{Salt: string(salt), Iters: scramIterations})
	if err != nil {
		return "", fmt.Errorf("scram: %w", err)
	}
	b64 := base64.StdEncoding.EncodeToString
	return fmt.Sprintf("SCRAM-SHA-256$%d:%s$%s:%s", scramIterations, b64(salt), b64(creds.StoredKey), b64(creds.ServerKey)), nil
}

// redisPasswordHash is the form of a password in a Redis ACL rule
// ("#<sha256 hex>"), so the server's configuration never holds the
// password itself.
func redisPasswordHash(password string) string {
	sum := sha256.Sum256([]byte(password))
	return "#" + hex.EncodeToString(sum[:])
}

// privateDataDir is a server's data dir, made absolute and created (mode
// 0700) if missing; it is required.
func privateDataDir(dir string) (string, error) {
	if dir == "" {
		return "", errors.New("DataDir is required")
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", fmt.Errorf("resolve data dir: %w", err)
	}
	if err := os.MkdirAll(abs, 0o700); err != nil {
		return "", fmt.Errorf("create data dir: %w", err)
	}
	return abs, nil
}
