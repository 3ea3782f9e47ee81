package webhooks

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
)

func TestForbiddenAddresses(t *testing.T) {
	tests := []struct {
		addr      string
		forbidden bool
	}{
		{"127.0.0.1", true},
		{"127.10.0.1", true},
		{"::1", true},
		{"10.1.2.3", true},
		{"172.16.0.1", true},
		{"172.31.255.255", true},
		{"192.168.1.1", true},
		{"fd12:3456::1", true},    // unique local
		{"169.254.169.254", true}, // metadata
		{"169.254.1.1", true},     // link-local
		{"fe80::1", true},
		{"fd00:ec2::254", true},   // a cloud's IPv6 metadata
		{"100.100.100.200", true}, // a cloud's metadata, in carrier-grade NAT space
		{"100.64.0.1", true},
		{"0.0.0.0", true},
		{"::", true},
		{"224.0.0.1", true},
		{"255.255.255.255", true},
		{"::ffff:127.0.0.1", true},       // IPv4-mapped loopback
		{"::ffff:10.0.0.1", true},        // IPv4-mapped private
		{"64:ff9b::a00:1", true},         // NAT64 of 10.0.0.1
		{"64:ff9b::808:808", false},      // NAT64 of 8.8.8.8
		{"2002:a00:1::1", true},          // 6to4 of 10.0.0.1
		{"::127.0.0.1", true},            // IPv4-compatible loopback
		{"::10.0.0.1", true},             // IPv4-compatible private
		{"::169.254.169.254", true},      // IPv4-compatible metadata
		{"::8.8.8.8", true},              // IPv4-compatible: deprecated, never public
		{"fec0::1", true},                // site-local (deprecated)
		{"feff:ffff::1", true},           // the end of site-local
		{"::ffff:169.254.169.254", true}, // IPv4-mapped metadata
		{"::ffff:8.8.8.8", false},        // IPv4-mapped public
		{"::ffff:0:7f00:1", true},        // IPv4-translated loopback
		{"::ffff:0:a00:1", true},         // IPv4-translated private
		{"::ffff:0:808:808", false},      // IPv4-translated public
		{"64:ff9b::7f00:1", true},        // NAT64 of 127.0.0.1
		{"64:ff9b::a9fe:a9fe", true},     // NAT64 of the metadata address
		{"2002:7f00:1::1", true},         // 6to4 of 127.0.0.1
		{"2002:808:808::1", true},        // 6to4 of a public address: 6to4 is refused whole
		{"ff02::1", true},                // multicast
		{"8.8.8.8", false},
		{"93.184.216.34", false},
		{"172.32.0.1", false},
		{"2606:4700:4700::1111", false},
	}
	for _, tt := range tests {
		if got := Forbidden(netip.MustParseAddr(tt.addr)); got != tt.forbidden {
			t.Errorf("Forbidden(%s) = %v, want %v", tt.addr, got, tt.forbidden)
		}
	}
}

// noDNS resolves names from /etc/hosts only (localhost), so the
// subscribe-time check is tested without a DNS server.
func noDNS() *net.Resolver {
	return &net.Resolver{PreferGo: true, Dial: func(context.Context, string, string) (net.Conn, error) {
		return nil, &net.DNSError{Err: "no DNS in tests", IsNotFound: true}
	}}
}

func TestAddressPolicyCheck(t *testing.T) {
	exempt, err := ParseOrigins("http://127.0.0.1:*, https://hooks.internal:8443")
	if err != nil {
		t.Fatal(err)
	}
	strict := AddressPolicy{Resolver: noDNS()}
	lenient := AddressPolicy{Exempt: exempt, Resolver: noDNS()}
	tests := []struct {
		name   string
		policy AddressPolicy
		url    string
		ok     bool
	}{
		{"https to a public address", strict, "https://93.184.216.34/hook", true},
		{"plain http", strict, "http://93.184.216.34/hook", false},
		{"loopback", strict, "https://127.0.0.1/hook", false},
		{"loopback IPv6", strict, "https://[::1]/hook", false},
		{"private", strict, "https://10.0.0.5/hook", false},
		{"metadata", strict, "https://169.254.169.254/latest/meta-data", false},
		{"metadata IPv6", strict, "https://[fd00:ec2::254]/", false},
		{"metadata in CGNAT space", strict, "https://100.100.100.200/", false},
		{"IPv4-compatible loopback", strict, "https://[::127.0.0.1]/hook", false},
		{"IPv4-compatible private", strict, "https://[::10.0.0.1]/hook", false},
		{"site-local", strict, "https://[fec0::1]/hook", false},
		{"IPv4-mapped loopback", strict, "https://[::ffff:127.0.0.1]/hook", false},
		{"NAT64 of a private address", strict, "https://[64:ff9b::10.0.0.1]/hook", false},
		{"6to4 of a private address", strict, "https://[2002:a00:1::1]/hook", false},
		{"NAT64 of a public address", strict, "https://[64:ff9b::8.8.8.8]/hook", true},
		{"a name that does not resolve", strict, "https://nowhere.invalid/hook", false},
		{"localhost by name", strict, "https://localhost/hook", false},
		{"exempt origin, any port", lenient, "http://127.0.0.1:9999/hook", true},
		{"exempt origin, plain http of another host", lenient, "http://10.0.0.5:80/hook", false},
		{"exempt origin with its port", lenient, "https://hooks.internal:8443/x", true},
		{"exempt origin, another port", lenient, "https://hooks.internal:9443/x", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			u, err := url.Parse(tt.url)
			if err != nil {
				t.Fatal(err)
			}
			err = tt.policy.Check(context.Background(), u)
			if (err == nil) != tt.ok {
				t.Errorf("Check(%s) = %v, want ok %v", tt.url, err, tt.ok)
			}
		})
	}
	if _, err := ParseOrigins("127.0.0.1:*"); err == nil {
		t.Error("an origin without a scheme must be refused")
	}
}

