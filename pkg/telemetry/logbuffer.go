package telemetry

import (
	"bufio"
	"io"
	"sync"
	"time"
)

// bufferedLog gathers log lines and writes them out together, at most
// interval after the first line of a batch waits (or as soon as a batch
// fills its buffer), instead of one write system call per line. Under
// load the access log is one line per request; on the gateway its write
// was a tenth of the process's CPU. What a batch costs: a line reaches
// the output up to interval late, and a process killed outright (SIGKILL,
// out of memory) loses the lines of the batch it had not written yet.
// Flush writes what waits, at exit.
type bufferedLog struct {
	interval time.Duration

	mu      sync.Mutex
	w       *bufio.Writer
	pending bool // a flush is scheduled
	timer   *time.Timer
}

// logBatch is the most a batch holds before it is written at once.
const logBatch = 64 << 10

func newBufferedLog(w io.Writer, interval time.Duration) *bufferedLog {
	b := &bufferedLog{interval: interval, w: bufio.NewWriterSize(w, logBatch)}
	b.timer = time.AfterFunc(time.Hour, b.Flush)
	b.timer.Stop()
	return b
}

func (b *bufferedLog) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	n, err := b.w.Write(p) // bufio writes a batch out by itself when p does not fit
	if !b.pending && b.w.Buffered() > 0 {
		b.pending = true
		b.timer.Reset(b.interval)
	}
	return n, err
}

// Flush writes the lines that wait.
func (b *bufferedLog) Flush() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.pending = false
	_ = b.w.Flush()
}
