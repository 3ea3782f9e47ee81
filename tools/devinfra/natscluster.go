package devinfra

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
)

// NatsClusterOptions configures StartNatsCluster.
type NatsClusterOptions struct {
	// DataDir holds one directory per node (node-1, node-2, ...), each
	// with its JetStream store, configuration and log.
	DataDir string
	// Size is the number of nodes; 3 unless set.
	Size int
	// CredentialsFile holds the user's name and password, as StartNats's
	// (every node has the same user); "" means DataDir + ".credentials".
	CredentialsFile string
}

// NatsCluster is a running JetStream cluster on loopback: a stream with
// three replicas there survives the loss of any one node.
type NatsCluster struct {
	Nodes []*Nats
	// URL lists every node's client URL, comma-separated, as the
	// services' nats.url takes them.
	URL            string
	User, Password string
}

// StartNatsCluster starts Size NATS servers with JetStream as one cluster
// and returns once each accepts the user with JetStream on.
func StartNatsCluster(ctx context.Context, o NatsClusterOptions) (*NatsCluster, error) {
	c, err := startNatsCluster(ctx, o)
	if err != nil {
		return nil, fmt.Errorf("start nats cluster: %w", err)
	}
	return c, nil
}

func startNatsCluster(ctx context.Context, o NatsClusterOptions) (*NatsCluster, error) {
	size := o.Size
	if size == 0 {
		size = 3
	}
	dataDir, err := privateDataDir(o.DataDir)
	if err != nil {
		return nil, err
	}
	credentials := o.CredentialsFile
	if credentials == "" {
		credentials = dataDir + ".credentials"
	}
	routePassword, err := NewSecret()
	if err != nil {
		return nil, err
	}
	// Every node must know every route before any starts, so the ports
	// are picked up front.
	clientPorts, routePorts := make([]int, size), make([]int, size)
	for i := range size {
		if clientPorts[i], err = FreePort(); err != nil {
			return nil, err
		}
		if routePorts[i], err = FreePort(); err != nil {
			return nil, err
		}
	}
	c := &NatsCluster{Nodes: make([]*Nats, size)}
	errs := make([]error, size)
	var wg sync.WaitGroup
	for i := range size {
		wg.Go(func() {
			node := "node-" + strconv.Itoa(i+1)
			c.Nodes[i], errs[i] = StartNats(ctx, NatsOptions{
				DataDir: filepath.Join(dataDir, node), Port: clientPorts[i], CredentialsFile: credentials,
				Cluster: &NatsClusterNode{Name: "registry", ServerName: "registry-" + node, Port: routePorts[i],
					Routes: routePorts, RoutePassword: routePassword},
			})
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		for _, n := range c.Nodes {
			if n != nil {
				_ = n.Kill()
			}
		}
		return nil, err
	}
	var urls []string
	for _, n := range c.Nodes {
		urls = append(urls, n.URL)
	}
	c.URL = strings.Join(urls, ",")
	c.User, c.Password = c.Nodes[0].User, c.Nodes[0].Password
	return c, nil
}

// Stop stops every node.
func (c *NatsCluster) Stop() error {
	var errs []error
	for _, n := range c.Nodes {
		errs = append(errs, n.Stop())
	}
	return errors.Join(errs...)
}
