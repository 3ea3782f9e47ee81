package webhooks

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/assetregistry/registry/pkg/apperr"
)

// Where deliveries may go (server-side request forgery): a subscription's
// URL is https, and its host resolves only to public addresses, both when
// it is made and at every delivery. The delivery check sits in the
// dialer, on the address actually connected to, so a name that resolves
// to a public address at subscribe time and to an internal one later (DNS
// rebinding) is refused all the same. Redirects are not followed. An
// operator may exempt origins (make run: http://127.0.0.1:*), which then
// may be plain http and private.

// forbiddenPrefixes are the ranges no delivery may reach beyond what
// netip's own predicates name: loopback (127/8, ::1), private (RFC 1918,
// fc00::/7 unique local), link-local (169.254/16 with 169.254.169.254,
// fe80::/10), multicast and unspecified.
var forbiddenPrefixes = []netip.Prefix{
	netip.MustParsePrefix("0.0.0.0/8"),      // "this network"
	netip.MustParsePrefix("100.64.0.0/10"),  // carrier-grade NAT, holds 100.100.100.200 (a cloud's metadata)
	netip.MustParsePrefix("192.0.0.0/24"),   // IETF protocol assignments
	netip.MustParsePrefix("198.18.0.0/15"),  // benchmarking
	netip.MustParsePrefix("240.0.0.0/4"),    // reserved, and the broadcast address
	netip.MustParsePrefix("64:ff9b:1::/48"), // local-use NAT64
	netip.MustParsePrefix("2001:db8::/32"),  // documentation
	netip.MustParsePrefix("fd00:ec2::/32"),  // a cloud's metadata (inside fc00::/7 too)
	netip.MustParsePrefix("100::/64"),       // discard-only
	netip.MustParsePrefix("2001::/23"),      // IETF protocol assignments (Teredo and others)
	netip.MustParsePrefix("2002::/16"),      // 6to4: embeds an IPv4 address of any kind
	// IPv4-compatible (::a.b.c.d, deprecated): a stack that still routes
	// them reaches the IPv4 address, private ones included; none is public.
	netip.MustParsePrefix("::/96"),
	netip.MustParsePrefix("fec0::/10"), // site-local (deprecated), private like fc00::/7
}

// embeddingV4 are the ranges that translate to the IPv4 address in their
// last 32 bits: the well-known NAT64 prefix and IPv4-translated
// addresses (::ffff:0:a.b.c.d). Such an address is as forbidden as the
// one it embeds. (IPv4-mapped ::ffff:a.b.c.d are unmapped first.)
var embeddingV4 = []netip.Prefix{
	netip.MustParsePrefix("64:ff9b::/96"),
	netip.MustParsePrefix("::ffff:0:0:0/96"),
}

// Forbidden reports whether a delivery may not connect to addr.
func Forbidden(addr netip.Addr) bool {
	addr = addr.Unmap()
	if addr.Is6() && slices.ContainsFunc(embeddingV4, func(p netip.Prefix) bool { return p.Contains(addr) }) {
		b := addr.As16()
		return Forbidden(netip.AddrFrom4([4]byte{b[12], b[13], b[14], b[15]}))
	}
	if !addr.IsValid() || addr.IsLoopback() || addr.IsPrivate() || addr.IsLinkLocalUnicast() ||
		addr.IsLinkLocalMulticast() || addr.IsInterfaceLocalMulticast() || addr.IsMulticast() || addr.IsUnspecified() {
		return true
	}
	return slices.ContainsFunc(forbiddenPrefixes, func(p netip.Prefix) bool { return p.Contains(addr) })
}

// Origin is an exempt origin: scheme, host and a port or "*".
type Origin struct{ Scheme, Host, Port string }

// ParseOrigins reads a comma-separated list such as
// "http://127.0.0.1:*,https://hooks.internal:8443".
func ParseOrigins(list string) ([]Origin, error) {
	var out []Origin
	for raw := range strings.SplitSeq(list, ",") {
		raw = strings.TrimSpace(raw)
		if raw == "" {
			continue
		}
		scheme, hostport, ok := strings.Cut(raw, "://")
		host, port, err := net.SplitHostPort(hostport)
		if !ok || err != nil || (scheme != "http" && scheme != "https") || host == "" || port == "" {
			return nil, fmt.Errorf("webhooks: %q is not an origin scheme://host:port (port may be *)", raw)
		}
		out = append(out, Origin{Scheme: scheme, Host: strings.ToLower(host), Port: port})
	}
	return out, nil
}

