package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/assetregistry/registry/pkg/auth"
	"github.com/assetregistry/registry/pkg/peer"
	"github.com/assetregistry/registry/pkg/process"
	"github.com/assetregistry/registry/pkg/refs"
	"github.com/assetregistry/registry/tools/devinfra"
	"github.com/assetregistry/registry/tools/devstack"
	"github.com/assetregistry/registry/tools/testkit"
)

// externalRegistry is a gateway and the parties service of their own,
// trusting ORY Hydra instead of the bundled identity provider, set up as
// docs/auth.md tells an operator to.
type externalRegistry struct {
	hydra      *devinfra.Hydra
	tokenURL   string // from Hydra's discovery document
	audience   string // the registry's address, as clients ask for it
	gateway    testkit.Client
	parties    testkit.Client // around the gateway
	partiesURL string
	secrets    map[string]string // client id -> secret
}

// TestExternalIssuer runs the registry against an OIDC implementation it was
// not written with (ORY Hydra, built from source by pkg/devinfra): JWT
// access tokens with scopes in an "scp" array, aud from the "audience"
// parameter, an issuer published with a trailing slash.
func TestExternalIssuer(t *testing.T) {
	t.Parallel() // its own issuer, gateway and parties
	r := startExternalRegistry(t)

	t.Run("read-write token creates and reads", func(t *testing.T) {
		rw := r.token(t, "hydra-rw", "registry:read registry:write")
		org := testkit.Expect(t, r.gateway.Do(t, "POST", "/organizations", rw, map[string]any{
			"name": "Hydra AS", "registration_number": "hydra-" + randomHex(), "organization_type": "private"}), 201).JSON()
		if org["created_by"] != "hydra-rw" {
			t.Errorf("created_by = %v, want the client id Hydra puts in sub", org["created_by"])
		}
		testkit.Expect(t, r.gateway.Do(t, "GET", "/organizations/"+org["id"].(string), rw, nil), 200)
		// A service reached around the gateway verifies Hydra's tokens itself.
		testkit.Expect(t, r.parties.Do(t, "GET", "/organizations/"+org["id"].(string), rw, nil), 200)
	})

	t.Run("read-only token reads but cannot write", func(t *testing.T) {
		ro := r.token(t, "hydra-ro", "registry:read")
		testkit.Expect(t, r.gateway.Do(t, "GET", "/organizations", ro, nil), 200)
		testkit.Expect(t, r.gateway.Do(t, "POST", "/organizations", ro, map[string]any{
			"name": "X", "registration_number": "ro-" + randomHex(), "organization_type": "private"}), 403)
	})

	t.Run("scopes come from the scp array", func(t *testing.T) {
		claims := unverifiedClaims(t, r.token(t, "hydra-rw", "registry:read registry:write"))
		if _, ok := claims["scope"]; ok || !slices.Equal(toStrings(claims["scp"]), []string{"registry:read", "registry:write"}) {
			t.Errorf("claims %v: want scp as an array and no scope claim (what this test is about)", claims)
		}
	})

	t.Run("Hydra grants only the scopes asked for", func(t *testing.T) {
		status, body := postForm(t, r.tokenURL, r.form("hydra-rw", "audience", r.audience))
		if status != 200 || body["scope"] != "" {
			t.Fatalf("token without scope: %d %v", status, body)
		}
		testkit.Expect(t, r.gateway.Do(t, "GET", "/organizations", body["access_token"].(string), nil), 403)
	})

	t.Run("an expired token is refused", func(t *testing.T) {
		short := r.token(t, "hydra-short", "registry:read")
		exp := time.Unix(int64(unverifiedClaims(t, short)["exp"].(float64)), 0)
		// The processes run with no leeway, so a second past exp is enough.
		time.Sleep(time.Until(exp.Add(1100 * time.Millisecond)))
		for _, c := range []testkit.Client{r.gateway, r.parties} {
			resp := testkit.Expect(t, c.Do(t, "GET", "/organizations", short, nil), 401)
			if got := resp.Header.Get("WWW-Authenticate"); !strings.Contains(got, "expired") {
				t.Errorf("WWW-Authenticate %q, want it to say the token expired", got)
			}
		}
	})

	t.Run("a tampered token is refused", func(t *testing.T) {
		ro := r.token(t, "hydra-ro", "registry:read")
		parts := strings.Split(ro, ".")
		payload, err := base64.RawURLEncoding.DecodeString(parts[1])
		if err != nil {
			t.Fatal(err)
		}
		widened := bytes.Replace(payload, []byte(`"scp":["registry:read"]`), []byte(`"scp":["registry:read","registry:write"]`), 1)
		if bytes.Equal(widened, payload) {
			t.Fatalf("payload %s has no scp to widen", payload)
		}
		forged := parts[0] + "." + base64.RawURLEncoding.EncodeToString(widened) + "." + parts[2]
		for _, c := range []testkit.Client{r.gateway, r.parties} {
			testkit.Expect(t, c.Do(t, "POST", "/organizations", forged, map[string]any{
				"name": "X", "registration_number": "forged-" + randomHex(), "organization_type": "private"}), 401)
		}
	})

	t.Run("a token for another audience is refused", func(t *testing.T) {
		status, body := postForm(t, r.tokenURL, r.form("hydra-elsewhere", "scope", "registry:read registry:write", "audience", "https://elsewhere.example"))
		if status != 200 {
			t.Fatalf("token: %d %v", status, body)
		}
		for _, c := range []testkit.Client{r.gateway, r.parties} {
			testkit.Expect(t, c.Do(t, "GET", "/organizations", body["access_token"].(string), nil), 401)
		}
	})

	t.Run("Hydra ignores resource: a token asked for with it alone has no audience", func(t *testing.T) {
		status, body := postForm(t, r.tokenURL, r.form("hydra-rw", "scope", "registry:read", "resource", r.audience))
		if status != 200 {
			t.Fatalf("token: %d %v", status, body)
		}
		resp := testkit.Expect(t, r.gateway.Do(t, "GET", "/organizations", body["access_token"].(string), nil), 401)
		if got := resp.Header.Get("WWW-Authenticate"); !strings.Contains(got, "not for audience") {
			t.Errorf("WWW-Authenticate %q, want it to name the audience", got)
		}
	})

	t.Run("a service's own client calls internal paths", func(t *testing.T) {
		rw := r.token(t, "hydra-rw", "registry:read registry:write")
		org := testkit.Expect(t, r.gateway.Do(t, "POST", "/organizations", rw, map[string]any{
			"name": "Internal AS", "registration_number": "internal-" + randomHex(), "organization_type": "public"}), 201).JSON()
		// pkg/peer as a service uses it: the client credentials grant with
		// the internal scope, the registry's address as resource and audience.
		peers, err := peer.NewClients(peer.Config{
			URLs:     map[string]*string{"parties": &r.partiesURL},
			TokenURL: r.tokenURL, ClientID: "hydra-svc", ClientSecret: r.secrets["hydra-svc"], Timeout: 10 * time.Second,
		}, r.hydra.Issuer, r.audience)
		if err != nil {
			t.Fatal(err)
		}
		id := uuid.MustParse(org["id"].(string))
		var found refs.ExistsResponse
		if err := peers.Get("parties").Call(t.Context(), "POST", refs.ExistsPath, refs.ExistsRequest{Kind: "organization", IDs: []uuid.UUID{id}}, &found); err != nil {
			t.Fatalf("internal call with the service's Hydra token: %v", err)
		}
		if len(found.Found) != 1 || found.Found[0].ID != id {
			t.Errorf("exists: %+v, want the organization", found)
		}
		// An integration's token is no key to internal paths.
		testkit.Expect(t, r.parties.Do(t, "POST", refs.ExistsPath, rw, refs.ExistsRequest{Kind: "organization", IDs: []uuid.UUID{id}}), 403)
	})

	t.Run("an issuer configured without the slash Hydra publishes stops the processes at start", func(t *testing.T) {
		unslashed := strings.TrimSuffix(r.hydra.Issuer, "/")
		want := fmt.Sprintf("names issuer %q, but oidc.issuer is %q", r.hydra.Issuer, unslashed)
		for _, name := range []string{"api-gateway", "parties"} {
			out, code := runToExit(t, name, "OIDC_ISSUER="+unslashed, "OIDC_AUDIENCE="+r.audience,
				"DATABASE_URL="+stack.DatabaseURL, "DATABASE_SCHEMA=parties_hydra", "RATE_LIMIT_ENABLED=false")
			if code == 0 || !strings.Contains(out, want) {
				t.Errorf("%s: exit %d, output:\n%s\nwant a failed start naming both issuers (%s)", name, code, out, want)
			}
		}
	})
}

