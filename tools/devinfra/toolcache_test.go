package devinfra

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

// Concurrent callers build a tool once; the binary appears whole or not
// at all.
func TestBuildToolOnce(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "tool-v1", "tool")
	var builds atomic.Int32
	build := func(_ context.Context, scratch string, log io.Writer) error {
		builds.Add(1)
		fmt.Fprintln(log, "building")
		return os.WriteFile(filepath.Join(scratch, "tool"), []byte("#!/bin/sh\n"), 0o755)
	}
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for range 4 {
		wg.Go(func() { errs <- buildToolOnce(t.Context(), bin, "a tool", nil, build) })
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if n := builds.Load(); n != 1 || !isExecutable(bin) {
		t.Fatalf("%d builds, executable: %v; want one build and the binary", n, isExecutable(bin))
	}
	scratch, _ := filepath.Glob(filepath.Join(filepath.Dir(bin), "build-*"))
	if len(scratch) != 0 {
		t.Errorf("scratch dirs left: %v", scratch)
	}
}

// A failed build leaves no binary, and its error carries the build log.
func TestBuildToolOnceFailure(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "tool-v1", "tool")
	err := buildToolOnce(t.Context(), bin, "a tool", nil, func(_ context.Context, scratch string, log io.Writer) error {
		fmt.Fprintln(log, "compile error: the reason")
		// half a binary, as a killed build would leave it
		_ = os.WriteFile(filepath.Join(scratch, "tool"), []byte("#!"), 0o755)
		return errors.New("exit status 1")
	})
	if err == nil || !strings.Contains(err.Error(), "compile error: the reason") {
		t.Fatalf("err = %v, want the log's reason", err)
	}
	if _, statErr := os.Stat(bin); !errors.Is(statErr, os.ErrNotExist) {
		t.Errorf("a failed build left %s", bin)
	}
}
