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
	flag.Parse()
	if err := run(*dir, *bin, ports); err != nil {
		fmt.Fprintln(os.Stderr, "make run:", err)
		os.Exit(1)
	}
}

func run(dir, bin string, ports devstack.Ports) error {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	// Outside the start timeout: on a new machine this builds MinIO from
	// source, which takes minutes once (make run starts that build early, in
	// the background; this waits for it).
	if _, err := devinfra.EnsureMinioServer(ctx, os.Stderr); err != nil {
		return err
	}
	if _, err := devinfra.EnsureNatsServer(ctx, os.Stderr); err != nil {
		return err
	}
	fmt.Printf("Starting PostgreSQL, Redis, MinIO, NATS, the identity provider, the services (%s) and the gateway...\n",
		strings.Join(catalog.Names(), ", "))
	startCtx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	stack, err := devstack.Start(startCtx, devstack.Options{
		Dir: dir, BinDir: bin, Ports: ports, Database: "registry",
	})
	if err != nil {
		return err
	}
	envFile := filepath.Join(dir, "registry.env")
	creds, err := stack.EnsureClients(startCtx, envFile)
	if err != nil {
		return fmt.Errorf("%w (stopping: %v)", err, stack.Stop())
	}
	printUsage(creds, envFile, stack)
	<-ctx.Done()
	fmt.Println("\nStopping...")
	if err := stack.Stop(); err != nil {
		return err
	}
	fmt.Println("Stopped. Data is kept in", dir, "for the next make run.")
	return nil
}

func printUsage(c devstack.Credentials, envFile string, stack *devstack.Stack) {
	console := stack.S3ConsoleURL
	if console == "" {
		console = "off"
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
		stack.S3Endpoint, console, stack.S3Credentials, redactedHost(stack.DatabaseURL), redactedHost(stack.RedisURL),
		filepath.Join(filepath.Dir(envFile), "datastores.env"), c.OtherClientID, c.AdminClientID,
		stack.NATS.URL, stack.NATSCredentials)
}

// redactedHost is where a datastore listens, without its credentials.
func redactedHost(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(unparsable URL)"
	}
	return u.Host
}
