package httpx

import (
	"net"
	"net/http"
	"net/netip"
	"strings"
)

// SourceNetwork is the network a request comes from, for limits per
// caller: the connection's peer, or, when that is one of the trusted
// proxies, the nearest address in X-Forwarded-For that is not one (each
// proxy appends the address it got the call from, so entries left of the
// first untrusted one could be forged by the caller). An IPv4 source is
// its /32, an IPv6 source its /64, since whoever has one address of a /64
// usually has them all. A peer that is no IP address gives the zero
// Prefix.
func SourceNetwork(r *http.Request, trusted []netip.Prefix) netip.Prefix {
	addr := peerAddr(r.RemoteAddr)
	if contains(trusted, addr) {
		hops := strings.Split(strings.Join(r.Header.Values("X-Forwarded-For"), ","), ",")
		for i := len(hops) - 1; i >= 0; i-- {
			hop, err := netip.ParseAddr(strings.TrimSpace(hops[i]))
			if err != nil {
				break // a malformed entry: believe nothing before it
			}
			addr = hop.Unmap()
			if !contains(trusted, addr) {
				break
			}
		}
	}
	bits := 32
	if addr.Is6() {
		bits = 64
	}
	p, _ := addr.Prefix(bits)
	return p
}

func contains(networks []netip.Prefix, addr netip.Addr) bool {
	for _, p := range networks {
		if p.Contains(addr) {
			return true
		}
	}
	return false
}

func peerAddr(remote string) netip.Addr {
	host, _, err := net.SplitHostPort(remote)
	if err != nil {
		host = remote
	}
	addr, err := netip.ParseAddr(host)
	if err != nil {
		return netip.Addr{}
	}
	return addr.Unmap()
}
