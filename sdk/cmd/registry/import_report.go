package main

import (
	"encoding/csv"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"

	registry "github.com/assetregistry/registry/sdk"
)

// The import's per-row errors and report, and the small helpers its steps
// share.

func optBool(s string) *bool {
	if s == "" {
		return nil
	}
	b, _ := strconv.ParseBool(s)
	return &b
}

// problemErrors names the row's columns in a registry problem's field
// errors (a person's first_name is the row's person_first_name).
func problemErrors(n int, prefix string, err error) []rowError {
	var p *registry.Problem
	if errors.As(err, &p) && len(p.Errors) > 0 {
		var out []rowError
		for _, fe := range p.Errors {
			field := fe.Field
			if prefix != "" && !strings.HasPrefix(field, prefix) {
				field = prefix + field
			}
			out = append(out, rowError{Row: n, Field: field, Problem: fe.Message})
		}
		return out
	}
	return []rowError{{Row: n, Field: strings.TrimSuffix(prefix, "_"), Problem: oneLine(err)}}
}

// onceMap finds or creates each shared part once: the first row to need it
// calls the registry, the others wait for its answer. A failure is not
// kept, so a later row tries again.
type onceMap[K comparable, V any] struct {
	mu sync.Mutex
	m  map[K]*onceEntry[V]
}

type onceEntry[V any] struct {
	done chan struct{}
	v    V
	err  error
}

func (o *onceMap[K, V]) do(k K, f func() (V, error)) (V, error) {
	o.mu.Lock()
	if o.m == nil {
		o.m = map[K]*onceEntry[V]{}
	}
	e, ok := o.m[k]
	if !ok {
		e = &onceEntry[V]{done: make(chan struct{})}
		o.m[k] = e
		o.mu.Unlock()
		e.v, e.err = f()
		if e.err != nil {
			o.mu.Lock()
			delete(o.m, k)
			o.mu.Unlock()
		}
		close(e.done)
		return e.v, e.err
	}
	o.mu.Unlock()
	<-e.done
	return e.v, e.err
}

// report is the per-row error report: every problem to the -errors file
// (CSV), the first twenty to stderr.
type report struct {
	stderr  interface{ Write([]byte) (int, error) }
	file    *os.File
	csv     *csv.Writer
	printed int
	mu      sync.Mutex
	path    string
}

func newReport(stderr interface{ Write([]byte) (int, error) }, path string) (*report, error) {
	r := &report{stderr: stderr, path: path}
	if path != "" {
		f, err := os.Create(path)
		if err != nil {
			return nil, usageError{"-errors: " + oneLine(err)}
		}
		r.file, r.csv = f, csv.NewWriter(f)
		_ = r.csv.Write([]string{"row", "field", "problem"})
	}
	return r, nil
}

func (r *report) add(errs ...rowError) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, e := range errs {
		if r.csv != nil {
			_ = r.csv.Write([]string{strconv.Itoa(e.Row), e.Field, e.Problem})
		}
		if r.printed < 20 {
			fmt.Fprintln(r.stderr, e.String())
		} else if r.printed == 20 {
			fmt.Fprintln(r.stderr, "... more problems", map[bool]string{true: "in " + r.path, false: "(give -errors FILE for all)"}[r.path != ""])
		}
		r.printed++
	}
}

func (r *report) finish(failed int) error {
	if r.csv != nil {
		r.csv.Flush()
		if err := r.csv.Error(); err != nil {
			return err
		}
		if err := r.file.Close(); err != nil {
			return err
		}
	}
	if failed > 0 {
		return errRowsFailed
	}
	return nil
}
