package devinfra

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"time"
)

// Chromium is the browser the tests of the /verify page drive (headless,
// over the DevTools protocol). It comes from Debian's package, installed
// system-wide like PostgreSQL's: nothing of it is kept in the work tree.

// chromiumPaths are where Debian's package (and others) put the browser.
var chromiumPaths = []string{"/usr/bin/chromium", "/usr/bin/chromium-browser", "/usr/bin/google-chrome"}

// ChromiumPath is the installed browser's path, or "" when there is none.
func ChromiumPath() string {
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	for _, p := range chromiumPaths {
		if isExecutable(p) {
			return p
		}
	}
	return ""
}

// EnsureChromium answers the browser's path, installing Debian's chromium
// package first when it is missing (as root, or through sudo), and how
// long the install took (0 when there was nothing to do). Concurrent
// callers, in this process or others, wait for one install under a lock
// in the system's temporary directory.
func EnsureChromium(ctx context.Context, progress io.Writer) (string, time.Duration, error) {
	if p := ChromiumPath(); p != "" {
		return p, 0, nil
	}
	if progress == nil {
		progress = io.Discard
	}
	unlock, err := lockFile(ctx, filepath.Join(os.TempDir(), "asset-registry-chromium.lock"), func() {
		fmt.Fprintln(progress, "devinfra: waiting for another process to finish installing chromium")
	})
	if err != nil {
		return "", 0, err
	}
	defer unlock()
	if p := ChromiumPath(); p != "" {
		return p, 0, nil // the process we waited for installed it
	}
	var sudo []string
	if os.Geteuid() != 0 {
		if _, err := exec.LookPath("sudo"); err != nil {
			return "", 0, fmt.Errorf("chromium is not installed and this is not root: apt-get install -y --no-install-recommends chromium")
		}
		sudo = []string{"sudo", "-n"}
	}
	started := time.Now()
	fmt.Fprintln(progress, "devinfra: installing chromium (apt-get)")
	for _, args := range [][]string{
		{"apt-get", "update", "-q"},
		{"apt-get", "install", "-y", "-q", "--no-install-recommends", "chromium"},
	} {
		args = append(sudo, args...)
		cmd := exec.CommandContext(ctx, args[0], args[1:]...)
		cmd.Env = append(os.Environ(), "DEBIAN_FRONTEND=noninteractive")
		cmd.Stdout, cmd.Stderr = progress, progress
		if err := cmd.Run(); err != nil {
			return "", 0, fmt.Errorf("install chromium: %v: %w", args, err)
		}
	}
	took := time.Since(started)
	p := ChromiumPath()
	if p == "" {
		return "", took, fmt.Errorf("chromium still not found after apt-get install chromium")
	}
	fmt.Fprintf(progress, "devinfra: installed chromium in %s\n", took.Round(100*time.Millisecond))
	return p, took, nil
}
