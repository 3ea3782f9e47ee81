// Command devstack is `make run`: it starts the whole registry locally,
// prints how to call it, and stops everything on Ctrl-C.
package main

import (
	"context"
	"flag"
	"fmt"
	"net/url"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/assetregistry/registry/tools/devinfra"
	"github.com/assetregistry/registry/tools/devstack"
)

func main() {
	dir := flag.String("dir", ".local", "state directory (data, keys, logs, registry.env); reused by the next run")
	bin := flag.String("bin", "bin", "directory with the built binaries")
	ports := devstack.DefaultPorts()
	flag.Var(ports, "ports", "ports to use as name=port,...; names: "+strings.Join(devstack.PortNames(), ", ")+
		" (unnamed ones keep their defaults: "+ports.String()+"; minio-console=0 turns the console off)")
	buildLater := flag.Bool("build-later", false, "build the binaries of the services that join after the first call's (go build into -bin, in the repository around the working directory) before starting them: make run builds only the first call's before it starts this")
	clusters := flag.Bool("clusters", false, "run the datastores as clusters: PostgreSQL with a synchronous standby, Redis with a replica and three Sentinels, three NATS nodes (as make cluster-faults does; ports of their own besides the primaries')")
	flag.Parse()
	if err := run(*dir, *bin, ports, *clusters, *buildLater); err != nil {
		fmt.Fprintln(os.Stderr, "make run:", err)
		os.Exit(1)
	}
}

func run(dir, bin string, ports devstack.Ports, clusters, buildLater bool) error {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	// The first call's parts start first (devstack.FirstCall: the identity
	// provider, the service that answers it and the gateway, on PostgreSQL
	// and Redis), and the usage is printed as soon as they answer. NATS,
	// MinIO (built from source on a new machine: minutes, once) and the
	// other services build and start meanwhile, in the background, and
	// join as each is ready; until then the gateway answers their paths
	// with 503 and Retry-After.
	var first []string
	for _, d := range devstack.FirstCall() {
		first = append(first, d.Name)
	}
	fmt.Printf("Starting PostgreSQL, Redis and what the first call needs (%s); the rest joins when it is built and ready...\n",
		strings.Join(first, ", "))
	o := devstack.Options{Dir: dir, BinDir: bin, Ports: ports, Database: "registry", FirstCallFirst: true, Clusters: clusters}
	if buildLater {
		o.BuildLater = func(ctx context.Context, services []string) error {
			return devstack.BuildInto(ctx, bin, services...)
		}
	}
	started := time.Now()
	startCtx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	stack, err := devstack.Start(startCtx, o)
	if err != nil {
		return err
	}
	envFile := filepath.Join(dir, "registry.env")
	creds, err := stack.EnsureClients(startCtx, envFile)
	if err != nil {
		return fmt.Errorf("%w (stopping: %v)", err, stack.Stop())
	}
	printUsage(creds, envFile, stack)
	if stack.Joining != nil {
		go reportJoining(ctx, stack, started)
	}
	<-ctx.Done()
	fmt.Println("\nStopping...")
	if err := stack.Stop(); err != nil {
		return err
	}
	fmt.Println("Stopped. Data is kept in", dir, "for the next make run.")
	return nil
}

// reportJoining says what is still on its way: once when the first call
// can be made, then as each part joins, and every minute meanwhile.
func reportJoining(ctx context.Context, stack *devstack.Stack, started time.Time) {
	var waiting, servers []string
	for _, name := range stack.StillJoining {
		switch name {
		case devstack.JoinedMinio, devstack.JoinedNATS:
			servers = append(servers, name)
		default:
			waiting = append(waiting, name)
		}
	}
	if slices.Contains(servers, devstack.JoinedMinio) && !minioBuilt() {
		fmt.Println("MinIO is not built yet (a few minutes, once per machine, at the lowest CPU priority): the services that keep files join after it.")
	}
	if len(waiting)+len(servers) > 0 {
		fmt.Printf("Still joining: %s (a service's paths answer 503 with Retry-After until it joins).\n",
			strings.Join(slices.Concat(waiting, titles(servers)), ", "))
	}
	var failures []string
	tick := time.NewTicker(time.Minute)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case j, ok := <-stack.Joining:
			if !ok && len(failures) > 0 {
				fmt.Printf("The rest has joined after %s; what did not start is said above.\n", since(started))
				return
			}
			if !ok {
				fmt.Printf("Everything has joined after %s: every path answers now.\n", since(started))
				return
			}
			if j.Err != nil && slices.Contains(failures, j.Err.Error()) {
				// A failed build or server fails every service waiting for it.
				fmt.Fprintf(os.Stderr, "make run: %s did not start: the same error\n", j.Name)
			} else if j.Err != nil {
				failures = append(failures, j.Err.Error())
				fmt.Fprintf(os.Stderr, "make run: %s did not start: %v\n", j.Name, j.Err)
			} else if slices.Contains(servers, j.Name) {
				fmt.Printf("%s is running (after %s).\n", serverTitle(j.Name), since(started))
			} else {
				fmt.Printf("%s joined after %s.\n", j.Name, since(started))
			}
			waiting = slices.DeleteFunc(waiting, func(n string) bool { return n == j.Name })
			servers = slices.DeleteFunc(servers, func(n string) bool { return n == j.Name })
		case <-tick.C:
			left := slices.Concat(waiting, titles(servers))
			fmt.Printf("still joining after %s: %s\n", since(started), strings.Join(left, ", "))
		}
	}
}

