package httpx_test

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/assetregistry/registry/pkg/apperr"
	"github.com/assetregistry/registry/pkg/httpx"
)

// bodyServer reads each request's body whole and answers 200 with its
// size, or the body's problem; after the body it waits past every
// deadline, to show that a complete body lifts it. With X-Pause it stops
// reading after the first byte for as long, like a handler waiting for
// storage.
func bodyServer(t *testing.T, limits httpx.ReadLimits, workAfterBody time.Duration) string {
	t.Helper()
	h := httpx.Chain(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if pause, err := time.ParseDuration(r.Header.Get("X-Pause")); err == nil {
			if _, err := r.Body.Read(make([]byte, 1)); err == nil {
				time.Sleep(pause)
			}
		}
		body, err := io.ReadAll(r.Body)
		if err != nil {
			p := httpx.BodyProblem(err)
			if p == nil {
				p = apperr.Wrap(apperr.KindBadRequest, "unreadable", err)
			}
			httpx.WriteProblem(r.Context(), p, w)
			return
		}
		select {
		case <-time.After(workAfterBody):
		case <-r.Context().Done():
			httpx.WriteProblem(r.Context(), apperr.New(apperr.KindInternal, "the request's context ended after its body"), w)
			return
		}
		_, _ = fmt.Fprint(w, len(body))
	}), httpx.WithRequestInfo(false), httpx.BodyDeadlines(limits))
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv.Listener.Addr().String()
}

// send writes the request head, then the body in pieces with a pause
// before each, and reads the answer; for an error answer, closed reports
// whether the server closed the connection after it.
func send(t *testing.T, addr, head string, pieces []string, pause time.Duration) (status int, body string, closed bool) {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(20 * time.Second)) // a server that never answers fails the test instead of hanging it
	if _, err := io.WriteString(conn, head); err != nil {
		t.Fatal(err)
	}
	answered := make(chan struct{})
	go func() {
		for _, p := range pieces {
			select {
			case <-answered:
				return
			case <-time.After(pause):
			}
			if _, err := io.WriteString(conn, p); err != nil {
				return // the server cut the connection
			}
		}
	}()
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, nil)
	close(answered)
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode < 400 {
		return resp.StatusCode, string(raw), false // kept alive: nothing more will come
	}
	// Closed: the end of the stream, or a reset when the server closed
	// with some of the body unread; not the test's own deadline.
	_, err = br.ReadByte()
	var netErr net.Error
	return resp.StatusCode, string(raw), err != nil && !(errors.As(err, &netErr) && netErr.Timeout())
}

func TestBodyDeadlines(t *testing.T) {
	limits := httpx.ReadLimits{BodyTimeout: 300 * time.Millisecond, UploadMinRate: 1000, UploadRateWindow: time.Second}
	addr := bodyServer(t, limits, 2*limits.BodyTimeout)
	jsonHead := func(length int) string {
		return fmt.Sprintf("POST /x HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n", length)
	}
	const uploadHead = "POST /x HTTP/1.1\r\nHost: x\r\nContent-Type: multipart/form-data; boundary=b\r\nTransfer-Encoding: chunked\r\n\r\n"
	chunk := func(s string) string { return fmt.Sprintf("%x\r\n%s\r\n", len(s), s) }
	// An upload of ten pieces at 4,000 bytes/s: well over the minimum
	// pace, and longer in all than the fixed time.
	var paced []string
	for range 10 {
		paced = append(paced, chunk(strings.Repeat("u", 800)))
	}
	paced = append(paced, "0\r\n\r\n")
	tests := []struct {
		name   string
		head   string
		pieces []string
		pause  time.Duration
		status int
		closed bool
	}{
		{"a body in time", jsonHead(10), []string{"0123456789"}, 0, 200, false},
		{"a body that stalls", jsonHead(100), []string{"0123456789", "never sent"}, time.Hour, 408, true},
		{"a chunked body that stalls", strings.Replace(jsonHead(0), "Content-Length: 0", "Transfer-Encoding: chunked", 1),
			[]string{chunk("0123456789"), "never sent"}, time.Hour, 408, true},
		{"a body that trickles past the fixed time", jsonHead(12), strings.Split("0123456789ab", ""), 100 * time.Millisecond, 408, true},
		{"an upload that keeps its pace, however long", uploadHead, paced, 200 * time.Millisecond, 200, false},
		{"an upload that stalls", uploadHead, append(paced[:3:3], "never sent"), time.Hour, 408, true},
		{"the handler's own pause is not the client's", strings.Replace(jsonHead(10), "Host: x", "Host: x\r\nX-Pause: 600ms", 1),
			[]string{"0", "123456789"}, 100 * time.Millisecond, 200, false},
		{"an upload the handler pauses on", strings.Replace(uploadHead, "Host: x", "Host: x\r\nX-Pause: 1500ms", 1),
			[]string{chunk("a"), chunk("b"), "0\r\n\r\n"}, 100 * time.Millisecond, 200, false},
		{"an upload below the pace", uploadHead, []string{chunk("a"), chunk("b"), chunk("c"), chunk("d"), "0\r\n\r\n"}, 400 * time.Millisecond, 408, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			pieces := tt.pieces
			if tt.pause == time.Hour { // send all but the last at once, then stall
				pieces = pieces[:len(pieces)-1]
			}
			pause := tt.pause
			if pause == time.Hour {
				pause = 0
			}
			head := tt.head
			if pause == 0 && len(pieces) > 0 {
				head, pieces = head+strings.Join(pieces, ""), nil
			}
			status, body, closed := send(t, addr, head, pieces, pause)
			if status != tt.status {
				t.Fatalf("status = %d, want %d: %s", status, tt.status, body)
			}
			if closed != tt.closed {
				t.Errorf("connection closed = %v, want %v", closed, tt.closed)
			}
			if status == 408 {
				var p map[string]any
				if err := json.Unmarshal([]byte(body), &p); err != nil || p["type"] != httpx.ProblemTypePrefix+"request-timeout" {
					t.Errorf("408 body = %s", body)
				}
			}
		})
	}
}
