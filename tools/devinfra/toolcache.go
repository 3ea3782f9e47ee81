package devinfra

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"
)

// The servers built from source into the user's cache (MinIO, Hydra): one
// build per version and machine, under a lock, renamed into place when
// complete.

// toolPath returns where a cached tool build lives:
// ${XDG_CACHE_HOME:-$HOME/.cache}/asset-registry/tools/<name>-<version>/<name>,
// outside the work tree, so every checkout and worktree shares one build.
func toolPath(name, version string) (string, error) {
	cache, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("locate the tool cache for %s (set XDG_CACHE_HOME or HOME): %w", name, err)
	}
	return filepath.Join(cache, "asset-registry", "tools", name+"-"+version, name), nil
}

// toolBuild builds a tool into scratch/<name>, writing the output of what it
// runs to log.
type toolBuild func(ctx context.Context, scratch string, log io.Writer) error

// buildToolOnce makes bin exist, running build under an exclusive lock on a
// file beside it unless bin is there already. build works in a fresh
// scratch directory and leaves the binary at scratch/<base name of bin>,
// which is renamed into place, so bin is either absent or complete, even
// when a build is killed halfway; concurrent callers, in this process or
// others, wait for one build instead of starting their own.
func buildToolOnce(ctx context.Context, bin, what string, progress io.Writer, build toolBuild) error {
	if isExecutable(bin) {
		return nil
	}
	if progress == nil {
		progress = io.Discard
	}
	dir := filepath.Dir(bin)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("create cache dir: %w", err)
	}
	unlock, err := lockFile(ctx, filepath.Join(dir, "build.lock"), func() {
		fmt.Fprintf(progress, "devinfra: waiting for another process to finish building %s into %s\n", what, dir)
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
	logPath := filepath.Join(dir, "build.log")
	log, err := os.Create(logPath)
	if err != nil {
		return fmt.Errorf("create build log: %w", err)
	}
	defer log.Close()

	fmt.Fprintf(progress, "devinfra: building %s from source into %s (once per version)\n", what, dir)
	started := time.Now()
	if err := build(ctx, scratch, log); err != nil {
		return withLog(fmt.Errorf("build %s (log in %s): %w", what, logPath, err), readLogTail(logPath, 0))
	}
	if err := os.Rename(filepath.Join(scratch, filepath.Base(bin)), bin); err != nil {
		return fmt.Errorf("move the built binary into place: %w", err)
	}
	fmt.Fprintf(progress, "devinfra: built %s in %s\n", what, time.Since(started).Round(time.Second))
	return nil
}

// runGo runs the go command in dir with the build environment of
// minioBuildEnv (no workspace, none of the caller's GOFLAGS, no cgo), its
// output to log, at the lowest CPU priority (nice 19) when ctx says so
// (LowPriority). A killed caller takes the build with it.
func runGo(ctx context.Context, dir string, log io.Writer, args ...string) error {
	goCmd, err := goTool()
	if err != nil {
		return err
	}
	name, cmdArgs := goCmd, args
	if nice, err := exec.LookPath("nice"); err == nil && ctx.Value(lowPriorityKey{}) != nil {
		name, cmdArgs = nice, append([]string{"-n", "19", goCmd}, args...)
	}
	cmd := exec.CommandContext(ctx, name, cmdArgs...)
	cmd.Dir = dir
	cmd.Env = minioBuildEnv(os.Environ(), dir)
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := runFromLockedThread(cmd); err != nil {
		return fmt.Errorf("go %s: %w", args[0], err)
	}
	return nil
}

type lowPriorityKey struct{}

// LowPriority returns ctx for a build nothing waits for at first, which
// then runs at nice 19: MinIO in a first make run, which joins when it is
// built. On a cold machine it takes what the registry's own compile and the
// NATS build leave of the cores rather than half of them (the first call
// of a first make run came after 193 s at normal priority, 142 s at nice
// 19). Where the build is on the way (make test waits for MinIO before its
// tests), it keeps its normal priority.
func LowPriority(ctx context.Context) context.Context {
	return context.WithValue(ctx, lowPriorityKey{}, true)
}
