package e2e

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/redis/go-redis/v9"

	registry "github.com/assetregistry/registry/sdk"
	"github.com/assetregistry/registry/tools/devinfra"
	"github.com/assetregistry/registry/tools/devstack"
	"github.com/assetregistry/registry/tools/testkit"
)

// make run's promises: it prints how to call the registry and writes
// registry.env; the documents service joins later without the rest waiting
// for it (checkDocumentsJoinLater); Ctrl-C stops every process it started;
// a second run reuses the data and the credentials.
func TestMakeRun(t *testing.T) {
	t.Parallel() // its own stack: its minute of starting overlaps the other slow tests
	if testing.Short() {
		t.Skip("starts two full stacks")
	}
	dir, err := devinfra.MkdirTemp("makerun-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	var ports []string
	for _, name := range devstack.PortNames() {
		p, err := devinfra.FreePort()
		if err != nil {
			t.Fatal(err)
		}
		ports = append(ports, fmt.Sprintf("%s=%d", name, p))
	}

	first, cmd := startMakeRun(t, dir, strings.Join(ports, ","), func(env makeRun, documentsJoined <-chan struct{}) {
		checkDocumentsJoinLater(t, env, documentsJoined)
	})
	rw := tokenFor(t, first)
	checkBoundClients(t, first)
	testkit.Expect(t, testkit.Client{BaseURL: first["REGISTRY_URL"]}.Do(t, "POST", "/organizations", rw,
		map[string]any{"name": "Kept AS", "registration_number": "kept-1", "organization_type": "private"}), 201)
	// Every catalog service runs behind the gateway: the assets service too.
	testkit.Expect(t, testkit.Client{BaseURL: first["REGISTRY_URL"]}.Do(t, "POST", "/asset_types", rw,
		map[string]any{"brand": "Kept", "model": "K1"}), 201)
	// While it runs: nobody gets into PostgreSQL or Redis without a
	// password, and the services connect as their own roles and users.
	access := readEnv(t, filepath.Join(dir, "datastores.env"), "PARTIES_DATABASE_URL", "IDP_DATABASE_URL", "PARTIES_REDIS_URL")
	if _, err := pgx.Connect(t.Context(), withoutPassword(t, access["PARTIES_DATABASE_URL"])); pgCode(err) != "28P01" {
		t.Errorf("PostgreSQL without a password: %v, want password authentication failed", err)
	}
	connectAs(t, access["PARTIES_DATABASE_URL"])
	opts, err := redis.ParseURL(withoutPassword(t, access["PARTIES_REDIS_URL"]))
	if err != nil {
		t.Fatal(err)
	}
	if err := redis.NewClient(opts).Ping(t.Context()).Err(); !refusedByRedis(err) {
		t.Errorf("Redis without a password: %v, want NOAUTH or WRONGPASS", err)
	}
	stopMakeRun(t, cmd, dir, first)

	// Every file holding a credential is the owner's alone, and Redis, a
	// cache of the registry's resources, left nothing on disk.
	secrets := map[string]string{}
	for _, name := range []string{"registry.env", "services.env", "datastores.env", "postgres.credentials", "redis.credentials", "minio.credentials", "idp/signing-key.pem"} {
		secrets[name] = readPrivateFile(t, filepath.Join(dir, name))
	}
	if entries, err := os.ReadDir(filepath.Join(dir, "redis")); err != nil || len(entries) != 0 {
		t.Errorf("Redis's working dir holds %d entries (%v), want none", len(entries), err)
	}
	_ = filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && (strings.HasSuffix(path, ".rdb") || strings.HasSuffix(path, ".aof") || strings.Contains(d.Name(), "appendonly")) {
			t.Errorf("a Redis file on disk: %s", path)
		}
		return nil
	})
	minioCreds := secrets["minio.credentials"]

	second, cmd := startMakeRun(t, dir, strings.Join(ports, ","), nil)
	for _, key := range makeRunKeys {
		if second[key] != first[key] {
			t.Errorf("a second make run changed %s", key)
		}
	}
	checkBoundClients(t, second)
	if readPrivateFile(t, filepath.Join(dir, "minio.credentials")) != minioCreds {
		t.Error("a second make run changed MinIO's root credentials")
	}
	for _, name := range []string{"postgres.credentials", "redis.credentials"} {
		if readPrivateFile(t, filepath.Join(dir, name)) != secrets[name] {
			t.Errorf("a second make run changed %s", name)
		}
	}
	if again := readEnv(t, filepath.Join(dir, "datastores.env"), "PARTIES_DATABASE_URL"); again["PARTIES_DATABASE_URL"] != access["PARTIES_DATABASE_URL"] {
		t.Error("a second make run changed the services' roles")
	}
	list := testkit.Expect(t, testkit.Client{BaseURL: second["REGISTRY_URL"]}.Do(t, "GET", "/organizations?registration_number=kept-1",
		tokenFor(t, second), nil), 200).List()
	if len(list) != 1 {
		t.Errorf("data of the first run is gone: %v", list)
	}
	stopMakeRun(t, cmd, dir, second)
}

