package devinfra

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// MinioVersion pins the MinIO server that StartMinio runs, as a version of
// the Go module github.com/minio/minio, which EnsureMinioServer builds from
// source with `go install`.
//
// MinIO's community edition ships no binaries or images since October 2025
// (source only) and its repository was archived in February 2026. Its
// release tags (the last is RELEASE.2025-10-15T17-29-55Z, commit 9e49d5e7)
// are not semantic versions, so the module proxy serves only pseudo-versions,
// and the one it serves is the final commit: that release plus three server
// fixes (PostPolicy uploads enforce policy tags, conditional puts read with
// quorum, one response per request) and documentation. The module has no
// replace directives, so a plain `go install module@version` builds it.
// A new pin must be a version the module proxy serves (go list -m -json
// github.com/minio/minio@<version>); a changed pin builds into a new cache
// directory and leaves the old one to be deleted by hand.
const MinioVersion = "v0.0.0-20260212201848-7aac2a2c5b7c"

const minioModule = "github.com/minio/minio"

// MinioServerPath returns where EnsureMinioServer keeps the pinned MinIO
// server: outside the work tree, in the user's cache
// (${XDG_CACHE_HOME:-$HOME/.cache}/asset-registry/tools/minio-<version>/minio),
// so that every checkout and worktree shares one build.
func MinioServerPath() (string, error) {
	cache, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("locate the MinIO server cache (set XDG_CACHE_HOME or HOME): %w", err)
	}
	return filepath.Join(cache, "asset-registry", "tools", "minio-"+MinioVersion, "minio"), nil
}

// EnsureMinioServer returns the path of the pinned MinIO server, building it
// first if it is not cached yet. The build takes minutes, happens once per
// version and machine, and reports its start and end on progress (which may
// be nil). Concurrent callers, in this process or others, wait for one build
// instead of each starting their own; a cached binary is never rebuilt.
func EnsureMinioServer(ctx context.Context, progress io.Writer) (string, error) {
	bin, err := MinioServerPath()
	if err != nil {
		return "", err
	}
	if isExecutable(bin) {
		return bin, nil
	}
	if progress == nil {
		progress = io.Discard
	}
	if err := buildMinioOnce(ctx, bin, progress); err != nil {
		return "", fmt.Errorf("build MinIO server %s: %w", MinioVersion, err)
	}
	return bin, nil
}

// buildMinioOnce builds bin under an exclusive lock on a file beside it. The
// binary is built to a scratch directory and renamed into place, so bin is
// either absent or complete, even when a build is killed halfway.
func buildMinioOnce(ctx context.Context, bin string, progress io.Writer) error {
	dir := filepath.Dir(bin)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("create cache dir: %w", err)
	}
	unlock, err := lockFile(ctx, filepath.Join(dir, "build.lock"), func() {
		fmt.Fprintf(progress, "devinfra: waiting for another process to finish building the MinIO server into %s\n", dir)
	})
	if err != nil {
		return err
	}
	defer unlock()
	if isExecutable(bin) {
		return nil // the process we waited for built it
	}
	// Scratch dirs of builds whose process was killed; only the lock holder
	// builds, so none of them is in use.
	stale, _ := filepath.Glob(filepath.Join(dir, "build-*"))
	for _, d := range stale {
		_ = os.RemoveAll(d)
	}
	scratch, err := os.MkdirTemp(dir, "build-")
	if err != nil {
		return fmt.Errorf("create build dir: %w", err)
	}
	defer os.RemoveAll(scratch)

	goCmd, err := goTool()
	if err != nil {
		return err
	}
	logPath := filepath.Join(dir, "build.log")
	log, err := os.Create(logPath)
	if err != nil {
		return fmt.Errorf("create build log: %w", err)
	}
	defer log.Close()

	fmt.Fprintf(progress, "devinfra: building the MinIO server %s from source into %s (once per version; takes a few minutes)\n", MinioVersion, dir)
	started := time.Now()
	cmd := exec.CommandContext(ctx, goCmd, "install", "-trimpath", "-ldflags=-s -w", minioModule+"@"+MinioVersion)
	// Outside any module, so that neither a go.work nor a go.mod around the
	// caller takes part: `go install module@version` builds exactly the
	// versions MinIO's own go.mod selects.
	cmd.Dir = scratch
	cmd.Env = minioBuildEnv(os.Environ(), scratch)
	cmd.Stdout, cmd.Stderr = log, log
	// A killed caller must not leave a build running that nobody waits for.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := runFromLockedThread(cmd); err != nil {
		return withLog(fmt.Errorf("go install (log in %s): %w", logPath, err), readLogTail(logPath, 0))
	}
	if err := os.Rename(filepath.Join(scratch, "minio"), bin); err != nil {
		return fmt.Errorf("move the built binary into place: %w", err)
	}
	fmt.Fprintf(progress, "devinfra: built the MinIO server in %s\n", time.Since(started).Round(time.Second))
	return nil
}

// minioBuildEnv is the caller's environment with what would change the
// build taken out or pinned: a static binary for this machine, installed into
// gobin, with no workspace and none of the caller's build flags.
func minioBuildEnv(environ []string, gobin string) []string {
	env := make([]string, 0, len(environ)+6)
	for _, kv := range environ {
		name, _, _ := strings.Cut(kv, "=")
		switch name {
		case "GOBIN", "GOOS", "GOARCH", "GOFLAGS", "GOWORK", "CGO_ENABLED", "GOEXPERIMENT":
			continue
		}
		env = append(env, kv)
	}
	return append(env,
		"GOBIN="+gobin,
		"GOWORK=off",
		// GOFLAGS such as -mod=vendor or -tags from the caller's shell would
		// break or change the build; -mod=mod is what `go install @version`
		// does anyway.
		"GOFLAGS=-mod=mod",
		"CGO_ENABLED=0", // as MinIO's own release builds: no C toolchain needed
	)
}

// goTool finds the go command: on PATH, or in the GOROOT that the go
// command exports to what it runs (tests, go run).
func goTool() (string, error) {
	if p, err := exec.LookPath("go"); err == nil {
		return p, nil
	}
	if root := os.Getenv("GOROOT"); root != "" && isExecutable(filepath.Join(root, "bin", "go")) {
		return filepath.Join(root, "bin", "go"), nil
	}
	return "", errors.New("the go command is not on PATH; it is needed once to build the MinIO server")
}

// lockFile takes an exclusive flock on path, polling so that ctx can end the
// wait; waiting is called once if the lock is held elsewhere. The kernel
// drops the lock when the process dies, so a killed holder never blocks
// later callers.
func lockFile(ctx context.Context, path string, waiting func()) (unlock func(), err error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("open lock file: %w", err)
	}
	told := false
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			return func() { f.Close() }, nil // closing releases the lock
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) && !errors.Is(err, syscall.EINTR) {
			f.Close()
			return nil, fmt.Errorf("lock %s: %w", path, err)
		}
		if !told {
			waiting()
			told = true
		}
		select {
		case <-ctx.Done():
			f.Close()
			return nil, fmt.Errorf("waiting for lock %s: %w", path, ctx.Err())
		case <-time.After(250 * time.Millisecond):
		}
	}
}
