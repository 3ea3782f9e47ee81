package devstack

import (
	"net"
	"strings"
	"testing"

	"github.com/assetregistry/registry/pkg/catalog"
	"github.com/assetregistry/registry/tools/devinfra"
)

// A port given for a registry process (make run's fixed ones) that another
// program holds fails the start before anything runs, naming the process:
// a process of another stack there would have answered this one's
// readiness check.
func TestGivenPortTakenIsRefused(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	taken := l.Addr().(*net.TCPAddr).Port
	free, err := devinfra.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name    string
		given   Ports
		refused string // "" when the ports are accepted
	}{
		{"taken service port", Ports{catalog.Gateway.Name: taken}, catalog.Gateway.Name},
		{"taken metrics port", Ports{metricsPort(catalog.Gateway.Name): taken}, metricsPort(catalog.Gateway.Name)},
		{"free port", Ports{catalog.Gateway.Name: free}, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			ports, err := resolvePorts(c.given)
			switch {
			case c.refused == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case c.refused == "" && ports[catalog.Gateway.Name] != free:
				t.Errorf("the gateway's port is %d, want the one given, %d", ports[catalog.Gateway.Name], free)
			case c.refused != "" && (err == nil || !strings.Contains(err.Error(), c.refused+"'s port")):
				t.Fatalf("got %v, want the start refused for %s", err, c.refused)
			}
		})
	}
}
