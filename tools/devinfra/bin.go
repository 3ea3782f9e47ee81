package devinfra

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

const installHint = "run tools/scripts/ensure-deps.sh (or apt-get install postgresql redis-server redis-sentinel)"

// PostgresBinDir returns the directory holding initdb and postgres, preferring
// the newest of Debian's side-by-side installations.
func PostgresBinDir() (string, error) {
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	sort.Slice(dirs, func(i, j int) bool { return pgMajor(dirs[i]) > pgMajor(dirs[j]) })
	for _, d := range dirs {
		if hasServerBinaries(d) {
			return d, nil
		}
	}
	if out, err := exec.Command("pg_config", "--bindir").Output(); err == nil {
		// pg_config may come from a client-only package, so check for the server too.
		if d := strings.TrimSpace(string(out)); hasServerBinaries(d) {
			return d, nil
		}
	}
	if p, err := exec.LookPath("initdb"); err == nil && hasServerBinaries(filepath.Dir(p)) {
		return filepath.Dir(p), nil
	}
	return "", fmt.Errorf("PostgreSQL server binaries (initdb, postgres) not found: %s", installHint)
}

// pgMajor extracts the version from /usr/lib/postgresql/<version>/bin so that
// 15 sorts above 9.6.
func pgMajor(binDir string) float64 {
	v, err := strconv.ParseFloat(filepath.Base(filepath.Dir(binDir)), 64)
	if err != nil {
		return -1
	}
	return v
}

func hasServerBinaries(dir string) bool {
	return isExecutable(filepath.Join(dir, "initdb")) && isExecutable(filepath.Join(dir, "postgres"))
}

func isExecutable(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.Mode().IsRegular() && fi.Mode().Perm()&0o111 != 0
}

// RedisServerPath returns the path of the redis-server binary.
func RedisServerPath() (string, error) {
	p, err := exec.LookPath("redis-server")
	if err == nil {
		return p, nil
	}
	// A stripped PATH (env -i, some CI runners) should not hide a standard install.
	if isExecutable("/usr/bin/redis-server") {
		return "/usr/bin/redis-server", nil
	}
	if !errors.Is(err, exec.ErrNotFound) {
		return "", fmt.Errorf("look up redis-server: %w", err)
	}
	return "", fmt.Errorf("redis-server not found: %s", installHint)
}
