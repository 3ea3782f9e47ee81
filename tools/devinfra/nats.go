package devinfra

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/crypto/bcrypt"
)

// NatsOptions configures StartNats.
type NatsOptions struct {
	// DataDir is JetStream's store: streams survive restarts of the server.
	DataDir string
	// Port of the client protocol; 0 picks a free one.
	Port int
	// CredentialsFile holds the one user's name and password as NATS_USER
	// and NATS_PASSWORD lines (so `set -a; . file; set +a` gives the
	// services' variables): read when it exists, otherwise generated and
	// written with mode 0600. "" means DataDir + ".credentials".
	CredentialsFile string
	// LogFile receives server output; "" means DataDir + ".log".
	LogFile string
	// Cluster, when set, makes the server one node of a JetStream cluster
	// (StartNatsCluster sets it).
	Cluster *NatsClusterNode
	// MaxPayload is the largest message the server takes, in bytes; 0
	// means NatsMaxPayload. Tests set less to make an event unpublishable.
	MaxPayload int
}

// NatsClusterNode is a server's place in a cluster: its name, its route
// port and every node's route port (its own among them). The nodes log in
// to each other's routes as RouteUser with RoutePassword.
type NatsClusterNode struct {
	Name, ServerName string
	Port             int
	Routes           []int
	RoutePassword    string
}

// natsRouteUser is the user the nodes of a cluster log in to each other as.
const natsRouteUser = "route"

// NatsMaxPayload is the max_payload of the servers make run, the tests and
// the fault suite start: the largest message the registry publishes,
// outbox.MaxMessageSize (2 MiB), which this module cannot import (it
// imports nothing of the registry); tools/testkit's tests hold the two
// together. NATS's own default, 1 MiB, is below the registry's largest
// event.
const NatsMaxPayload = 2 << 20

// Nats is a running private NATS server with JetStream. Every connection
// must authenticate as User with Password.
type Nats struct {
	Port int
	Addr string // host:port
	// URL is nats://127.0.0.1:PORT, without credentials: clients pass
	// User and Password apart (the services' -nats.user, -nats.password).
	URL             string
	User, Password  string
	DataDir         string
	CredentialsFile string
	ConfigFile      string // the generated configuration (0600; the password only as a bcrypt hash)
	LogFile         string
	// MaxPayload is the server's max_payload; Restart applies a new one.
	MaxPayload int

	bin     string
	cluster *NatsClusterNode
	srv     *server
}

const (
	natsUser = "registry"
	// The names of the credentials in CredentialsFile: the services' own
	// environment variables.
	natsUserKey     = "NATS_USER"
	natsPasswordKey = "NATS_PASSWORD"
)

// StartNats starts a NATS server with JetStream on 127.0.0.1 and returns
// once it accepts an authenticated connection with JetStream on. It builds
// the pinned server first if it is not cached yet (see EnsureNatsServer).
func StartNats(ctx context.Context, o NatsOptions) (*Nats, error) {
	n, err := startNats(ctx, o)
	if err != nil {
		return nil, fmt.Errorf("start nats: %w", err)
	}
	return n, nil
}

func startNats(ctx context.Context, o NatsOptions) (*Nats, error) {
	dataDir, err := privateDataDir(o.DataDir)
	if err != nil {
		return nil, err
	}
	n := &Nats{DataDir: dataDir, LogFile: o.LogFile, CredentialsFile: o.CredentialsFile, ConfigFile: dataDir + ".conf", cluster: o.Cluster, MaxPayload: o.MaxPayload}
	if n.MaxPayload <= 0 {
		n.MaxPayload = NatsMaxPayload
	}
	if n.LogFile == "" {
		n.LogFile = dataDir + ".log"
	}
	if n.CredentialsFile == "" {
		n.CredentialsFile = dataDir + ".credentials"
	}
	if n.User, n.Password, err = natsCredentials(n.CredentialsFile); err != nil {
		return nil, err
	}
	if n.bin, err = EnsureNatsServer(ctx, os.Stderr); err != nil {
		return nil, err
	}
	return launchOnPort(o.Port, func(port int) (*Nats, error) {
		return n.launch(ctx, port)
	})
}