// minioBuilt reports whether the pinned MinIO server is in the tool cache.
func minioBuilt() bool {
	bin, err := devinfra.MinioServerPath()
	if err != nil {
		return true // StartMinio says why
	}
	_, err = os.Stat(bin)
	return err == nil
}

func serverTitle(name string) string {
	switch name {
	case devstack.JoinedMinio:
		return "MinIO"
	case devstack.JoinedNATS:
		return "NATS"
	}
	return name
}

func titles(names []string) []string {
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = serverTitle(n)
	}
	return out
}

func since(t time.Time) time.Duration { return time.Since(t).Round(time.Second) }

func printUsage(c devstack.Credentials, envFile string, stack *devstack.Stack) {
	// A MinIO still joining is the launcher's to fill in: not read here.
	s3, console, credentials := "(joins when built and started)", "-", "-"
	if !slices.Contains(stack.StillJoining, devstack.JoinedMinio) {
		s3, console, credentials = stack.S3Endpoint, stack.S3ConsoleURL, stack.S3Credentials
		if console == "" {
			console = "off"
		}
	}
	nats := stack.NATS.URL
	if slices.Contains(stack.StillJoining, devstack.JoinedNATS) {
		nats += " (joining)"
	}
	fmt.Printf(`
The Asset Registry is running.

  API (gateway)        %[1]s
  API documentation    %[1]s/docs
  Identity provider    %[2]s  (token endpoint %[2]s/oidc/token)
  Read-write client    %[3]s  (CLIENT_ID; changes only what it created)
  Read-only client     %[4]s  (READONLY_CLIENT_ID)
  Second integration   %[13]s  (OTHER_CLIENT_ID; read-write, owns its own rows)
  Admin client         %[14]s  (ADMIN_CLIENT_ID; registry:admin: changes anyone's rows)
  Organization A       %[17]s  (ORG_A_ID; ORG-A, de)
    its client         %[18]s  (ORG_A_CLIENT_ID; read-write, bound to it: sees its
                       organization's equipment and the shared)
  Organization B       %[19]s  (ORG_B_ID; ORG-B, de)
    its client         %[20]s  (ORG_B_CLIENT_ID; read-write, bound to it)
                       (the four clients above are bound to no organization)
  Credentials          %[5]s
  Logs                 %[6]s
  MinIO (S3)           http://%[7]s  (console %[8]s; root credentials in %[9]s)
  NATS (JetStream)     %[15]s  (change events on stream REGISTRY_EVENTS,
                       subjects registry.events.<kind>.<id>; user in %[16]s)
  PostgreSQL, Redis    %[10]s, %[11]s  (passwords only; each service's own
                       role and Redis user in %[12]s)

Get a token and make a first call:

  set -a; . %[5]s; set +a
  TOKEN=$(curl -s "$AUTH_URL/oidc/token" -d grant_type=client_credentials \
      -d client_id="$CLIENT_ID" -d client_secret="$CLIENT_SECRET" -d resource="$RESOURCE" \
      | sed -E 's/.*"access_token":"([^"]+)".*/\1/')
  curl -s -X POST "$REGISTRY_URL/organizations" -H "Authorization: Bearer $TOKEN" \
      -H 'Content-Type: application/json' \
      -d '{"name":"Acme AS","registration_number":"912345678","organization_type":"private","country":"no"}'
  curl -s "$REGISTRY_URL/organizations" -H "Authorization: Bearer $TOKEN"

Press Ctrl-C to stop everything.
`, c.RegistryURL, c.AuthURL, c.ClientID, c.ReadOnlyClientID, envFile, stack.LogDir,
		s3, console, credentials, redactedHost(stack.DatabaseURL), redactedHost(stack.RedisURL),
		filepath.Join(filepath.Dir(envFile), "datastores.env"), c.OtherClientID, c.AdminClientID,
		nats, stack.NATSCredentials, c.OrgA.ID, c.OrgA.ClientID, c.OrgB.ID, c.OrgB.ClientID)
}

// redactedHost is where a datastore listens, without its credentials.
func redactedHost(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(unparsable URL)"
	}
	return u.Host
}
