package httpx

import (
	"errors"
	"net/netip"
	"strconv"
	"strings"
)

// Networks is a list of networks as a flag value, "10.1.2.0/24,192.168.1.7"
// (a single address is its own network): the trusted proxies that
// SourceNetwork believes, set the same way in every process that limits
// callers by address (the gateway's rate limits, the identity provider's
// throttles).
type Networks []netip.Prefix

func (p Networks) String() string {
	var parts []string
	for _, x := range p {
		parts = append(parts, x.String())
	}
	return strings.Join(parts, ",")
}

// Set parses networks and single addresses, replacing what was there.
func (p *Networks) Set(s string) error {
	var out Networks
	for part := range strings.SplitSeq(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		if prefix, err := netip.ParsePrefix(part); err == nil {
			out = append(out, prefix.Masked())
			continue
		}
		addr, err := netip.ParseAddr(part)
		if err != nil {
			return errors.New("trusted proxy " + strconv.Quote(part) + " is neither an address nor a network (10.1.2.0/24)")
		}
		out = append(out, netip.PrefixFrom(addr.Unmap(), addr.Unmap().BitLen()))
	}
	*p = out
	return nil
}
