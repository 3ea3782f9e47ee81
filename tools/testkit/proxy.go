package testkit

import (
	"net"
	"testing"
)

// Proxy listens on a free local port and joins each connection it accepts
// to a new connection to target: join gets both and copies between them
// as the test needs (holding, counting or cutting what passes); it must
// not block. Proxy returns the address to dial in target's place. The
// listener closes when the test ends, before the cleanups registered
// ahead of Proxy run, and no join starts after that.
func Proxy(t testing.TB, target string, join func(client, server net.Conn)) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	t.Cleanup(func() { ln.Close(); <-done })
	go func() {
		defer close(done)
		for {
			client, err := ln.Accept()
			if err != nil {
				return
			}
			server, err := net.Dial("tcp", target)
			if err != nil {
				client.Close()
				continue
			}
			join(client, server)
		}
	}()
	return ln.Addr().String()
}
