package devstack

import (
	"fmt"
	"strconv"
	"strings"
)

func (p *Ports) fields() map[string]*int {
	return map[string]*int{
		"gateway": &p.Gateway, "idp": &p.IdP, "parties": &p.Parties,
		"gateway-metrics": &p.GatewayMetrics, "idp-metrics": &p.IdPMetrics, "parties-metrics": &p.PartiesMetrics,
		"postgres": &p.Postgres, "redis": &p.Redis,
		"minio": &p.Minio, "minio-console": &p.MinioConsole,
	}
}

// String lists the ports as Set reads them.
func (p *Ports) String() string {
	var parts []string
	for name, v := range p.fields() {
		parts = append(parts, name+"="+strconv.Itoa(*v))
	}
	return strings.Join(parts, ",")
}

// Set reads "name=port,..." for the -ports flag.
func (p *Ports) Set(s string) error {
	fields := p.fields()
	for _, kv := range strings.Split(s, ",") {
		name, value, ok := strings.Cut(strings.TrimSpace(kv), "=")
		port, err := strconv.Atoi(value)
		target, known := fields[name]
		if !ok || err != nil || !known || port < 0 || port > 65535 {
			return fmt.Errorf("%q is not name=port with a name among gateway, idp, parties, *-metrics, postgres, redis, minio, minio-console", kv)
		}
		*target = port
	}
	return nil
}
