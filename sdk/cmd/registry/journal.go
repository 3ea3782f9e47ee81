package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strconv"
	"strings"
	"sync"
)

// journal records the rows an import has finished, one number per line,
// appended as each row completes. A line is written whole or not at all
// as far as a restart can tell: a last line without its newline (the
// process killed mid-write) is ignored, and that row is done again, which
// its Idempotency-Keys make harmless.
type journal struct {
	mu   sync.Mutex
	f    *os.File
	done map[int]bool
}

const journalHeader = "registry-import-journal v1 "

func openJournal(path, source string) (*journal, error) {
	j := &journal{done: map[int]bool{}}
	raw, err := os.ReadFile(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return nil, usageError{"the journal: " + oneLine(err)}
	default:
		lines := strings.Split(string(raw), "\n")
		if !strings.HasPrefix(lines[0], journalHeader) {
			return nil, usageError{fmt.Sprintf("%s is not an import journal; give another -journal", path)}
		}
		if got := strings.TrimPrefix(lines[0], journalHeader); got != source {
			return nil, usageError{fmt.Sprintf("the journal %s belongs to %s, not %s; give another -journal", path, got, source)}
		}
		for _, l := range lines[1 : len(lines)-1] { // the last is "" or a torn line
			if n, err := strconv.Atoi(l); err == nil {
				j.done[n] = true
			}
		}
		if last := lines[len(lines)-1]; last != "" {
			// A torn last line: cut it off so the next append starts a line.
			if err := os.Truncate(path, int64(len(raw)-len(last))); err != nil {
				return nil, usageError{"the journal: " + oneLine(err)}
			}
		}
	}
	j.f, err = os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, usageError{"the journal: " + oneLine(err)}
	}
	if len(raw) == 0 {
		if _, err := j.f.WriteString(journalHeader + source + "\n"); err != nil {
			return nil, err
		}
	}
	return j, nil
}

// record buffers nothing: each finished row is one write(2), which survives
// the process being killed.
func (j *journal) record(n int) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.done[n] = true
	_, err := j.f.WriteString(strconv.Itoa(n) + "\n")
	return err
}

func (j *journal) isDone(n int) bool {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.done[n]
}

func (j *journal) close() error {
	if err := j.f.Sync(); err != nil {
		j.f.Close()
		return err
	}
	return j.f.Close()
}