// startExternalRegistry starts Hydra with a database of its own on the
// stack's PostgreSQL, registers the clients, and starts the gateway and
// parties trusting it.
func startExternalRegistry(t *testing.T) *externalRegistry {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Minute) // a cold build of Hydra takes minutes
	defer cancel()
	logs := t.TempDir()
	h, err := devinfra.StartHydra(ctx, devinfra.HydraOptions{
		DatabaseURL: createDatabase(t, "e2e_hydra_"+randomHex()), LogFile: filepath.Join(logs, "hydra.log"),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = h.Stop() })

	var meta struct {
		Issuer        string `json:"issuer"`
		TokenEndpoint string `json:"token_endpoint"`
	}
	if err := json.Unmarshal([]byte(get(t, h.PublicURL+"/.well-known/openid-configuration")), &meta); err != nil {
		t.Fatal(err)
	}
	if meta.Issuer != h.Issuer {
		t.Fatalf("Hydra publishes issuer %q, devinfra says %q", meta.Issuer, h.Issuer)
	}
	gatewayPort, partiesPort := freePort(t), freePort(t)
	r := &externalRegistry{
		hydra: h, tokenURL: meta.TokenEndpoint,
		audience:   "http://127.0.0.1:" + strconv.Itoa(gatewayPort),
		partiesURL: "http://127.0.0.1:" + strconv.Itoa(partiesPort),
		secrets:    map[string]string{},
	}
	r.gateway = testkit.Client{BaseURL: r.audience}
	r.parties = testkit.Client{BaseURL: r.partiesURL}

	registry := []string{r.audience}
	for _, c := range []devinfra.HydraClient{
		{ID: "hydra-rw", Scopes: []string{auth.ScopeRead, auth.ScopeWrite}, Audience: registry},
		{ID: "hydra-ro", Scopes: []string{auth.ScopeRead}, Audience: registry},
		{ID: "hydra-svc", Scopes: []string{auth.ScopeInternal}, Audience: registry},
		{ID: "hydra-elsewhere", Scopes: []string{auth.ScopeRead, auth.ScopeWrite}, Audience: []string{"https://elsewhere.example"}},
		{ID: "hydra-short", Scopes: []string{auth.ScopeRead}, Audience: registry, AccessTokenLifespan: 2 * time.Second},
	} {
		if r.secrets[c.ID], err = h.CreateClient(ctx, c); err != nil {
			t.Fatal(err)
		}
	}

	// No leeway, so that the expiry test need not wait 30 s past exp.
	oidc := []string{"OIDC_ISSUER=" + h.Issuer, "OIDC_AUDIENCE=" + r.audience, "OIDC_LEEWAY=0s"}
	startRegistryProcess(t, ctx, "parties", partiesPort, logs, append(oidc, "DATABASE_URL="+stack.DatabaseURL,
		"DATABASE_SCHEMA=parties_hydra", "REDIS_URL="+stack.RedisURL)...)
	startRegistryProcess(t, ctx, "api-gateway", gatewayPort, logs, append(oidc, "UPSTREAM_PARTIES="+r.partiesURL,
		"REDIS_URL="+stack.RedisURL, "RATE_LIMIT_KEY_PREFIX=api-gateway:hydra-"+randomHex()+":")...)
	return r
}

