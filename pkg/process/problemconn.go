package process

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"

	"github.com/go-kit/log"
	"github.com/go-kit/log/level"

	"github.com/assetregistry/registry/pkg/apperr"
	"github.com/assetregistry/registry/pkg/httpx"
	"github.com/assetregistry/registry/pkg/model"
)

// ProblemListener makes the answers net/http writes on its own, for a
// request no handler ever sees, problem+json like every other error:
// a malformed request line or header field, a missing or malformed Host
// (400), and a header over Server.MaxHeaderBytes (431). net/http writes
// these as plain text straight to the connection, with no hook to change
// them; ProblemListener's connections recognise that exact answer (a
// status line followed directly by net/http's fixed
// "Content-Type: text/plain; charset=utf-8" and "Connection: close"
// fields, which no handler's answer has: handlers' fields are written
// sorted, Connection first, and with a Date) and write a problem in its
// place. The path of such a request is unknown, so instance is "/"; the
// request id is fresh and logged with the answer.
//
// What stays plain text: net/http's 501 for a Transfer-Encoding it does
// not implement and its 505 for an HTTP version it does not speak, which
// have no problem type, and the 417 for an Expect other than
// 100-continue, which has no body at all.
func ProblemListener(l net.Listener, logger log.Logger) net.Listener {
	return &problemListener{Listener: l, logger: logger}
}

type problemListener struct {
	net.Listener
	logger log.Logger
}

func (l *problemListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &problemConn{Conn: c, logger: l.logger}, nil
}

type problemConn struct {
	net.Conn
	logger log.Logger
}

// netHTTPErrorFields follow the status line of every answer net/http
// writes by itself (server.go, conn.serve).
const netHTTPErrorFields = "\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\n\r\n"

func (c *problemConn) Write(p []byte) (int, error) {
	status, detail, ok := plainAnswer(p)
	if !ok {
		return c.Conn.Write(p)
	}
	id := httpx.NewRequestID()
	ctx := httpx.ContextWithRequestInfo(context.Background(), &httpx.RequestInfo{ID: id, Path: "/"})
	var err error
	if status == 431 {
		err = apperr.New(apperr.KindHeaderTooLarge, "the request line and header fields are too large to read")
	} else {
		err = apperr.BadRequest("the request cannot be read as HTTP: " + detail)
	}
	body, merr := model.Marshal(httpx.ProblemFrom(ctx, err))
	if merr != nil {
		return c.Conn.Write(p)
	}
	level.Info(c.logger).Log("msg", "answered a request net/http could not read", "status", status,
		"detail", detail, "request_id", id, "remote", c.RemoteAddr().String())
	answer := fmt.Sprintf("HTTP/1.1 %d %s\r\nContent-Type: %s\r\nCache-Control: no-store\r\nX-Request-Id: %s\r\n"+
		"Content-Length: %d\r\nConnection: close\r\n\r\n", status, http.StatusText(status), httpx.ProblemContentType, id, len(body)+1)
	if _, err := c.Conn.Write(append(append([]byte(answer), body...), '\n')); err != nil {
		return 0, err
	}
	return len(p), nil
}

// plainAnswer recognises net/http's own 400 or 431 answer and returns its
// status and the reason it gives ("missing required Host header"), if any.
func plainAnswer(p []byte) (status int, detail string, ok bool) {
	rest, found := bytes.CutPrefix(p, []byte("HTTP/1.1 "))
	if !found {
		return 0, "", false
	}
	statusLine, body, found := bytes.Cut(rest, []byte(netHTTPErrorFields))
	if !found || bytes.Contains(statusLine, []byte("\r\n")) || len(statusLine) < 3 {
		return 0, "", false
	}
	status, err := strconv.Atoi(string(statusLine[:3]))
	if err != nil || (status != 400 && status != 431) {
		return 0, "", false
	}
	// The body repeats the status line: "400 Bad Request: <reason>".
	if _, reason, found := bytes.Cut(body, []byte(": ")); found {
		return status, string(reason), true
	}
	return status, "malformed request line or header field", true
}

// ReadFrom keeps the connection's own fast path (sendfile, splice) for
// response bodies copied from a reader.
func (c *problemConn) ReadFrom(r io.Reader) (int64, error) { return io.Copy(c.Conn, r) }

// CloseWrite lets net/http half-close the connection before it closes it,
// so a client still sending can read the answer first.
func (c *problemConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}
