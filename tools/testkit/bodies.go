package testkit

import (
	"io"
	"net/http"
	"testing"
)

// Framing is how a request body is sent: with a Content-Length, or
// chunked (the client cannot measure the body), with or without Expect:
// 100-continue (as curl sends for large bodies).
type Framing struct {
	Name                       string
	WithLength, ExpectContinue bool
}

// The three ways a client sends a body.
var (
	WithLength            = Framing{Name: "Content-Length", WithLength: true}
	Chunked               = Framing{Name: "chunked"}
	ChunkedExpectContinue = Framing{Name: "chunked, Expect: 100-continue", ExpectContinue: true}
)

// Framings are all of them, for a limit that must hold however the body
// is framed.
var Framings = []Framing{WithLength, Chunked, ChunkedExpectContinue}

// PostGenerated sends url a POST whose body is prefix and then size bytes
// of 'x', made as they are sent, framed as framing says. It returns the status and the body of
// the answer, or 0 and the error when the exchange failed (a server that
// cut the body off, say).
func PostGenerated(t testing.TB, url, token, contentType, prefix string, size int, framing Framing) (int, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), "POST", url, &generated{prefix: prefix, n: size})
	if err != nil {
		t.Fatal(err)
	}
	if framing.WithLength {
		req.ContentLength = int64(len(prefix) + size)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", contentType)
	if framing.ExpectContinue {
		req.Header.Set("Expect", "100-continue")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

// generated is prefix and then n bytes of 'x'; it is no strings.Reader, so
// net/http does not know its length.
type generated struct {
	prefix string
	n      int
}

func (g *generated) Read(p []byte) (int, error) {
	if g.prefix != "" {
		n := copy(p, g.prefix)
		g.prefix = g.prefix[n:]
		return n, nil
	}
	if g.n <= 0 {
		return 0, io.EOF
	}
	p = p[:min(len(p), g.n)]
	for i := range p {
		p[i] = 'x'
	}
	g.n -= len(p)
	return len(p), nil
}