// The dialer refuses a forbidden address however the URL named it (a
// name resolving to loopback, as after DNS rebinding), and no redirect is
// followed.
func TestDeliveryClientRefusesForbiddenAddressesAndRedirects(t *testing.T) {
	hits := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits++
		http.Redirect(w, r, "https://93.184.216.34/elsewhere", http.StatusFound)
	}))
	defer srv.Close()
	port := srv.URL[strings.LastIndex(srv.URL, ":")+1:]

	strict := AddressPolicy{}
	client := strict.Client(2 * time.Second)
	for _, target := range []string{srv.URL, "http://localhost:" + port} {
		u, _ := url.Parse(target)
		req, _ := http.NewRequestWithContext(strict.RequestContext(context.Background(), u), "POST", target, nil)
		if resp, err := client.Do(req); err == nil || !strings.Contains(err.Error(), errForbiddenAddress.Error()) {
			if resp != nil {
				resp.Body.Close()
			}
			t.Errorf("%s: connected (%v)", target, err)
		}
	}
	if hits != 0 {
		t.Fatalf("the receiver was reached %d times", hits)
	}

	exempt, _ := ParseOrigins("http://127.0.0.1:*")
	lenient := AddressPolicy{Exempt: exempt}
	u, _ := url.Parse(srv.URL)
	req, _ := http.NewRequestWithContext(lenient.RequestContext(context.Background(), u), "POST", srv.URL, nil)
	resp, err := lenient.Client(2 * time.Second).Do(req)
	if err != nil {
		t.Fatalf("exempt origin: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusFound || hits != 1 {
		t.Errorf("status %d after %d hits: a redirect must be the answer, not followed", resp.StatusCode, hits)
	}
}

// A receiver's answer costs a delivery a bounded read: headers past
// maxReceiverHeader fail the attempt (net/http would take 10 MB of them),
// and of a body that never ends only maxReceiverBody is read.
func TestDeliveryReadsABoundedAnswer(t *testing.T) {
	var sent atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/headers" {
			for i := range 128 { // 1 MiB of headers
				w.Header().Set(fmt.Sprintf("X-Filler-%d", i), strings.Repeat("h", 8<<10))
			}
			w.WriteHeader(http.StatusOK)
			return
		}
		w.WriteHeader(http.StatusOK)
		chunk := bytes.Repeat([]byte("b"), 32<<10)
		for r.Context().Err() == nil && sent.Load() < 64<<20 {
			n, err := w.Write(chunk)
			sent.Add(int64(n))
			if err != nil {
				return
			}
		}
	}))
	defer srv.Close()
	exempt, err := ParseOrigins("http://127.0.0.1:*")
	if err != nil {
		t.Fatal(err)
	}
	d := &Dispatcher{Policy: AddressPolicy{Exempt: exempt}, Timeout: 5 * time.Second}
	d.client = d.Policy.Client(d.Timeout)
	job := Job{ID: uuid.New(), EventID: uuid.New(), Secrets: []string{NewSecret()}, Body: []byte(`{"type":"asset.created"}`)}

	job.URL = srv.URL + "/headers"
	status, err := d.send(t.Context(), job)
	if err == nil || status != 0 {
		t.Errorf("a receiver answering 1 MiB of headers: status %d, %v; want the attempt to fail", status, err)
	}

	job.URL = srv.URL + "/body"
	start := time.Now()
	status, err = d.send(t.Context(), job)
	if err != nil || status != http.StatusOK {
		t.Fatalf("a receiver answering an endless body: status %d, %v", status, err)
	}
	if took := time.Since(start); took > 2*time.Second {
		t.Errorf("the attempt took %s reading an endless body", took)
	}
	// What the receiver got written is the cap plus what the connection's
	// buffers took before the attempt closed it.
	if got := sent.Load(); got > 16<<20 {
		t.Errorf("the receiver wrote %d bytes before the attempt stopped reading: want about %d", got, maxReceiverBody)
	}
}

// A refused URL's problem says why without naming the address its host
// resolved to: that address is the registry's view of its own network,
// which a caller must not learn. localhost resolves from /etc/hosts, to loopback.
func TestAddressPolicyNeverNamesTheResolvedAddress(t *testing.T) {
	strict := AddressPolicy{Resolver: noDNS()}
	resolved, err := noDNS().LookupNetIP(context.Background(), "ip", "localhost")
	if err != nil || len(resolved) == 0 {
		t.Fatalf("localhost does not resolve here: %v", err)
	}
	for _, target := range []string{"https://localhost/hook", "https://localhost:8443/x"} {
		u, _ := url.Parse(target)
		err := strict.Check(context.Background(), u)
		if err == nil {
			t.Fatalf("%s: accepted", target)
		}
		msg := fmt.Sprintf("%+v", err)
		if !strings.Contains(msg, `host "localhost" resolves to a loopback, private, link-local or metadata address`) {
			t.Errorf("%s: %s does not say why", target, msg)
		}
		for _, a := range resolved {
			for _, form := range []string{a.String(), a.Unmap().String()} {
				if strings.Contains(msg, form) {
					t.Errorf("%s: the problem names the resolved address %s: %s", target, form, msg)
				}
			}
		}
	}
}
