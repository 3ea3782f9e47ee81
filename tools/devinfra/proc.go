package devinfra

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// stopTimeout bounds a graceful shutdown before we fall back to SIGKILL.
const stopTimeout = 15 * time.Second

// server is a running child process whose output goes to a log file.
type server struct {
	name      string
	cmd       *exec.Cmd
	logPath   string
	logOffset int64 // where this run's output starts in an appended log

	done    chan struct{} // closed once the process has been reaped
	waitErr error

	stopOnce sync.Once
	stopErr  error
}

// startServer starts cmd with its stdout and stderr appended to logPath.
// The child gets its own process group, so a Ctrl-C aimed at our terminal
// reaches only us and we shut the server down in order, and SIGKILL on parent
// death, so it cannot outlive us.
func startServer(name string, cmd *exec.Cmd, logPath string) (*server, error) {
	logFile, err := os.OpenFile(logPath, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("open %s log: %w", name, err)
	}
	defer logFile.Close() // the child holds its own copy of the descriptor
	offset, err := logFile.Seek(0, io.SeekEnd)
	if err != nil {
		return nil, fmt.Errorf("seek %s log: %w", name, err)
	}
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Setpgid = true
	cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
	if err := startFromLockedThread(cmd); err != nil {
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	s := &server{name: name, cmd: cmd, logPath: logPath, logOffset: offset, done: make(chan struct{})}
	go func() {
		s.waitErr = cmd.Wait()
		close(s.done)
	}()
	return s, nil
}

var (
	spawnerOnce sync.Once
	spawnReqs   chan func()
)

// startFromLockedThread runs cmd.Start on an OS thread that never exits.
// Pdeathsig fires when the thread that forked the child exits, not when the
// process does (go.dev/issue/27505), and the Go runtime terminates a thread
// whenever a goroutine that called LockOSThread returns without unlocking. A
// thread locked here for the life of the process can never be that thread.
func startFromLockedThread(cmd *exec.Cmd) error {
	spawnerOnce.Do(func() {
		spawnReqs = make(chan func())
		go func() {
			runtime.LockOSThread() // never unlocked, see above
			for req := range spawnReqs {
				req()
			}
		}()
	})
	errc := make(chan error, 1)
	spawnReqs <- func() { errc <- cmd.Start() }
	return <-errc
}

// runFromLockedThread is cmd.Run for a cmd that sets Pdeathsig.
func runFromLockedThread(cmd *exec.Cmd) error {
	if err := startFromLockedThread(cmd); err != nil {
		return err
	}
	return cmd.Wait()
}

func (s *server) pid() int { return s.cmd.Process.Pid }

// exited reports whether the process has already exited.
func (s *server) exited() bool {
	select {
	case <-s.done:
		return true
	default:
		return false
	}
}

// stop sends sig and waits for the process to exit, escalating to SIGKILL of
// the whole process group after stopTimeout. It is safe to call repeatedly.
func (s *server) stop(sig syscall.Signal) error {
	s.stopOnce.Do(func() { s.stopErr = s.doStop(sig) })
	return s.stopErr
}

func (s *server) doStop(sig syscall.Signal) error {
	if s.exited() {
		return nil
	}
	if sig == syscall.SIGKILL {
		s.killGroup()
	} else if err := s.cmd.Process.Signal(sig); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("stop %s: %w", s.name, err)
	}
	select {
	case <-s.done:
		return nil
	case <-time.After(stopTimeout):
	}
	s.killGroup()
	select {
	case <-s.done:
		return fmt.Errorf("stop %s: no exit within %s after signal %v, killed", s.name, stopTimeout, sig)
	case <-time.After(5 * time.Second):
		return fmt.Errorf("stop %s: pid %d survived SIGKILL", s.name, s.pid())
	}
}

// signalGroup sends sig to the server and every process it forked: its
// process group, and its descendants, which may have left the group
// (PostgreSQL's backends each call setsid). The server itself comes first,
// so that after a SIGSTOP it forks no child the signal would miss.
func (s *server) signalGroup(sig syscall.Signal) error {
	if s.exited() {
		return fmt.Errorf("signal %s: it has exited", s.name)
	}
	if err := syscall.Kill(-s.pid(), sig); err != nil {
		return fmt.Errorf("signal %s: %w", s.name, err)
	}
	for _, pid := range descendants(s.pid()) {
		_ = syscall.Kill(pid, sig) // one may have exited meanwhile
	}
	return nil
}

// killGroup SIGKILLs the server and every process it forked, which would
// otherwise linger until they notice their parent is gone, and waits, a
// few seconds at most, until none of them runs any more: a killed
// PostgreSQL's backends stay attached to its shared memory until they
// exit, and a new server on the same data dir refuses to start until
// then. Zombies do not count: an orphan's parent in a container may never
// reap it, and it holds nothing.
func (s *server) killGroup() {
	forked := descendants(s.pid())
	_ = syscall.Kill(-s.pid(), syscall.SIGKILL)
	for _, pid := range forked {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
	deadline := time.Now().Add(5 * time.Second)
	for _, pid := range forked {
		for running(pid) && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
	}
}

// descendants lists the processes below pid (children, their children...).
func descendants(pid int) []int {
	children := map[int][]int{}
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	for _, f := range stats {
		b, err := os.ReadFile(f)
		if err != nil {
			continue // exited meanwhile
		}
		// "pid (comm) state ppid ...", where comm may contain ") ".
		st := string(b)
		fields := strings.Fields(st[strings.LastIndexByte(st, ')')+1:])
		if len(fields) < 2 {
			continue
		}
		child, err1 := strconv.Atoi(filepath.Base(filepath.Dir(f)))
		parent, err2 := strconv.Atoi(fields[1])
		if err1 == nil && err2 == nil {
			children[parent] = append(children[parent], child)
		}
	}
	var out []int
	for queue := children[pid]; len(queue) > 0; queue = queue[1:] {
		out = append(out, queue[0])
		queue = append(queue, children[queue[0]]...)
	}
	return out
}

// running reports whether pid exists and is no zombie.
func running(pid int) bool {
	_, ok := processState(pid)
	return ok
}

// logTail returns the last lines this run wrote to the log, for error messages.
func (s *server) logTail() string {
	return readLogTail(s.logPath, s.logOffset)
}

func readLogTail(path string, from int64) string {
	const maxBytes, maxLines = 4096, 20
	f, err := os.Open(path)
	if err != nil {
		return fmt.Sprintf("(log unavailable: %v)", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return fmt.Sprintf("(log unavailable: %v)", err)
	}
	from = max(from, fi.Size()-maxBytes)
	buf := make([]byte, max(fi.Size()-from, 0))
	n, _ := f.ReadAt(buf, from)
	lines := strings.Split(strings.TrimRight(string(bytes.ToValidUTF8(buf[:n], nil)), "\n"), "\n")
	if len(lines) > maxLines {
		lines = lines[len(lines)-maxLines:]
	}
	return strings.Join(lines, "\n")
}

// withLog decorates err with the tail of the server log, where the real
// reason for a failed start usually is.
func withLog(err error, log string) error {
	if strings.TrimSpace(log) == "" {
		return err
	}
	return fmt.Errorf("%w\n--- server log (tail) ---\n%s", err, log)
}
