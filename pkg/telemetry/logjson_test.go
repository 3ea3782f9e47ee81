package telemetry

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-kit/log"
	"github.com/go-kit/log/level"
)

type stringer struct{}

func (stringer) String() string { return "from String" }

// The fast JSON logger writes what go-kit's JSON logger writes, object for
// object (go-kit's keys come out sorted, ours in the order logged).
func TestJSONLoggerMatchesGoKit(t *testing.T) {
	var nilErr *json.SyntaxError
	lines := [][]any{
		{"msg", "request", "method", "GET", "status", 200, "duration_ms", 1.234, "bytes", int64(512), "ok", true},
		{"msg", "quotes \" and \\ and \n and <html> & ünïcödé \u2028", "nothing", nil},
		{"err", errors.New("boom"), "nil_err", nilErr, "s", stringer{}, "t", time.Date(2025, 3, 14, 1, 2, 3, 4, time.UTC)},
		{"small", 1e-9, "big", 1e22, "zero", 0.0, "neg", -3.5, "nan", math.NaN()},
		{"dup", "first", "other", 1, "dup", "last"},
		{"odd"},
		{level.Key(), level.InfoValue(), "m", map[string]int{"a": 1}, "list", []string{"x"}},
	}
	for _, kv := range lines {
		var ours, theirs bytes.Buffer
		_ = newJSONLogger(&ours).Log(kv...)
		_ = log.NewJSONLogger(&theirs).Log(kv...)
		if !strings.HasSuffix(ours.String(), "}\n") || strings.Count(ours.String(), "\n") != 1 {
			t.Fatalf("%v: not one line: %q", kv, ours.String())
		}
		var a, b map[string]any
		if err := json.Unmarshal(ours.Bytes(), &a); err != nil {
			t.Fatalf("%v: %q is not JSON: %v", kv, ours.String(), err)
		}
		if theirs.Len() == 0 { // go-kit refuses NaN outright
			continue
		}
		if err := json.Unmarshal(theirs.Bytes(), &b); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(a, b) {
			t.Errorf("%v:\n ours   %s theirs %s", kv, ours.String(), theirs.String())
		}
	}
}

func TestJSONLoggerKeepsOrder(t *testing.T) {
	var buf bytes.Buffer
	logger := NewLogger(&buf, "svc", LogConfig{Level: "info", Format: "json"})
	_ = level.Info(logger).Log("msg", "request", "b", 1, "a", 2)
	line := buf.String()
	for i, k := range []string{`"ts":`, `"service":"svc"`, `"level":"info"`, `"msg":"request"`, `"b":1`, `"a":2`} {
		if !strings.Contains(line, k) {
			t.Fatalf("%d: %s missing from %s", i, k, line)
		}
	}
	if strings.Index(line, `"b":1`) > strings.Index(line, `"a":2`) {
		t.Errorf("keys reordered: %s", line)
	}
}

func BenchmarkAccessLogLine(b *testing.B) {
	for _, c := range []struct {
		name   string
		logger func() log.Logger
	}{{"go-kit", func() log.Logger { return log.NewJSONLogger(discard{}) }}, {"ours", func() log.Logger { return newJSONLogger(discard{}) }}} {
		b.Run(c.name, func(b *testing.B) {
			logger := log.With(c.logger(), "ts", log.DefaultTimestampUTC, "service", "api-gateway")
			b.ReportAllocs()
			for b.Loop() {
				_ = level.Info(logger).Log("msg", "request", "method", "GET", "route", "/organizations/*", "path", "/organizations/0190c4b2-5d2e-7a1c-9f3e-2b1d4c5e6f70",
					"status", 200, "duration_ms", 1.234, "bytes", int64(812), "request_id", "6f1c2b3a4d5e6f708192a3b4c5d6e7f8", "sub", "integration-1")
			}
		})
	}
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }

// lockedBuffer is a bytes.Buffer the flush timer and the test share.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
	n   int // writes
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.n++
	return b.buf.Write(p)
}

func (b *lockedBuffer) read() (string, int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String(), b.n
}

// With log.flush-interval, lines are written together, within the
// interval of the first, and whatever waits is written by the flush at
// exit.
func TestFlushingLogger(t *testing.T) {
	var out lockedBuffer
	logger, flush := NewFlushingLogger(&out, "svc", LogConfig{Level: "info", FlushInterval: 50 * time.Millisecond})
	for i := range 100 {
		_ = logger.Log("msg", "request", "n", i)
	}
	if text, _ := out.read(); text != "" {
		t.Fatalf("lines were written at once: %q", text)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		text, writes := out.read()
		if strings.Count(text, "\n") == 100 {
			if writes != 1 {
				t.Errorf("100 lines in %d writes, want one", writes)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the lines were not written within the interval: %d of 100", strings.Count(text, "\n"))
		}
		time.Sleep(10 * time.Millisecond)
	}
	_ = logger.Log("msg", "last")
	flush()
	if text, _ := out.read(); !strings.Contains(text, `"msg":"last"`) {
		t.Errorf("the flush at exit did not write the last line: %q", text)
	}
}
