package devstack

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/assetregistry/registry/pkg/catalog"
)

// Ports of the stack by name: each deployable of pkg/catalog by its name
// and "<name>-metrics", and the datastores "postgres", "redis", "minio",
// "minio-console" and "nats". 0 (or absent) picks a free port, except for
// minio-console, where it leaves MinIO's web console off.
type Ports map[string]int

// Datastore port names.
const (
	PostgresPort     = "postgres"
	RedisPort        = "redis"
	MinioPort        = "minio"
	MinioConsolePort = "minio-console"
	NatsPort         = "nats"
)

// PortNames lists every name Ports knows.
func PortNames() []string {
	var names []string
	for _, d := range catalog.Deployables() {
		names = append(names, d.Name, metricsPort(d.Name))
	}
	return append(names, PostgresPort, RedisPort, MinioPort, MinioConsolePort, NatsPort)
}

func metricsPort(name string) string { return name + "-metrics" }

// DefaultPorts are make run's: each deployable's catalog ports (the gateway
// on 8080), and datastores on ports that stay clear of default PostgreSQL,
// Redis, MinIO (9000, 9001) and NATS (4222) installations.
func DefaultPorts() Ports {
	p := Ports{PostgresPort: 54329, RedisPort: 63799, MinioPort: 9009, MinioConsolePort: 9019, NatsPort: 42229}
	for _, d := range catalog.Deployables() {
		p[d.Name], p[metricsPort(d.Name)] = d.Port, d.MetricsPort
	}
	return p
}

// String lists the ports as Set reads them.
func (p Ports) String() string {
	var parts []string
	for _, name := range PortNames() {
		if port, ok := p[name]; ok {
			parts = append(parts, name+"="+strconv.Itoa(port))
		}
	}
	return strings.Join(parts, ",")
}

// Set reads "name=port,..." for the -ports flag.
func (p Ports) Set(s string) error {
	names := PortNames()
	for _, kv := range strings.Split(s, ",") {
		name, value, ok := strings.Cut(strings.TrimSpace(kv), "=")
		port, err := strconv.Atoi(value)
		if !ok || err != nil || !slices.Contains(names, name) || port < 0 || port > 65535 {
			return fmt.Errorf("%q is not name=port with a name among %s", kv, strings.Join(names, ", "))
		}
		p[name] = port
	}
	return nil
}
