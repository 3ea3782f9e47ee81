package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"sync"
)

// journal records what an import has written, so that a run started again
// after a stop or a crash writes nothing twice and loses nothing. Rows are
// written in batches of fixed row ranges (rows 1 to size, size+1 to
// 2×size, ...); the journal holds the batch size, so a resumed run cuts
// the same ranges. Its lines, after a header naming the import file:
//
//	b FIRST N N=ACTION_ID ...   a batch of the range starting at row FIRST was
//	                            answered: rows N are finished, rows N=ACTION_ID
//	                            have their action and wait for their document
//	N                           row N is finished (its document recorded)
//
// A batch's line is one write(2) and counts only with its newline: a line
// cut short by a kill is ignored (and cut off), and the batch is sent again
// with the same rows, hence the same Idempotency-Key, which replays the
// answer the registry stored. Rows a batch's line does not name (those that
// failed) go into a later batch of the same range, with other rows and so
// another key.
type journal struct {
	mu       sync.Mutex
	f        *os.File
	size     int            // rows per batch range
	listed   bitset         // rows a batch line or a row line names
	finished bitset         // rows finished
	pending  map[int]string // rows waiting for their document: their action's id (read at open; taken by the run)
}

const (
	journalHeaderV1 = "registry-import-journal v1 "
	journalHeader   = "registry-import-journal v2 "
)

// openJournal reads the journal at path (or starts it), for the import
// file source; size is the batch size a new journal gets. An existing
// journal keeps its own.
func openJournal(path, source string, size int) (*journal, error) {
	j := &journal{size: size, pending: map[int]string{}}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, usageError{"the journal: " + oneLine(err)}
	}
	good, err := j.read(bufio.NewReaderSize(f, 64<<10), path, source)
	if err != nil {
		f.Close()
		return nil, err
	}
	// Cut a torn last line off, so the next append starts a line.
	if err := f.Truncate(good); err != nil {
		f.Close()
		return nil, usageError{"the journal: " + oneLine(err)}
	}
	if _, err := f.Seek(good, io.SeekStart); err != nil {
		f.Close()
		return nil, usageError{"the journal: " + oneLine(err)}
	}
	j.f = f
	if good == 0 {
		if _, err := f.WriteString(fmt.Sprintf("%sbatch=%d %s\n", journalHeader, size, source)); err != nil {
			f.Close()
			return nil, usageError{"the journal: " + oneLine(err)}
		}
	}
	return j, nil
}

// read loads the journal's lines and returns how many bytes of it are
// whole lines.
func (j *journal) read(r *bufio.Reader, path, source string) (int64, error) {
	var good int64
	for first := true; ; first = false {
		line, err := r.ReadString('\n')
		if errors.Is(err, io.EOF) {
			return good, nil // a last line without its newline is torn: ignored
		}
		if err != nil {
			return 0, usageError{"the journal: " + oneLine(err)}
		}
		good += int64(len(line))
		line = strings.TrimSuffix(line, "\n")
		if first {
			if err := j.header(line, path, source); err != nil {
				return 0, err
			}
			continue
		}
		j.apply(line)
	}
}

func (j *journal) header(line, path, source string) error {
	var got string
	switch {
	case strings.HasPrefix(line, journalHeader):
		rest := strings.TrimPrefix(line, journalHeader)
		sizeField, src, _ := strings.Cut(rest, " ")
		size, err := strconv.Atoi(strings.TrimPrefix(sizeField, "batch="))
		if err != nil || size < 1 || !strings.HasPrefix(sizeField, "batch=") {
			return usageError{fmt.Sprintf("%s is not an import journal; give another -journal", path)}
		}
		j.size, got = size, src
	case strings.HasPrefix(line, journalHeaderV1):
		// Row lines only, each a finished row; the ranges are this run's.
		got = strings.TrimPrefix(line, journalHeaderV1)
	default:
		return usageError{fmt.Sprintf("%s is not an import journal; give another -journal", path)}
	}
	if got != source {
		return usageError{fmt.Sprintf("the journal %s belongs to %s, not %s; give another -journal", path, got, source)}
	}
	return nil
}

func (j *journal) apply(line string) {
	if rest, ok := strings.CutPrefix(line, "b "); ok {
		fields := strings.Fields(rest)
		if len(fields) == 0 {
			return
		}
		for _, f := range fields[1:] {
			num, actionID, waiting := strings.Cut(f, "=")
			n, err := strconv.Atoi(num)
			if err != nil || n < 1 {
				continue
			}
			j.listed.set(n)
			if waiting && !j.finished.has(n) {
				j.pending[n] = actionID
			} else if !waiting {
				j.finished.set(n)
			}
		}
		return
	}
	if n, err := strconv.Atoi(line); err == nil && n > 0 {
		j.listed.set(n)
		j.finished.set(n)
		delete(j.pending, n)
	}
}

// rowState is what the journal knows of a row.
type rowState int

const (
	rowNew      rowState = iota // to be sent in a batch
	rowFinished                 // nothing left to do
	rowWaiting                  // its action is recorded; its document is not
)

// state says what is left of row n and, for a waiting row, its action.
func (j *journal) state(n int) (rowState, string) {
	j.mu.Lock()
	defer j.mu.Unlock()
	switch {
	case j.finished.has(n):
		return rowFinished, ""
	case j.listed.has(n):
		id := j.pending[n]
		delete(j.pending, n) // read once: the map shrinks as the run goes
		return rowWaiting, id
	}
	return rowNew, ""
}

// batchDone records a batch's answer in one write: finished rows, and
// rows whose document is still to come with their action's id.
func (j *journal) batchDone(first int, finished []int, waiting map[int]string) error {
	if len(finished) == 0 && len(waiting) == 0 {
		return nil
	}
	var b strings.Builder
	b.WriteString("b ")
	b.WriteString(strconv.Itoa(first))
	for _, n := range finished {
		b.WriteByte(' ')
		b.WriteString(strconv.Itoa(n))
	}
	for n, id := range waiting {
		b.WriteByte(' ')
		b.WriteString(strconv.Itoa(n))
		b.WriteByte('=')
		b.WriteString(id)
	}
	b.WriteByte('\n')
	j.mu.Lock()
	defer j.mu.Unlock()
	if failpoint == "torn" && first > 1 {
		_, _ = j.f.WriteString(b.String()[:b.Len()/2])
		die()
	}
	_, err := j.f.WriteString(b.String())
	return err
}

// rowDone records that row n is finished: one write(2), which survives
// the process being killed.
func (j *journal) rowDone(n int) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	_, err := j.f.WriteString(strconv.Itoa(n) + "\n")
	return err
}

func (j *journal) close() error {
	if err := j.f.Sync(); err != nil {
		j.f.Close()
		return err
	}
	return j.f.Close()
}

// bitset holds row numbers in a bit each: a million rows take 122 KiB,
// where a map[int]bool takes some 40 MiB.
type bitset []uint64

func (b *bitset) set(n int) {
	for n/64 >= len(*b) {
		*b = append(*b, 0)
	}
	(*b)[n/64] |= 1 << (n % 64)
}

func (b bitset) has(n int) bool { return n/64 < len(b) && b[n/64]&(1<<(n%64)) != 0 }