// token asks Hydra for a token as docs/auth.md says: the audience
// parameter, and the scopes named (Hydra grants only those).
func (r *externalRegistry) token(t *testing.T, client, scope string) string {
	t.Helper()
	status, body := postForm(t, r.tokenURL, r.form(client, "scope", scope, "audience", r.audience))
	if status != http.StatusOK {
		t.Fatalf("token for %s: %d %v", client, status, body)
	}
	return body["access_token"].(string)
}

func (r *externalRegistry) form(client string, kv ...string) url.Values {
	f := url.Values{"grant_type": {"client_credentials"}, "client_id": {client}, "client_secret": {r.secrets[client]}}
	for i := 0; i < len(kv); i += 2 {
		f.Add(kv[i], kv[i+1])
	}
	return f
}

// startRegistryProcess runs one of the registry's binaries on port until
// the test ends.
func startRegistryProcess(t *testing.T, ctx context.Context, name string, port int, logs string, env ...string) {
	t.Helper()
	var args []string
	if name != "api-gateway" {
		args = append(args, "serve")
	}
	cmd := exec.Command(filepath.Join(bin, name), args...)
	cmd.Env = append(os.Environ(), "HTTP_ADDR=127.0.0.1:"+strconv.Itoa(port),
		"METRICS_ADDR=127.0.0.1:"+strconv.Itoa(freePort(t)), "LOG_FORMAT=json")
	cmd.Env = append(cmd.Env, env...)
	p, err := devinfra.StartProcess(ctx, name, cmd, filepath.Join(logs, name+".log"),
		process.HTTPCheck("http://127.0.0.1:"+strconv.Itoa(port)+"/readyz"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Stop() })
}