func (o Origin) matches(u *url.URL) bool {
	port := u.Port()
	if port == "" {
		port = map[string]string{"http": "80", "https": "443"}[u.Scheme]
	}
	return u.Scheme == o.Scheme && strings.ToLower(u.Hostname()) == o.Host && (o.Port == "*" || o.Port == port)
}

// AddressPolicy decides where deliveries may go.
type AddressPolicy struct {
	Exempt   []Origin
	Resolver *net.Resolver // nil: net.DefaultResolver
}

func (p AddressPolicy) exempt(u *url.URL) bool {
	return slices.ContainsFunc(p.Exempt, func(o Origin) bool { return o.matches(u) })
}

// CheckScheme is the check of a URL without resolving it: https, unless
// its origin is exempt.
func (p AddressPolicy) CheckScheme(u *url.URL) error {
	if u.Scheme != "https" && !p.exempt(u) {
		return apperr.Invalid(apperr.FieldError{Field: "url", Message: "must be an https URL"})
	}
	return nil
}

// Check is the subscribe-time check: the scheme, and every address the
// host resolves to must be public (unless its origin is exempt).
func (p AddressPolicy) Check(ctx context.Context, u *url.URL) error {
	if err := p.CheckScheme(u); err != nil || p.exempt(u) {
		return err
	}
	invalid := func(format string, args ...any) error {
		return apperr.Invalid(apperr.FieldError{Field: "url", Message: fmt.Sprintf(format, args...)})
	}
	host := u.Hostname()
	if addr, err := netip.ParseAddr(host); err == nil {
		if Forbidden(addr) {
			return invalid("must not point at a loopback, private, link-local or metadata address")
		}
		return nil
	}
	resolver := p.Resolver
	if resolver == nil {
		resolver = net.DefaultResolver
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	addrs, err := resolver.LookupNetIP(ctx, "ip", host)
	if err != nil || len(addrs) == 0 {
		return invalid("host %q does not resolve", host)
	}
	// The answer names the host the client sent, never the address it
	// resolved to: that would tell a caller what the registry's own
	// network calls its names (the internal address of a service, say).
	if slices.ContainsFunc(addrs, Forbidden) {
		return invalid("host %q resolves to a loopback, private, link-local or metadata address", host)
	}
	return nil
}

// What a delivery reads of a receiver's answer at most.
const (
	maxReceiverHeader = 64 << 10
	maxReceiverBody   = 64 << 10
)

// errForbiddenAddress is what the dialer refuses with.
var errForbiddenAddress = errors.New("refused to connect: loopback, private, link-local or metadata address")

type exemptKey struct{}

// Client is the HTTP client of deliveries: no proxy, no redirects, every
// connection's address checked as it is made, timeout bounding the whole
// attempt.
func (p AddressPolicy) Client(timeout time.Duration) *http.Client {
	dialer := &net.Dialer{
		Timeout: timeout,
		ControlContext: func(ctx context.Context, _, address string, _ syscall.RawConn) error {
			if exempt, _ := ctx.Value(exemptKey{}).(bool); exempt {
				return nil
			}
			host, _, err := net.SplitHostPort(address)
			if err != nil {
				return err
			}
			addr, err := netip.ParseAddr(host)
			if err != nil || Forbidden(addr) {
				return fmt.Errorf("%w (%s)", errForbiddenAddress, host)
			}
			return nil
		},
	}
	transport := &http.Transport{
		Proxy: nil,
		// A receiver's answer is read for its status: its headers may
		// not cost more than this (net/http's default is 10 MB a
		// response, per attempt), and send reads at most
		// maxReceiverBody of its body.
		MaxResponseHeaderBytes: maxReceiverHeader,
		DialContext:            dialer.DialContext,
		ForceAttemptHTTP2:      true,
		MaxIdleConnsPerHost:    8,
		IdleConnTimeout:        90 * time.Second,
		TLSHandshakeTimeout:    timeout,
		ResponseHeaderTimeout:  timeout,
	}
	return &http.Client{
		Transport: transport,
		Timeout:   timeout,
		CheckRedirect: func(*http.Request, []*http.Request) error {
			return http.ErrUseLastResponse // a 3xx is an answer, and not a 2xx
		},
	}
}

// RequestContext marks ctx for a delivery to u: an exempt origin may be
// connected to at any address.
func (p AddressPolicy) RequestContext(ctx context.Context, u *url.URL) context.Context {
	if p.exempt(u) {
		return context.WithValue(ctx, exemptKey{}, true)
	}
	return ctx
}