type makeRun map[string]string

// makeRunKeys are what registry.env must hold: the contract's machine
// clients, and the two organizations with a client bound to each.
var makeRunKeys = []string{"REGISTRY_URL", "AUTH_URL", "RESOURCE", "CLIENT_ID", "CLIENT_SECRET",
	"READONLY_CLIENT_ID", "READONLY_CLIENT_SECRET", "OTHER_CLIENT_ID", "OTHER_CLIENT_SECRET", "ADMIN_CLIENT_ID", "ADMIN_CLIENT_SECRET",
	"ORG_A_ID", "ORG_A_CLIENT_ID", "ORG_A_CLIENT_SECRET", "ORG_B_ID", "ORG_B_CLIENT_ID", "ORG_B_CLIENT_SECRET"}

// startMakeRun runs the make run binary until everything has joined and
// returns its registry.env. whileJoining, when not nil, runs as soon as
// make run has said how to call, while the rest is still joining; the
// channel it is given is closed once the documents service has joined (or
// make run has stopped saying anything).
func startMakeRun(t *testing.T, dir, ports string, whileJoining func(env makeRun, documentsJoined <-chan struct{})) (makeRun, *exec.Cmd) {
	t.Helper()
	cmd := exec.Command(filepath.Join(bin, "devstack"), "-dir", dir, "-bin", bin, "-ports", ports)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = cmd.Stdout
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// A check that fails while it runs (whileJoining) stops the test
	// before stopMakeRun: nothing of it may outlive the test.
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	// It prints how to call as soon as the first call's parts answer, then
	// a line as each other part joins, and one when all have.
	usage := make(chan struct{})
	ready := make(chan string, 1)
	documentsJoined := make(chan struct{})
	go func() {
		var seen strings.Builder
		var saidUsage, documents sync.Once
		defer documents.Do(func() { close(documentsJoined) })
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			line := sc.Text()
			seen.WriteString(line + "\n")
			if strings.Contains(line, "did not start") {
				break
			}
			if strings.Contains(line, "Press Ctrl-C") {
				saidUsage.Do(func() { close(usage) })
			}
			if strings.HasPrefix(line, "documents joined after ") {
				documents.Do(func() { close(documentsJoined) })
			}
			if strings.Contains(line, "Everything has joined") {
				ready <- seen.String()
				_, _ = io.Copy(io.Discard, out)
				return
			}
		}
		ready <- "EXITED\n" + seen.String()
	}()
	deadline := time.After(3 * time.Minute)
	select {
	case <-usage:
		if whileJoining != nil {
			whileJoining(readEnv(t, filepath.Join(dir, "registry.env"), makeRunKeys...), documentsJoined)
		}
	case printed := <-ready: // it stopped before saying how to call
		ready <- printed
	case <-deadline:
		_ = cmd.Process.Kill()
		t.Fatal("make run did not say how to call")
	}
	select {
	case printed := <-ready:
		if strings.HasPrefix(printed, "EXITED") || !strings.Contains(printed, "/oidc/token") {
			t.Fatalf("make run did not start:\n%s", printed)
		}
		if usage, joined := strings.Index(printed, "Press Ctrl-C"), strings.Index(printed, " joined after "); usage < 0 || joined >= 0 && joined < usage {
			t.Errorf("make run said how to call only after the other services joined:\n%s", printed)
		}
		// The summary names the bound clients and their organizations.
		for _, key := range []string{"ORG_A_CLIENT_ID", "ORG_B_CLIENT_ID", "ORG_A_ID", "ORG_B_ID"} {
			if !strings.Contains(printed, key) {
				t.Errorf("make run's summary does not mention %s:\n%s", key, printed)
			}
		}
	case <-deadline:
		_ = cmd.Process.Kill()
		t.Fatal("make run did not get ready")
	}
	return readEnv(t, filepath.Join(dir, "registry.env"), makeRunKeys...), cmd
}

