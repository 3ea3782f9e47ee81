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
	"strings"
	"syscall"
	"time"

	"github.com/assetregistry/registry/pkg/catalog"
	"github.com/assetregistry/registry/tools/devinfra"
	"github.com/assetregistry/registry/tools/devstack"
)

func main() {
	dir := flag.String("dir", ".local", "state directory (data, keys, logs, registry.env); reused by the next run")
	bin := flag.String("bin", "bin", "directory with the built binaries")
	ports := devstack.DefaultPorts()
	flag.Var(ports, "ports", "ports to use as name=port,...; names: "+strings.Join(devstack.PortNames(), ", ")+
		" (unnamed ones keep their defaults: "+ports.String()+"; minio-console=0 turns the console off)")
	clusters := flag.Bool("clusters", false, "run the datastores as clusters: PostgreSQL with a synchronous standby, Redis with a replica and three Sentinels, three NATS nodes (as make cluster-faults does; ports of their own besides the primaries')")
	flag.Parse()
	if err := run(*dir, *bin, ports, *clusters); err != nil {
		fmt.Fprintln(os.Stderr, "make run:", err)
		os.Exit(1)
	}
}

func run(dir, bin string, ports devstack.Ports, clusters bool) error {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	// On a new machine MinIO is built from source, which takes minutes
	// once (make run starts that build early, in the background). Rather
	// than wait for it, everything else starts now; MinIO and the services
	// that need it join when the build is done, and until then the gateway
	// answers their paths with 503 and Retry-After.
	late := false
	if bin, err := devinfra.MinioServerPath(); err == nil {
		if _, err := os.Stat(bin); err != nil {
			late = true
		}
	}
	later := servicesNeeding(catalog.ObjectStore)
	if late {
		fmt.Printf("MinIO is not built yet (a few minutes, once per machine): starting everything else now; %s will join when it is built.\n",
			strings.Join(later, ", "))
	}
	if _, err := devinfra.EnsureNatsServer(ctx, os.Stderr); err != nil {
		return err
	}
	fmt.Printf("Starting PostgreSQL, Redis, MinIO, NATS, the identity provider, the services (%s) and the gateway...\n",
		strings.Join(catalog.Names(), ", "))
	startCtx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	stack, err := devstack.Start(startCtx, devstack.Options{
		Dir: dir, BinDir: bin, Ports: ports, Database: "registry", ObjectStoreLater: late, Clusters: clusters,
	})
	if err != nil {
		return err
	}
	envFile := filepath.Join(dir, "registry.env")
	creds, err := stack.EnsureClients(startCtx, envFile)
	if err != nil {
		return fmt.Errorf("%w (stopping: %v)", err, stack.Stop())
	}
	printUsage(creds, envFile, stack, late)
	if late {
		go waitForLate(ctx, stack, later)
	}
	<-ctx.Done()
	fmt.Println("\nStopping...")
	if err := stack.Stop(); err != nil {
		return err
	}
	fmt.Println("Stopped. Data is kept in", dir, "for the next make run.")
	return nil
}

// servicesNeeding names the services that need a datastore.
func servicesNeeding(store catalog.Datastore) []string {
	var out []string
	for _, svc := range catalog.Services {
		if svc.NeedsStore(store) {
			out = append(out, svc.Name)
		}
	}
	return out
}

// waitForLate says what the launcher is waiting for until the object store
// and its services have joined, then that they have.
func waitForLate(ctx context.Context, stack *devstack.Stack, services []string) {
	tick := time.NewTicker(time.Minute)
	defer tick.Stop()
	started := time.Now()
	for {
		select {
		case <-ctx.Done():
			return
		case err := <-stack.ObjectStoreReady:
			if err != nil {
				fmt.Fprintf(os.Stderr, "make run: MinIO or %s did not start: %v\n", strings.Join(services, ", "), err)
				return
			}
			fmt.Printf("MinIO is built and running; %s joined after %s: every path answers now.\n",
				strings.Join(services, ", "), time.Since(started).Round(time.Second))
			return
		case <-tick.C:
			fmt.Printf("still waiting for the MinIO build (%s so far); %s answer 503 with Retry-After until it is done\n",
				time.Since(started).Round(time.Second), strings.Join(services, ", "))
		}
	}
}

func printUsage(c devstack.Credentials, envFile string, stack *devstack.Stack, late bool) {
	console := stack.S3ConsoleURL
	if console == "" {
		console = "off"
	}
	s3, credentials := stack.S3Endpoint, stack.S3Credentials
	if late {
		s3, console, credentials = "(being built; joins when ready)", "-", "-"
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
		stack.NATS.URL, stack.NATSCredentials, c.OrgA.ID, c.OrgA.ClientID, c.OrgB.ID, c.OrgB.ClientID)
}

// redactedHost is where a datastore listens, without its credentials.
func redactedHost(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(unparsable URL)"
	}
	return u.Host
}
