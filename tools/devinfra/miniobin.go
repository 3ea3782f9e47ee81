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
func MinioServerPath() (string, error) { return toolPath("minio", MinioVersion) }

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
	if err := buildToolOnce(ctx, bin, "the MinIO server "+MinioVersion, progress, buildMinio); err != nil {
		return "", fmt.Errorf("build MinIO server %s: %w", MinioVersion, err)
	}
	return bin, nil
}

// buildMinio installs the pinned module into scratch. It runs outside any
// module, so that neither a go.work nor a go.mod around the caller takes
// part: `go install module@version` builds exactly the versions MinIO's own
// go.mod selects.
func buildMinio(ctx context.Context, scratch string, log io.Writer) error {
	return runGo(ctx, scratch, log, "install", "-trimpath", "-ldflags=-s -w", minioModule+"@"+MinioVersion)
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
	return "", errors.New("the go command is not on PATH; it is needed once to build the servers kept in the tool cache")
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
