package devinfra

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"syscall"
)

// Process is any server run the way the datastores are: its own process
// group, output appended to a log file, and killed if we die.
type Process struct {
	Name    string
	LogFile string
	s       *server

	// What Restart needs to run the same command again.
	path, dir string
	args, env []string
	ready     func(context.Context) error
}

// StartProcess starts cmd and waits until ready succeeds. On failure the
// process is killed and the error carries the tail of its log.
func StartProcess(ctx context.Context, name string, cmd *exec.Cmd, logFile string, ready func(context.Context) error) (*Process, error) {
	s, err := startServer(name, cmd, logFile)
	if err != nil {
		return nil, err
	}
	if err := waitReady(ctx, s, ready); err != nil {
		_ = s.stop(syscall.SIGKILL)
		return nil, err
	}
	return &Process{Name: name, LogFile: logFile, s: s,
		path: cmd.Path, dir: cmd.Dir, args: cmd.Args, env: cmd.Env, ready: ready}, nil
}

// Stop sends SIGTERM (a graceful drain) and waits, escalating to SIGKILL.
func (p *Process) Stop() error { return p.s.stop(syscall.SIGTERM) }

// Kill ends the process with SIGKILL (a crash: no drain) and waits for it.
func (p *Process) Kill() error { return p.s.stop(syscall.SIGKILL) }

// Restart stops the process if it still runs (gracefully) and starts the
// same command again, waiting until it is ready.
func (p *Process) Restart(ctx context.Context) error {
	if err := p.Stop(); err != nil {
		return err
	}
	cmd := &exec.Cmd{Path: p.path, Args: p.args, Env: p.env, Dir: p.dir}
	s, err := startServer(p.Name, cmd, p.LogFile)
	if err != nil {
		return err
	}
	if err := waitReady(ctx, s, p.ready); err != nil {
		_ = s.stop(syscall.SIGKILL)
		return err
	}
	p.s = s
	return nil
}

// Command is a new, unstarted command like the one the process runs: the
// same binary, arguments, environment and directory.
func (p *Process) Command() *exec.Cmd {
	return &exec.Cmd{Path: p.path, Args: slices.Clone(p.args), Env: slices.Clone(p.env), Dir: p.dir}
}

// Pid returns the process id.
func (p *Process) Pid() int { return p.s.pid() }

// MkdirTemp is os.MkdirTemp for server data: the directory is traversable
// by other users (os.MkdirTemp makes it 0700), because when we are root
// PostgreSQL runs as the postgres user and must reach its data dir inside.
func MkdirTemp(pattern string) (string, error) {
	dir, err := os.MkdirTemp("", pattern)
	if err != nil {
		return "", err
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		os.Remove(dir)
		return "", err
	}
	return dir, nil
}

// KeepDirsEnv, set, keeps the temporary directories of bench runs and
// test suites (RemoveDir), to read their processes' logs afterwards.
const KeepDirsEnv = "REGISTRY_KEEP_DIRS"

// RemoveDir removes a run's temporary directory, or, with KeepDirsEnv
// set, leaves it and says where it is.
func RemoveDir(dir string) error {
	if os.Getenv(KeepDirsEnv) != "" {
		fmt.Fprintf(os.Stderr, "kept %s (its logs/ holds every process's log)\n", dir)
		return nil
	}
	return os.RemoveAll(dir)
}