// NatsCredentials returns the user and password a private server started
// with this CredentialsFile will take, making them (as StartNats does)
// when the file is missing: a launcher hands them, and the server's
// address, to the services before the server runs (make run starts NATS
// after the first call's parts, whose relays connect once it is up).
func NatsCredentials(path string) (user, password string, err error) {
	return natsCredentials(path)
}

// natsCredentials reads the user and password, or generates and writes
// them. The stored streams do not depend on them, so a lost file costs
// nothing but a new password.
func natsCredentials(path string) (user, password string, err error) {
	values, err := readCredentials(path)
	if err == nil && values[natsUserKey] != "" && values[natsPasswordKey] != "" {
		return values[natsUserKey], values[natsPasswordKey], nil
	}
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return "", "", err
	}
	if password, err = NewSecret(); err != nil {
		return "", "", err
	}
	content := fmt.Sprintf("# The user of the private NATS server (JetStream).\n%s=%s\n%s=%s\n", natsUserKey, natsUser, natsPasswordKey, password)
	if err := writePrivateFile(path, content); err != nil {
		return "", "", fmt.Errorf("write credentials file: %w", err)
	}
	return natsUser, password, nil
}

// config is the server's configuration: loopback only, JetStream stored
// in DataDir, one user whose password appears only as a bcrypt hash.
// Quoted strings, because NATS reads an unquoted '$' as a variable.
func (n *Nats) config(port int) (string, error) {
	// The server checks the hash at every connect, on the test machine's
	// two busy cores: the lowest cost keeps a connect from taking seconds.
	// The password is a random 192-bit secret, which no cost factor
	// protects better; the hash only keeps it out of the file.
	hash, err := bcrypt.GenerateFromPassword([]byte(n.Password), bcrypt.MinCost)
	if err != nil {
		return "", fmt.Errorf("hash nats password: %w", err)
	}
	serverName := "registry-dev"
	if n.cluster != nil {
		serverName = n.cluster.ServerName
	}
	lines := []string{
		"server_name: " + strconv.Quote(serverName),
		"listen: " + strconv.Quote(loopback(port)),
		// The largest event the registry makes must pass (NatsMaxPayload).
		"max_payload: " + strconv.Itoa(n.MaxPayload),
		"jetstream {",
		"  store_dir: " + strconv.Quote(n.DataDir),
		// A development server: bounded, whatever the machine has.
		"  max_memory_store: 64MB",
		"  max_file_store: 4GB",
		"}",
		"authorization {",
		"  users: [ { user: " + strconv.Quote(n.User) + ", password: " + strconv.Quote(string(hash)) + " } ]",
		"}",
	}
	if os.Getenv("REGISTRY_NATS_MONITOR") != "" {
		// For counting what the server does per event (/varz, /connz,
		// /jsz): the monitoring port on a free loopback port, which the
		// server's log names ("Starting http monitor on").
		lines = append(lines, "http_port: -1")
	}
	if c := n.cluster; c != nil {
		// The routes' password is in the clear in the route URLs; the
		// file is 0600 and the routes listen on loopback only.
		routeHash, err := bcrypt.GenerateFromPassword([]byte(c.RoutePassword), bcrypt.MinCost)
		if err != nil {
			return "", fmt.Errorf("hash nats route password: %w", err)
		}
		var routes []string
		for _, p := range c.Routes {
			u := url.URL{Scheme: "nats-route", User: url.UserPassword(natsRouteUser, c.RoutePassword), Host: loopback(p)}
			routes = append(routes, strconv.Quote(u.String()))
		}
		lines = append(lines,
			"cluster {",
			"  name: "+strconv.Quote(c.Name),
			"  listen: "+strconv.Quote(loopback(c.Port)),
			"  authorization { user: "+strconv.Quote(natsRouteUser)+", password: "+strconv.Quote(string(routeHash))+" }",
			"  routes: [ "+strings.Join(routes, ", ")+" ]",
			"}",
		)
	} else {
		// A lone server needs no system account; a cluster's JetStream
		// (its meta group) does.
		lines = append(lines, "no_sys_acc: true")
	}
	return strings.Join(lines, "\n") + "\n", nil
}

