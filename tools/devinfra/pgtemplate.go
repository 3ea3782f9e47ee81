package devinfra

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
)

// An ephemeral cluster (a test's) starts as a copy of a template that
// initdb made once per machine, PostgreSQL build and initdb arguments:
// initdb costs over a second of CPU, a copy of its 40 MB a tenth of that,
// and make test starts some twenty clusters.

// templateDir is where the template for these initdb arguments lives:
// beside the clusters, under the temporary directory (the server user
// must reach it, which it cannot under a home directory), named after
// the user, the initdb binary and the arguments, so another user (who
// could not take this one's lock), a PostgreSQL upgrade or other
// arguments get a template of their own.
func templateDir(binDir string, args []string) (string, error) {
	initdb := filepath.Join(binDir, "initdb")
	st, err := os.Stat(initdb)
	if err != nil {
		return "", fmt.Errorf("postgres template: %w", err)
	}
	h := sha256.New()
	fmt.Fprintf(h, "%d\x00%s\x00%d\x00%d\x00%s", os.Geteuid(), initdb, st.Size(), st.ModTime().UnixNano(), strings.Join(args, "\x00"))
	return filepath.Join(os.TempDir(), "asset-registry-postgres-template-"+hex.EncodeToString(h.Sum(nil))[:16]), nil
}

// fromTemplate fills scratch (an empty directory the server user owns)
// with a copy of the template cluster for args, making the template with
// initdb first if it is missing. initdb(dir) runs initdb into dir.
func fromTemplate(ctx context.Context, binDir, scratch string, args []string, cred *syscall.Credential,
	initdb func(dir string) error) error {
	dir, err := templateDir(binDir, args)
	if err != nil {
		return err
	}
	data := filepath.Join(dir, "data")
	if !ownTemplate(dir, data) {
		unlock, err := lockFile(ctx, dir+".lock", func() {})
		if err != nil {
			return err
		}
		defer unlock()
		if !ownTemplate(dir, data) {
			if err := makeTemplate(dir, cred, initdb); err != nil {
				return err
			}
		}
	}
	// -a keeps the server user's ownership and the 0700 modes initdb set.
	if out, err := exec.CommandContext(ctx, "cp", "-a", data+"/.", scratch).CombinedOutput(); err != nil {
		return fmt.Errorf("copy postgres template: %w\n%s", err, out)
	}
	return nil
}

// ownTemplate reports whether dir holds a complete template made by this
// user: the temporary directory is shared, and a cluster planted there by
// someone else must not become ours.
func ownTemplate(dir, data string) bool {
	st, err := os.Stat(dir)
	if err != nil {
		return false
	}
	sys, ok := st.Sys().(*syscall.Stat_t)
	if !ok || int(sys.Uid) != os.Geteuid() || st.Mode().Perm()&0o022 != 0 {
		return false
	}
	_, err = os.Stat(filepath.Join(data, "PG_VERSION"))
	return err == nil
}

// makeTemplate runs initdb into a fresh directory renamed to dir once
// complete, so a killed initdb leaves no template that looks whole.
func makeTemplate(dir string, cred *syscall.Credential, initdb func(dir string) error) error {
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("remove old postgres template: %w", err)
	}
	tmp, err := os.MkdirTemp(filepath.Dir(dir), filepath.Base(dir)+".making-")
	if err != nil {
		return fmt.Errorf("postgres template: %w", err)
	}
	defer os.RemoveAll(tmp)
	if err := os.Chmod(tmp, 0o755); err != nil { // the server user runs initdb inside
		return fmt.Errorf("postgres template: %w", err)
	}
	data := filepath.Join(tmp, "data")
	if err := os.Mkdir(data, 0o700); err != nil {
		return fmt.Errorf("postgres template: %w", err)
	}
	if cred != nil {
		if err := os.Chown(data, int(cred.Uid), int(cred.Gid)); err != nil {
			return fmt.Errorf("chown postgres template to postgres: %w", err)
		}
	}
	if err := initdb(data); err != nil {
		return err
	}
	if err := os.Rename(tmp, dir); err != nil {
		return fmt.Errorf("move postgres template into place: %w", err)
	}
	return nil
}
