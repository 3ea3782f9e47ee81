package devinfra

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// defaultStartTimeout applies when the caller's context has no deadline;
// a cold start takes a second or two, so this only catches real hangs.
const defaultStartTimeout = time.Minute

// FreePort returns a TCP port on 127.0.0.1 that was free a moment ago and
// that no FreePort on this machine hands out again while this process
// lives.
//
// It picks at random below the kernel's ephemeral range: a port the kernel
// hands out for ":0" is also the kind it hands to every outgoing
// connection, so under make test's parallel load another process's client
// socket often took it before our server bound it. Below that range only
// another FreePort can take it: one in this process never repeats a port
// (handOut), and one in another process (make test runs two test packages
// at once, each starting stacks) skips the ports this one holds a lock on
// (reserveAcrossProcesses). A stack picks its registry processes' ports
// before it starts any and names them in the others' settings (the
// identity provider's URL in every service's), so such a port cannot
// simply be picked again when another process's server took it meanwhile.
func FreePort() (int, error) {
	lo, hi := freePortRange()
	for range 64 {
		port := lo + rand.IntN(hi-lo)
		if !handOut(port) {
			continue // given to another server of this process, maybe not bound yet
		}
		if !reserveAcrossProcesses(port) {
			continue // another process's FreePort holds it, maybe not bound yet
		}
		if PortFree(port) == nil {
			return port, nil
		}
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("find free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// PortFree says whether a server can listen on port on loopback now (nil)
// or why not.
func PortFree(port int) error {
	l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	if err != nil {
		return err
	}
	return l.Close()
}

// handedOut are the ports FreePort has returned in this process: a stack
// picks all its services' ports before it starts any, and a port that is
// free until its server binds it must not be handed out twice (sixteen
// picks among 12,000 collide about once in a hundred stacks).
var handedOut = struct {
	sync.Mutex
	ports map[int]bool
}{ports: map[int]bool{}}

// handOut reserves port unless FreePort returned it before.
func handOut(port int) bool {
	handedOut.Lock()
	defer handedOut.Unlock()
	if handedOut.ports[port] {
		return false
	}
	handedOut.ports[port] = true
	return true
}

// portLocks is the file on whose bytes FreePort takes its cross-process
// reservations: byte n stands for port n. A POSIX record lock (fcntl)
// belongs to the process and ends with it however it ends, so a crashed
// test never leaves a port reserved; it also ends when the process closes
// any descriptor of the file, so the file is opened once and never closed.
var portLocks struct {
	once sync.Once
	file *os.File // nil when the file cannot be opened: no cross-process reservation
}

// portLockFile is shared by every process on the machine that uses the
// same temporary directory (go test keeps TMPDIR).
func portLockFile() string { return filepath.Join(os.TempDir(), "asset-registry-free-ports.lock") }

// reserveAcrossProcesses locks port's byte of the lock file for the life of
// this process, and reports false when another process holds it. Without
// the file (an unwritable temporary directory) it reserves nothing and
// says yes, as FreePort did before there were reservations.
func reserveAcrossProcesses(port int) bool {
	portLocks.once.Do(func() {
		// Never through a symbolic link, which another user of the
		// directory could have put there to have us open a file of ours.
		f, err := os.OpenFile(portLockFile(), os.O_RDWR|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW, 0o666)
		if err == nil {
			_ = f.Chmod(0o666) // the umask's cut would shut other users out of the reservations
		} else if f, err = os.OpenFile(portLockFile(), os.O_RDWR|syscall.O_NOFOLLOW, 0); err != nil {
			return
		}
		portLocks.file = f
	})
	if portLocks.file == nil {
		return true
	}
	lock := syscall.Flock_t{Type: syscall.F_WRLCK, Whence: io.SeekStart, Start: int64(port), Len: 1}
	return syscall.FcntlFlock(portLocks.file.Fd(), syscall.F_SETLK, &lock) == nil
}

// freePortRange is where FreePort picks: the 12,000 ports below the
// ephemeral range (Linux's ip_local_port_range; 32768 when unknown),
// never below 10000.
func freePortRange() (lo, hi int) {
	hi = 32768
	if b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range"); err == nil {
		if f := strings.Fields(string(b)); len(f) == 2 {
			if n, err := strconv.Atoi(f[0]); err == nil && n > 11000 {
				hi = n
			}
		}
	}
	return max(hi-12000, 10000), hi
}

// errPortInUse marks a start that lost the race for a port picked by FreePort.
var errPortInUse = errors.New("port already in use")

// launchOnPort calls launch with port, or, when port is 0, with ports from
// FreePort: another process can take such a port before the server binds it,
// and since we chose it, choosing again is harmless.
func launchOnPort[T any](port int, launch func(port int) (T, error)) (T, error) {
	if port != 0 {
		return launch(port)
	}
	for attempt := 1; ; attempt++ {
		p, err := FreePort()
		if err != nil {
			var zero T
			return zero, err
		}
		v, err := launch(p)
		if err == nil || attempt == 3 || !errors.Is(err, errPortInUse) {
			return v, err
		}
	}
}

// waitReady polls probe until it succeeds. If the server exits first, or ctx
// ends, it kills the server and returns an error carrying the log tail.
func waitReady(ctx context.Context, s *server, probe func(context.Context) error) error {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, defaultStartTimeout)
		defer cancel()
	}
	started := time.Now()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		probeCtx, cancel := context.WithTimeout(ctx, time.Second)
		err := probe(probeCtx)
		cancel()
		if err == nil {
			return nil
		}
		var stop permanentError
		if errors.As(err, &stop) {
			_ = s.stop(syscall.SIGKILL)
			return withLog(fmt.Errorf("%s: %w", s.name, stop.err), s.logTail())
		}
		select {
		case <-s.done:
			log := s.logTail()
			exitErr := fmt.Errorf("%s exited during startup: %v", s.name, s.waitErr)
			if saysPortInUse(log) {
				exitErr = fmt.Errorf("%w: %w", exitErr, errPortInUse)
			}
			return withLog(exitErr, log)
		case <-ctx.Done():
			_ = s.stop(syscall.SIGKILL)
			return withLog(fmt.Errorf("%s not ready after %s (last probe error: %v): %w",
				s.name, time.Since(started).Round(time.Millisecond), err, ctx.Err()), s.logTail())
		case <-tick.C:
		}
	}
}

// permanentError is a probe failure that waiting will not cure (a wrong
// password, say), so waitReady gives up at once instead of at its deadline.
type permanentError struct{ err error }

func (e permanentError) Error() string { return e.err.Error() }
func (e permanentError) Unwrap() error { return e.err }

func stopWaiting(err error) error { return permanentError{err} }

// saysPortInUse recognises a server log that reports a taken port:
// PostgreSQL and Redis print "Address already in use", MinIO "Specified port
// is already in use".
func saysPortInUse(log string) bool {
	log = strings.ToLower(log)
	return strings.Contains(log, "address already in use") || strings.Contains(log, "port is already in use")
}