func (n *Nats) launch(ctx context.Context, port int) (*Nats, error) {
	conf, err := n.config(port)
	if err != nil {
		return nil, err
	}
	if err := writePrivateFile(n.ConfigFile, conf); err != nil {
		return nil, fmt.Errorf("write nats config: %w", err)
	}
	// The server reads no environment of ours that could change it; an
	// empty environment keeps it that way.
	cmd := exec.Command(n.bin, "--config", n.ConfigFile)
	cmd.Env = []string{}
	srv, err := startServer("nats-server", cmd, n.LogFile)
	if err != nil {
		return nil, err
	}
	addr := loopback(port)
	if err := waitReady(ctx, srv, func(ctx context.Context) error { return pingNats(ctx, addr, n.User, n.Password) }); err != nil {
		return nil, err
	}
	n.Port, n.Addr, n.srv = port, addr, srv
	n.URL = (&url.URL{Scheme: "nats", Host: addr}).String()
	return n, nil
}

// pingNats speaks just enough of the NATS protocol to know the server
// takes the user and has JetStream on: INFO, CONNECT, PING, PONG.
func pingNats(ctx context.Context, addr, user, password string) error {
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return err
	}
	defer conn.Close()
	if deadline, ok := ctx.Deadline(); ok {
		_ = conn.SetDeadline(deadline)
	}
	lines := bufio.NewReader(conn)
	info, err := lines.ReadString('\n')
	if err != nil {
		return err
	}
	rest, ok := strings.CutPrefix(info, "INFO ")
	if !ok {
		return fmt.Errorf("nats greeted with %q", strings.TrimSpace(info))
	}
	var server struct {
		JetStream bool `json:"jetstream"`
	}
	if err := json.Unmarshal([]byte(rest), &server); err != nil {
		return fmt.Errorf("nats INFO: %w", err)
	}
	if !server.JetStream {
		return errors.New("nats answers without JetStream (yet)")
	}
	connect, err := json.Marshal(map[string]any{"user": user, "pass": password, "verbose": false, "pedantic": false, "protocol": 1})
	if err != nil {
		return err
	}
	if _, err := conn.Write([]byte("CONNECT " + string(connect) + "\r\nPING\r\n")); err != nil {
		return err
	}
	reply, err := lines.ReadString('\n')
	if err != nil {
		return err
	}
	switch reply = strings.TrimSpace(reply); {
	case reply == "PONG":
		return nil
	case strings.Contains(strings.ToLower(reply), "authorization"):
		return stopWaiting(fmt.Errorf("nats refused the password: %s", reply))
	default:
		return fmt.Errorf("CONNECT and PING answered %q", reply)
	}
}

// Stop shuts the server down (JetStream flushes its store) and waits for
// it to exit, killing it if it takes too long.
func (n *Nats) Stop() error { return n.srv.stop(syscall.SIGTERM) }

// Signal sends sig to the server (SIGSTOP pauses it, SIGCONT resumes).
func (n *Nats) Signal(sig syscall.Signal) error { return n.srv.signalGroup(sig) }

// Kill ends the server with SIGKILL (a crash) and waits for it to exit.
func (n *Nats) Kill() error { return n.srv.stop(syscall.SIGKILL) }

// Restart stops the server if it still runs and starts it again on the
// same port with the same user and store, which it recovers, and with
// MaxPayload as it is now.
func (n *Nats) Restart(ctx context.Context) error {
	if err := n.Stop(); err != nil {
		return err
	}
	if _, err := n.launch(ctx, n.Port); err != nil {
		return fmt.Errorf("restart nats: %w", err)
	}
	return nil
}