// checkDocumentsJoinLater holds make run on a fresh machine to its promise:
// the stack starts without waiting for the object store; until documents
// joins, its paths answer 503 with Retry-After (never another error), and
// the SDK's upload waits through the gateway's breaker's last 503s and
// lands once. The first make run is that machine, so the check rides on
// it rather than on a stack of its own.
func checkDocumentsJoinLater(t *testing.T, env makeRun, documentsJoined <-chan struct{}) {
	t.Helper()
	config := registry.Config{URL: env["REGISTRY_URL"], AuthURL: env["AUTH_URL"], Resource: env["RESOURCE"],
		ClientID: env["CLIENT_ID"], ClientSecret: env["CLIENT_SECRET"]}
	once := config
	once.MaxAttempts = 1
	c, err := registry.New(once)
	if err != nil {
		t.Fatal(err)
	}
	saw503 := false
	for joined := false; !joined; {
		select {
		case <-documentsJoined:
			joined = true
		default:
			_, err := c.GetDocument(t.Context(), "01890000-0000-7000-8000-000000000000")
			var p *registry.Problem
			switch {
			case registry.IsNotFound(err):
			case errors.As(err, &p) && p.Status == http.StatusServiceUnavailable && p.RetryAfter > 0:
				saw503 = true
			default:
				t.Fatalf("before documents joined: %v", err)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	t.Logf("saw a 503 while documents was starting: %v", saw503)
	retrying, err := registry.New(config)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	doc, err := retrying.Upload(ctx, "expert_control_report", "r.txt", bytes.NewReader([]byte("late report")))
	if err != nil || doc.Size != 11 {
		t.Fatalf("upload once documents joined: %+v, %v", doc, err)
	}
}

// stopMakeRun presses Ctrl-C and checks that nothing of the run remains.
func stopMakeRun(t *testing.T, cmd *exec.Cmd, dir string, env makeRun) {
	t.Helper()
	if err := cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("make run exited with %v after Ctrl-C", err)
		}
	case <-time.After(time.Minute):
		_ = cmd.Process.Kill()
		t.Fatal("make run did not stop after Ctrl-C")
	}
	for _, key := range []string{"REGISTRY_URL", "AUTH_URL"} {
		addr := strings.TrimPrefix(env[key], "http://")
		if conn, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
			conn.Close()
			t.Errorf("%s (%s) still answers after Ctrl-C", key, addr)
		}
	}
	if leftovers := processesMentioning(dir); len(leftovers) > 0 {
		t.Errorf("processes left behind: %v", leftovers)
	}
}

// processesMentioning lists the command lines that name dir (the
// datastores are started with their data directories).
func processesMentioning(dir string) []string {
	var found []string
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		raw, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil {
			continue
		}
		if cmdline := strings.ReplaceAll(string(raw), "\x00", " "); strings.Contains(cmdline, dir) {
			found = append(found, e.Name()+": "+cmdline)
		}
	}
	return found
}

// readPrivateFile reads a file that holds secrets and must be mode 0600.
func readPrivateFile(t *testing.T, path string) string {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o600 {
		t.Errorf("%s has mode %v; it holds secrets", path, fi.Mode().Perm())
	}
	return string(raw)
}

// readEnv reads a file of name=value lines that holds secrets (mode 0600)
// and must hold the named ones.
func readEnv(t *testing.T, path string, required ...string) makeRun {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o600 {
		t.Errorf("%s has mode %v; it holds secrets", path, fi.Mode().Perm())
	}
	env := makeRun{}
	for _, line := range strings.Split(string(raw), "\n") {
		if k, v, ok := strings.Cut(line, "="); ok && !strings.HasPrefix(k, "#") {
			env[k] = v
		}
	}
	for _, k := range required {
		if env[k] == "" {
			t.Errorf("%s lacks %s", path, k)
		}
	}
	return env
}

func tokenFor(t *testing.T, env makeRun) string {
	t.Helper()
	return clientToken(t, env, "")
}

// clientToken is a token of make run's client whose env keys start with
// prefix (CLIENT_ID with "", ORG_A_CLIENT_ID with "ORG_A_").
func clientToken(t *testing.T, env makeRun, prefix string) string {
	t.Helper()
	_, resp := postForm(t, env["AUTH_URL"]+"/oidc/token", url.Values{
		"grant_type": {"client_credentials"}, "client_id": {env[prefix+"CLIENT_ID"]}, "client_secret": {env[prefix+"CLIENT_SECRET"]}, "resource": {env["RESOURCE"]},
	})
	tok, _ := resp["access_token"].(string)
	if tok == "" {
		t.Fatalf("no token from make run's identity provider: %v", resp)
	}
	return tok
}

// checkBoundClients checks make run's two organizations and their bound
// clients: the organizations exist, ORG-A and ORG-B, and each client's
// tokens carry its organization's id in the claim org; the other clients
// are bound to none.
func checkBoundClients(t *testing.T, env makeRun) {
	t.Helper()
	if env["ORG_A_ID"] == env["ORG_B_ID"] || env["ORG_A_CLIENT_ID"] == env["ORG_B_CLIENT_ID"] {
		t.Errorf("the two organizations or their clients are one: %v", env)
	}
	registry := testkit.Client{BaseURL: env["REGISTRY_URL"]}
	for _, org := range []string{"ORG_A", "ORG_B"} {
		tok := clientToken(t, env, org+"_")
		if claim := unverifiedClaims(t, tok)["org"]; claim != env[org+"_ID"] {
			t.Errorf("%s_CLIENT_ID's token: org %v, want %s", org, claim, env[org+"_ID"])
		}
		got := testkit.Expect(t, registry.Do(t, "GET", "/organizations/"+env[org+"_ID"], tok, nil), 200).JSON()
		if got["registration_number"] != strings.ReplaceAll(org, "_", "-") {
			t.Errorf("%s_ID names %v", org, got)
		}
	}
	for _, prefix := range []string{"", "READONLY_", "OTHER_", "ADMIN_"} {
		if claim, bound := unverifiedClaims(t, clientToken(t, env, prefix))["org"]; bound {
			t.Errorf("%sCLIENT_ID is bound to %v, want none", prefix, claim)
		}
	}
}