// runToExit runs a registry binary that is expected to stop by itself and
// returns its output and exit code.
func runToExit(t *testing.T, name string, env ...string) (string, int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	var args []string
	if name != "api-gateway" {
		args = append(args, "serve")
	}
	cmd := exec.CommandContext(ctx, filepath.Join(bin, name), args...)
	cmd.Env = append(os.Environ(), "HTTP_ADDR=127.0.0.1:"+strconv.Itoa(freePort(t)),
		"METRICS_ADDR=127.0.0.1:"+strconv.Itoa(freePort(t)), "LOG_FORMAT=json")
	cmd.Env = append(cmd.Env, env...)
	out, err := cmd.CombinedOutput()
	if ctx.Err() != nil {
		return string(out) + "\n(still running after a minute: killed)", 0
	}
	code := 0
	if exit, ok := err.(*exec.ExitError); ok {
		code = exit.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return unescapeLog(out), code
}

// unescapeLog turns JSON log lines into their messages and errors, so that
// quotes in them read as quotes.
func unescapeLog(out []byte) string {
	var b strings.Builder
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		var line map[string]any
		if json.Unmarshal(sc.Bytes(), &line) != nil {
			b.WriteString(sc.Text() + "\n")
			continue
		}
		fmt.Fprintf(&b, "%v %v %v\n", line["level"], line["msg"], line["err"])
	}
	return b.String()
}

// createDatabase creates a database on the stack's PostgreSQL, dropped when
// the test ends, and returns its URL.
func createDatabase(t *testing.T, name string) string {
	t.Helper()
	conn, err := pgx.Connect(t.Context(), stack.DatabaseURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(t.Context(), "CREATE DATABASE "+pgx.Identifier{name}.Sanitize()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := devstack.DropDatabase(context.Background(), stack.DatabaseURL, name); err != nil {
			t.Errorf("drop database %s: %v", name, err)
		}
	})
	u, err := url.Parse(stack.DatabaseURL)
	if err != nil {
		t.Fatal(err)
	}
	u.Path = "/" + name
	return u.String()
}

func freePort(t *testing.T) int {
	t.Helper()
	p, err := devinfra.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func unverifiedClaims(t *testing.T, token string) jwt.MapClaims {
	t.Helper()
	var claims jwt.MapClaims
	if _, _, err := jwt.NewParser().ParseUnverified(token, &claims); err != nil {
		t.Fatal(err)
	}
	return claims
}

func toStrings(v any) []string {
	var out []string
	list, _ := v.([]any)
	for _, s := range list {
		str, _ := s.(string)
		out = append(out, str)
	}
	return out
}
