package testkit

import (
	"encoding/binary"
	"io"
	"net"
	"net/url"
	"sync/atomic"
	"testing"
)

// CountingStatements is databaseURL through a proxy that adds to n each
// statement a client sends on it: a test that points a service at the
// answer sees how many statements a call costs (a batch's must not grow
// with its items), whatever the driver pipelines or prepares.
func CountingStatements(t testing.TB, databaseURL string, n *atomic.Int64) string {
	t.Helper()
	u, err := url.Parse(databaseURL)
	if err != nil {
		t.Fatal(err)
	}
	u.Host = Proxy(t, u.Host, func(client, server net.Conn) {
		go func() { _, _ = io.Copy(client, server); client.Close() }()
		go func() { countStatements(io.TeeReader(client, server), n); server.Close() }()
	})
	return u.String()
}

// countStatements reads PostgreSQL's frontend protocol from r and adds to
// n each statement it carries: a simple query (Q) or an extended query's
// execution (E). The startup packets before it carry no type byte.
func countStatements(r io.Reader, n *atomic.Int64) {
	var head [8]byte
	for {
		if _, err := io.ReadFull(r, head[:8]); err != nil {
			return
		}
		length, code := binary.BigEndian.Uint32(head[:4]), binary.BigEndian.Uint32(head[4:])
		if _, err := io.CopyN(io.Discard, r, int64(length)-8); err != nil {
			return
		}
		if code == 196608 { // protocol 3.0: the startup message, then typed messages
			break
		}
	}
	var typed [5]byte
	for {
		if _, err := io.ReadFull(r, typed[:]); err != nil {
			return
		}
		if typed[0] == 'Q' || typed[0] == 'E' {
			n.Add(1)
		}
		if _, err := io.CopyN(io.Discard, r, int64(binary.BigEndian.Uint32(typed[1:]))-4); err != nil {
			return
		}
	}
}

// StatementsDoNotGrow fails t when a batch of large items sent more than
// slack statements beyond one of small items (sentSmall and sentLarge,
// counted by CountingStatements): a batch's statements must not grow with
// its items.
func StatementsDoNotGrow(t testing.TB, items string, small, large int, sentSmall, sentLarge, slack int64) {
	t.Helper()
	t.Logf("statements: %d for a batch of %d %s, %d for a batch of %d", sentSmall, small, items, sentLarge, large)
	if sentSmall == 0 {
		t.Fatal("no statements counted: the proxy does not see them")
	}
	if sentLarge > sentSmall+slack {
		t.Errorf("a batch of %d %s sent %d statements, one of %d sent %d: the statements grow with the items",
			large, items, sentLarge, small, sentSmall)
	}
}
