package charttest

import (
	"encoding/json"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/assetregistry/registry/pkg/catalog"
	"github.com/assetregistry/registry/tools/deploygen"
)

// Every test and most subtests run in parallel: they share only the
// read-only workspace below, and most of their time is helm and
// kubectl-validate processes starting and reading charts.
var (
	repoRoot, _ = filepath.Abs("../..")
	wsOnce      sync.Once
	ws          *Workspace
	wsErr       error
	wsDir       string
)

func TestMain(m *testing.M) {
	code := m.Run()
	if wsDir != "" {
		os.RemoveAll(wsDir)
	}
	os.Exit(code)
}

func deployables() []string {
	var names []string
	for _, d := range catalog.Deployables() {
		names = append(names, d.Name)
	}
	return names
}

// workspace is the package's one copy of the charts, built on first use.
func workspace(t *testing.T) *Workspace {
	t.Helper()
	wsOnce.Do(func() {
		tools, err := FindTools(repoRoot)
		if err != nil {
			wsErr = err
			return
		}
		if wsDir, err = os.MkdirTemp("", "charttest-"); err != nil {
			wsErr = err
			return
		}
		ws, wsErr = NewWorkspace(repoRoot, wsDir, tools, deployables())
	})
	if wsErr != nil {
		t.Fatal(wsErr)
	}
	return ws
}

func envFile(env string) string { return "charts/registry/values-" + env + ".yaml" }

func namespace(env string) string { return "registry-" + env }

func TestLintEveryChartWithEveryValuesFile(t *testing.T) {
	t.Parallel()
	w := workspace(t)
	charts := append(deployables(), deploygen.Umbrella)
	for _, chart := range charts {
		for _, env := range deploygen.Environments {
			t.Run(chart+"/"+env, func(t *testing.T) {
				t.Parallel()
				if _, err := w.Helm("lint", "--strict", "charts/"+chart, "--values", envFile(env)); err != nil {
					t.Error(err)
				}
			})
		}
	}
	if _, err := w.Helm("lint", "--strict", "charts/"+deploygen.LibraryChart); err != nil {
		t.Error(err)
	}
}

func TestLibraryUnitSuites(t *testing.T) {
	t.Parallel()
	w := workspace(t)
	if _, err := w.Helm("unittest", "--strict", "charts/registry-lib/tests/fixture"); err != nil {
		t.Error(err)
	}
}

// rendered holds the manifests render validated, by environment and
// --set flags: several tests render the same umbrella, and a render
// and its validation cost seconds of CPU each.
var rendered sync.Map // string → []byte

// render renders the umbrella for env, validates it and returns its objects
// (parsed afresh for each caller, which may change them). A render with
// --set flags validates only the objects they changed: the others are the
// environment's own render's, validated with it, and validating the whole
// umbrella again for each of some twenty variants was a third of the
// package's CPU.
func render(t *testing.T, env string, sets ...string) []Doc {
	t.Helper()
	key := strings.Join(append([]string{env}, sets...), "\x00")
	out, ok := rendered.Load(key)
	if !ok {
		w := workspace(t)
		manifests, err := w.Template("charts/registry", namespace(env), []string{envFile(env)}, sets...)
		if err != nil {
			t.Fatal(err)
		}
		changed := manifests
		if len(sets) > 0 {
			if changed, err = ChangedObjects(render(t, env), manifests); err != nil {
				t.Fatal(err)
			}
		}
		if len(changed) > 0 {
			if err := w.Validate("registry-"+env, changed); err != nil {
				t.Fatal(err)
			}
		}
		out, _ = rendered.LoadOrStore(key, manifests)
	}
	docs, err := Docs(out.([]byte))
	if err != nil {
		t.Fatal(err)
	}
	return docs
}

func TestEveryEnvironment(t *testing.T) {
	t.Parallel()
	for _, env := range deploygen.Environments {
		t.Run(env, func(t *testing.T) {
			docs := render(t, env)
			checkEveryDeployable(t, docs)
			checkContainers(t, docs)
			checkCredentials(t, docs)
			checkReachability(t, docs)
			if env == "prod" {
				checkProductionShape(t, docs)
				checkProductionDatastores(t, docs)
				checkIstio(t, docs)
				checkObservability(t, docs)
			}
		})
	}
	t.Run("prod with linkerd", func(t *testing.T) {
		docs := render(t, "prod", "global.mesh.provider=linkerd")
		checkContainers(t, docs)
		for _, name := range deployables() {
			if find(docs, "Server", name+"-http") == nil || find(docs, "AuthorizationPolicy", name+"-http") == nil {
				t.Errorf("%s: no Linkerd Server and AuthorizationPolicy for its API", name)
			}
		}
	})
}

// TestEachChartAloneMatchesTheUmbrella installs-renders every deployable's
// chart alone with an environment's umbrella values file, as a team that
// deploys its service by itself does, and checks that it renders exactly
// the objects the umbrella renders for it. Those objects are validated
// with the umbrella (render), so equal objects need no validation of
// their own.
func TestEachChartAloneMatchesTheUmbrella(t *testing.T) {
	t.Parallel()
	w := workspace(t)
	for _, env := range deploygen.Environments {
		umbrella := render(t, env)
		for _, name := range deployables() {
			t.Run(env+"/"+name, func(t *testing.T) {
				out, err := w.Template("charts/"+name, namespace(env), []string{envFile(env)})
				if err != nil {
					t.Fatal(err)
				}
				alone, err := Docs(out)
				if err != nil {
					t.Fatal(err)
				}
				var mine []Doc
				for _, d := range umbrella {
					if Get(d, "metadata", "labels", "app.kubernetes.io/name") == name {
						mine = append(mine, d)
					}
				}
				if len(alone) == 0 || !reflect.DeepEqual(byKey(alone), byKey(mine)) {
					t.Errorf("charts/%s alone renders %d objects that differ from the umbrella's %d", name, len(alone), len(mine))
				}
			})
		}
	}
}

func TestSchemaRefusesBadValues(t *testing.T) {
	t.Parallel()
	w := workspace(t)
	// chart is the deployable's chart that must refuse the case alone: the
	// one whose block it names (a chart ignores other deployables' blocks,
	// whose own charts check them); the environment's values and unknown
	// blocks are refused by every chart. "" for the umbrella's own values
	// (datastores), which every deployable's chart ignores.
	cases := []struct{ name, values, chart string }{
		{"misspelt deployable value", "parties:\n  replica: 2\n", "parties"},
		{"misspelt nested value", "parties:\n  autoscaling:\n    enable: true\n", "parties"},
		{"misspelt environment value", "global:\n  networkPolicies:\n    enabled: false\n", "parties"},
		{"misspelt environment value in another chart", "global:\n  networkPolicies:\n    enabled: false\n", "api-gateway"},
		{"unknown deployable", "spaceships:\n  replicas: 2\n", "parties"},
		{"wrong type", "api-gateway:\n  replicas: two\n", "api-gateway"},
		{"a chart's value at the umbrella's top level", "replicas: two\n", "parties"},
		{"misspelt top-level value of a chart", "replica: 2\n", "parties"},
		{"zero replicas", "idp:\n  replicas: 0\n", "idp"},
		{"bad quantity", "parties:\n  resources:\n    limits:\n      memory: lots\n", "parties"},
		{"unknown mesh", "global:\n  mesh:\n    provider: consul\n", "parties"},
		{"credential as a plain value", "parties:\n  extraEnv:\n    DATABASE_URL: postgres://u:p@db/x\n", "parties"},
		{"value of another kind", "parties:\n  rateLimit:\n    default: 5/1s\n", "parties"},
		{"a budget without its window", "api-gateway:\n  rateLimit:\n    default: \"6000\"\n", "api-gateway"},
		{"a client's budget misspelt", "api-gateway:\n  rateLimit:\n    clients:\n      importer: lots\n", "api-gateway"},
		{"the old per-second setting", "api-gateway:\n  rateLimit:\n    perSecond: 50\n", "api-gateway"},
		{"an item budget without its window", "api-gateway:\n  rateLimit:\n    items: \"120000\"\n", "api-gateway"},
		{"a token validity interval without its unit", "global:\n  oidc:\n    tokenValidityInterval: \"1\"\n", "parties"},
		{"no public address", "global:\n  publicURL: registry.example.com\n", "parties"},
		{"a deadline without its unit", "api-gateway:\n  upstream:\n    timeout: \"20\"\n", "api-gateway"},
		{"a route's deadline misspelt", "api-gateway:\n  upstream:\n    routes:\n      compliance:\n        timout: 40s\n", "api-gateway"},
		{"upstream deadlines on a service", "parties:\n  upstream:\n    timeout: 20s\n", "parties"},
		{"a probe budget without its window", "api-gateway:\n  rateLimit:\n    probes: \"120\"\n", "api-gateway"},
		{"a peer breaker without its unit", "actions:\n  peerBreaker:\n    openFor: \"5\"\n", "actions"},
		{"a compliance roll without its unit", "actions:\n  compliance:\n    rollEvery: \"1\"\n", "actions"},
		{"an empty compliance zone", "actions:\n  compliance:\n    zone: \"\"\n", "actions"},
		{"a misspelt datastore value", "datastores:\n  postgres:\n    instance: 3\n", ""},
		{"too few sentinels", "datastores:\n  redis:\n    sentinels: 1\n", ""},
		{"a sentinel without its port", "global:\n  redis:\n    sentinel:\n      addrs: [rfs-registry-redis]\n", "parties"},
		{"a whole private range as the ingress", "global:\n  ingress:\n    proxyCIDRs: [10.0.0.0/8]\n", "idp"},
		{"a whole private range as the gateway's proxies", "api-gateway:\n  rateLimit:\n    trustedProxies: [10.0.0.0/8]\n", "api-gateway"},
		{"an ingress named by host", "global:\n  ingress:\n    proxyCIDRs: [ingress.local]\n", "api-gateway"},
	}
	dir := t.TempDir()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel() // each case writes its own values file
			file := filepath.Join(dir, strings.ReplaceAll(c.name, " ", "-")+".yaml")
			if err := os.WriteFile(file, []byte(c.values), 0o644); err != nil {
				t.Fatal(err)
			}
			_, err := w.Template("charts/registry", "registry-dev", []string{envFile("dev"), file})
			if err == nil {
				t.Fatalf("the umbrella accepted:\n%s", c.values)
			}
			if !strings.Contains(err.Error(), "schema") {
				t.Errorf("refused, but not by the schema: %v", err)
			}
			if c.chart == "" {
				return // the umbrella's own values: a deployable's chart ignores them
			}
			if _, err := w.Template("charts/"+c.chart, "registry-dev", []string{envFile("dev"), file}); err == nil {
				t.Errorf("charts/%s alone accepted:\n%s", c.chart, c.values)
			} else if !strings.Contains(err.Error(), "schema") {
				t.Errorf("charts/%s alone refused, but not by the schema: %v", c.chart, err)
			}
		})
	}
	t.Run("an environment file is complete", func(t *testing.T) {
		if _, err := w.Template("charts/registry", "registry-dev", nil); err == nil {
			t.Error("the umbrella rendered without global.publicURL and global.oidc.issuer")
		}
	})
}

// The actions service's compliance calendar reaches its environment
// (COMPLIANCE_ZONE, COMPLIANCE_ROLL_EVERY), UTC and 1 s unless set, and no
// other deployable's.
func TestComplianceCalendar(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, zone, every string
		sets              []string
	}{
		{name: "defaults", zone: "UTC", every: "1s"},
		{name: "an operator's zone", zone: "Europe/Berlin", every: "5s",
			sets: []string{"actions.compliance.zone=Europe/Berlin", "actions.compliance.rollEvery=5s"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			docs := render(t, "prod", c.sets...)
			for _, name := range deployables() {
				data := Get(find(docs, "ConfigMap", name), "data")
				zone, every := Get(data, "COMPLIANCE_ZONE"), Get(data, "COMPLIANCE_ROLL_EVERY")
				if name != "actions" {
					if zone != nil || every != nil {
						t.Errorf("%s: COMPLIANCE_ZONE %v, COMPLIANCE_ROLL_EVERY %v: only the actions service rolls compliance", name, zone, every)
					}
					continue
				}
				if zone != c.zone || every != c.every {
					t.Errorf("actions: COMPLIANCE_ZONE %v, COMPLIANCE_ROLL_EVERY %v; want %s, %s", zone, every, c.zone, c.every)
				}
			}
		})
	}
}

// The gateway's budgets live in Redis: an environment without Redis must
// say that it runs without limits, rather than get a gateway that cannot
// start; saying so renders, with limits off.
func TestRateLimitsNeedRedis(t *testing.T) {
	t.Parallel()
	w := workspace(t)
	_, err := w.Template("charts/registry", "registry-dev", []string{envFile("prod")}, "global.redis.enabled=false")
	if err == nil || !strings.Contains(err.Error(), "rateLimit.enabled needs global.redis.enabled") {
		t.Errorf("limits on without Redis: %v, want a refusal saying why", err)
	}
	out, err := w.Template("charts/registry", "registry-dev", []string{envFile("prod")},
		"global.redis.enabled=false", "api-gateway.rateLimit.enabled=false")
	if err != nil {
		t.Fatal(err)
	}
	docs, err := Docs(out)
	if err != nil {
		t.Fatal(err)
	}
	if got := Get(find(docs, "ConfigMap", "api-gateway"), "data", "RATE_LIMIT_ENABLED"); got != "false" {
		t.Errorf("RATE_LIMIT_ENABLED = %v, want false", got)
	}
}

// The gateway's deadlines are settable per route (by resource) and its
// breakers and /readyz budget by value; each reaches the binary as the
// environment it reads, and the services' peer breakers too.
func TestUpstreamDeadlinesAndBreakers(t *testing.T) {
	t.Parallel()
	docs := render(t, "prod", "api-gateway.upstream.timeout=25s", "api-gateway.upstream.routes.compliance.timeout=40s",
		"api-gateway.upstream.routes.documents.idleTimeout=2m", "api-gateway.upstream.routes.events.timeout=30s",
		"api-gateway.upstream.breaker.failures=3", "api-gateway.rateLimit.probes=60/60s", "actions.peerBreaker.openFor=10s")
	gateway := find(docs, "ConfigMap", "api-gateway")
	for key, want := range map[string]string{
		"UPSTREAM_TIMEOUT": "25s", "UPSTREAM_IDLE_TIMEOUT": "30s",
		"UPSTREAM_ROUTE_TIMEOUTS": "compliance=40s,events=30s", "UPSTREAM_ROUTE_IDLE_TIMEOUTS": "documents=2m",
		"UPSTREAM_BREAKER_FAILURES": "3", "UPSTREAM_BREAKER_OPEN_FOR": "5s", "RATE_LIMIT_PROBES": "60/60s",
	} {
		if got := Get(gateway, "data", key); got != want {
			t.Errorf("api-gateway %s = %v, want %s", key, got, want)
		}
	}
	for name, want := range map[string]string{"actions": "10s", "assets": "5s"} {
		cm := find(docs, "ConfigMap", name)
		if got := Get(cm, "data", "PEER_BREAKER_OPEN_FOR"); got != want {
			t.Errorf("%s PEER_BREAKER_OPEN_FOR = %v, want %s", name, got, want)
		}
		if got := Get(cm, "data", "PEER_BREAKER_FAILURES"); got != "5" {
			t.Errorf("%s PEER_BREAKER_FAILURES = %v, want 5", name, got)
		}
	}
	// The events service calls the assets service for its copy of who
	// sees which asset (catalog.Service.Reads).
	if got := Get(find(docs, "ConfigMap", "events"), "data", "PEER_BREAKER_FAILURES"); got != "5" {
		t.Errorf("events reads the assets service, yet PEER_BREAKER_FAILURES = %v, want 5", got)
	}
}

// The gateway and every service follow the in-cluster identity
// provider's token validity list (revocation), every few seconds, with a
// bound on its age that outlasts an outage of the identity provider; the
// identity provider itself verifies no tokens. The
// gateway gets its batch item budgets.
func TestTokenValidityAndItemBudgets(t *testing.T) {
	t.Parallel()
	docs := render(t, "prod")
	for _, name := range deployables() {
		cm := find(docs, "ConfigMap", name)
		url, interval, maxAge := Get(cm, "data", "OIDC_TOKEN_VALIDITY_URL"), Get(cm, "data", "OIDC_TOKEN_VALIDITY_INTERVAL"), Get(cm, "data", "OIDC_TOKEN_VALIDITY_MAX_AGE")
		if name == catalog.IdentityProvider.Name {
			if url != nil || interval != nil {
				t.Errorf("idp: OIDC_TOKEN_VALIDITY_URL %v: the identity provider verifies no tokens", url)
			}
			continue
		}
		if url != "http://idp:8080/oidc/token-validity" || interval != "1s" || maxAge != "24h" {
			t.Errorf("%s: OIDC_TOKEN_VALIDITY_URL %v, _INTERVAL %v, _MAX_AGE %v; want the in-cluster list, 1s, 24h (an issuer outage stops no call)", name, url, interval, maxAge)
		}
	}
	gw := find(docs, "ConfigMap", catalog.Gateway.Name)
	if got := Get(gw, "data", "RATE_LIMIT_ITEMS"); got != "120000/60s" {
		t.Errorf("RATE_LIMIT_ITEMS = %v", got)
	}
	if got := Get(gw, "data", "RATE_LIMIT_CLIENT_ITEMS"); got != "inspection-importer=600000/60s" {
		t.Errorf("RATE_LIMIT_CLIENT_ITEMS = %v", got)
	}
	// While Redis is away each replica keeps a client to its share of the
	// budget: the share of the fewest replicas the autoscaler runs.
	if got := Get(gw, "data", "RATE_LIMIT_REPLICAS"); got != "3" {
		t.Errorf("RATE_LIMIT_REPLICAS = %v, want 3 (the autoscaler's minimum)", got)
	}
	// The organization rule is each service's (a service reached around
	// the gateway holds it too): off unless the operator sets it.
	required := render(t, "prod", "global.tenancy.requireOrganization=true")
	for _, name := range deployables() {
		off, on := Get(find(docs, "ConfigMap", name), "data", "TENANCY_REQUIRE_ORGANIZATION"), Get(find(required, "ConfigMap", name), "data", "TENANCY_REQUIRE_ORGANIZATION")
		if _, service := catalog.Lookup(name); !service {
			if off != nil || on != nil {
				t.Errorf("%s: TENANCY_REQUIRE_ORGANIZATION %v / %v; only the services hold the rule", name, off, on)
			}
		} else if off != "false" || on != "true" {
			t.Errorf("%s: TENANCY_REQUIRE_ORGANIZATION %v by default and %v when required; want false and true", name, off, on)
		}
	}
	external := render(t, "prod", "global.oidc.inClusterIdP=false")
	if got := Get(find(external, "ConfigMap", "parties"), "data", "OIDC_TOKEN_VALIDITY_URL"); got != nil {
		t.Errorf("with an external issuer, OIDC_TOKEN_VALIDITY_URL = %v; want discovery to say", got)
	}
}

// The gateway and the identity provider believe X-Forwarded-For from the
// ingress's pods alone: production names them (global.ingress.proxyCIDRs)
// and both get the same networks, none of them a whole private range that
// callers inside the cluster could forge it from; without an ingress
// value, nobody is believed.
func TestTrustedProxiesAreTheIngress(t *testing.T) {
	t.Parallel()
	for env, want := range map[string]string{"prod": "10.42.250.0/24", "dev": ""} {
		docs := render(t, env)
		gateway := Get(find(docs, "ConfigMap", catalog.Gateway.Name), "data", "RATE_LIMIT_TRUSTED_PROXIES")
		idp := Get(find(docs, "ConfigMap", catalog.IdentityProvider.Name), "data", "TRUSTED_PROXIES")
		if gateway != want || idp != want {
			t.Errorf("%s: the gateway trusts %q and the identity provider %q, want both %q", env, gateway, idp, want)
		}
		for _, network := range strings.Split(toString(gateway)+","+toString(idp), ",") {
			if network == "" {
				continue
			}
			p, err := netip.ParsePrefix(network)
			if err != nil || p.Addr().Is4() && p.Bits() < 16 || p.Addr().Is6() && p.Bits() < 48 {
				t.Errorf("%s: trusted proxy network %q is wider than an ingress's pods (%v)", env, network, err)
			}
		}
	}
	docs := render(t, "prod", "api-gateway.rateLimit.trustedProxies[0]=192.168.7.0/24")
	if got := Get(find(docs, "ConfigMap", catalog.Gateway.Name), "data", "RATE_LIMIT_TRUSTED_PROXIES"); got != "10.42.250.0/24,192.168.7.0/24" {
		t.Errorf("the gateway's own proxies beside the ingress: %v", got)
	}
}

func find(docs []Doc, kind, name string) Doc {
	for _, d := range docs {
		if d.Kind() == kind && d.Name() == name {
			return d
		}
	}
	return nil
}

func kinds(docs []Doc, kind string) []Doc {
	var out []Doc
	for _, d := range docs {
		if d.Kind() == kind {
			out = append(out, d)
		}
	}
	return out
}

func checkEveryDeployable(t *testing.T, docs []Doc) {
	t.Helper()
	for _, name := range deployables() {
		for _, kind := range []string{"Deployment", "Service", "ServiceAccount", "ConfigMap", "PodDisruptionBudget", "NetworkPolicy"} {
			if find(docs, kind, name) == nil {
				t.Errorf("%s: no %s", name, kind)
			}
		}
	}
	for _, s := range catalog.Services {
		if slices.Contains(s.Needs, catalog.Postgres) && find(docs, "Job", s.Name+"-migrate") == nil {
			t.Errorf("%s: no migration Job", s.Name)
		}
	}
}

// podSpecs returns the pod templates of Deployments and Jobs by object.
func podSpecs(docs []Doc) map[string]map[string]any {
	out := map[string]map[string]any{}
	for _, d := range docs {
		if d.Kind() == "Deployment" || d.Kind() == "Job" {
			if spec, ok := Get(d, "spec", "template", "spec").(map[string]any); ok {
				out[d.key()] = spec
			}
		}
	}
	return out
}

func checkContainers(t *testing.T, docs []Doc) {
	t.Helper()
	for obj, spec := range podSpecs(docs) {
		if Get(spec, "securityContext", "runAsNonRoot") != true {
			t.Errorf("%s: pod may run as root", obj)
		}
		if uid, _ := Get(spec, "securityContext", "runAsUser").(int); uid == 0 {
			t.Errorf("%s: runAsUser is root or unset", obj)
		}
		containers, _ := spec["containers"].([]any)
		if len(containers) == 0 {
			t.Errorf("%s: no containers", obj)
		}
		for i := range containers {
			c := Get(containers, i)
			sc := Get(c, "securityContext")
			if Get(sc, "readOnlyRootFilesystem") != true || Get(sc, "allowPrivilegeEscalation") != false ||
				Get(sc, "privileged") != false || Get(sc, "runAsNonRoot") != true {
				t.Errorf("%s: container security context %v", obj, sc)
			}
			if drop, _ := Get(sc, "capabilities", "drop").([]any); !slices.Contains(drop, any("ALL")) {
				t.Errorf("%s: capabilities not all dropped", obj)
			}
			for _, p := range [][]any{{"requests", "cpu"}, {"requests", "memory"}, {"limits", "memory"}} {
				if v, _ := Get(c, append([]any{"resources"}, p...)...).(string); v == "" {
					t.Errorf("%s: no resources.%v", obj, p)
				}
			}
		}
	}
	for _, d := range kinds(docs, "Deployment") {
		c := Get(d, "spec", "template", "spec", "containers", 0)
		if Get(c, "livenessProbe", "httpGet", "path") != "/healthz" || Get(c, "readinessProbe", "httpGet", "path") != "/readyz" {
			t.Errorf("%s: liveness must be /healthz and readiness /readyz", d.Name())
		}
		cm := find(docs, "ConfigMap", d.Name())
		delay := seconds(t, Get(cm, "data", "SHUTDOWN_DELAY"))
		timeout := seconds(t, Get(cm, "data", "SHUTDOWN_TIMEOUT"))
		preStop, _ := Get(c, "lifecycle", "preStop", "sleep", "seconds").(int)
		grace, _ := Get(d, "spec", "template", "spec", "terminationGracePeriodSeconds").(int)
		if preStop <= 0 {
			t.Errorf("%s: no preStop pause before SIGTERM", d.Name())
		}
		if grace < preStop+delay+timeout {
			t.Errorf("%s: grace %ds is shorter than preStop %ds + delay %ds + drain %ds", d.Name(), grace, preStop, delay, timeout)
		}
	}
}

func seconds(t *testing.T, v any) int {
	t.Helper()
	s, _ := v.(string)
	n, err := strconv.Atoi(strings.TrimSuffix(s, "s"))
	if err != nil {
		t.Errorf("duration %q is not whole seconds", s)
	}
	return n
}

var (
	credentialEnv = []string{"DATABASE_URL", "DATABASE_READ_URL", "DATABASE_DIRECT_URL", "REDIS_URL", "REDIS_SENTINEL_PASSWORD",
		"S3_ACCESS_KEY", "S3_SECRET_KEY", "PEER_CLIENT_ID", "PEER_CLIENT_SECRET", "TRANSPARENCY_SIGNING_KEY"}
	urlWithSecrets = regexp.MustCompile(`://[^/@\s]+:[^/@\s]+@`)
)

func checkCredentials(t *testing.T, docs []Doc) {
	t.Helper()
	for _, cm := range kinds(docs, "ConfigMap") {
		data, _ := cm["data"].(map[string]any)
		for k, v := range data {
			if slices.Contains(credentialEnv, k) || urlWithSecrets.MatchString(fmt.Sprint(v)) {
				t.Errorf("ConfigMap %s holds a credential: %s", cm.Name(), k)
			}
		}
	}
	for obj, spec := range podSpecs(docs) {
		containers, _ := spec["containers"].([]any)
		for i := range containers {
			env, _ := Get(containers, i, "env").([]any)
			for _, e := range env {
				name, _ := Get(e, "name").(string)
				if slices.Contains(credentialEnv, name) && Get(e, "valueFrom", "secretKeyRef", "name") == nil {
					t.Errorf("%s: %s is not read from a Secret", obj, name)
				}
				if slices.Contains(credentialEnv, name) && Get(e, "value") != nil {
					t.Errorf("%s: %s is a plain value", obj, name)
				}
			}
		}
	}
}

// checkReachability: the namespace is default-deny, a service's API is
// reached by the gateway and its peers only, and the gateway reaches every
// service.
func checkReachability(t *testing.T, docs []Doc) {
	t.Helper()
	deny := find(docs, "NetworkPolicy", "registry-default-deny")
	if deny == nil || !reflect.DeepEqual(Get(deny, "spec", "podSelector"), map[string]any{}) {
		t.Error("no namespace-wide default-deny NetworkPolicy")
	}
	for _, s := range catalog.Services {
		np := find(docs, "NetworkPolicy", s.Name)
		want := append([]string{"api-gateway"}, s.Peers()...)
		got := Get(np, "spec", "ingress", 0, "from", 0, "podSelector", "matchExpressions", 0, "values")
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("%s's API is reachable from %v, want the gateway and its peers %v", s.Name, got, want)
		}
	}
	gw := find(docs, "NetworkPolicy", catalog.Gateway.Name)
	var reached []string
	egress, _ := Get(gw, "spec", "egress").([]any)
	for _, rule := range egress {
		if vals, ok := Get(rule, "to", 0, "podSelector", "matchExpressions", 0, "values").([]any); ok {
			for _, v := range vals {
				reached = append(reached, fmt.Sprint(v))
			}
		}
	}
	if !slices.Equal(reached, catalog.Names()) {
		t.Errorf("the gateway reaches %v, want every service %v", reached, catalog.Names())
	}
}

func checkProductionShape(t *testing.T, docs []Doc) {
	t.Helper()
	for _, name := range deployables() {
		hpa := find(docs, "HorizontalPodAutoscaler", name)
		if min, _ := Get(hpa, "spec", "minReplicas").(int); min < 2 {
			t.Errorf("%s: autoscales from %d replicas, want at least 2", name, min)
		}
		if Get(hpa, "spec", "metrics", 0, "resource", "name") != "cpu" {
			t.Errorf("%s: does not scale on CPU", name)
		}
		if Get(find(docs, "PodDisruptionBudget", name), "spec", "maxUnavailable") != 1 {
			t.Errorf("%s: a drain may take more than one replica", name)
		}
		var keys []string
		spread, _ := Get(find(docs, "Deployment", name), "spec", "template", "spec", "topologySpreadConstraints").([]any)
		for _, c := range spread {
			keys = append(keys, fmt.Sprint(Get(c, "topologyKey")))
		}
		if !slices.Equal(keys, []string{"kubernetes.io/hostname", "topology.kubernetes.io/zone"}) {
			t.Errorf("%s: spread over %v, want nodes and zones", name, keys)
		}
	}
}

func checkIstio(t *testing.T, docs []Doc) {
	t.Helper()
	for _, name := range deployables() {
		if Get(find(docs, "PeerAuthentication", name), "spec", "mtls", "mode") != "STRICT" {
			t.Errorf("%s: mTLS is not STRICT", name)
		}
	}
	for _, s := range catalog.Services {
		var want []string
		for _, caller := range append([]string{"api-gateway"}, s.Peers()...) {
			want = append(want, "cluster.local/ns/registry-prod/sa/"+caller)
		}
		got := Get(find(docs, "AuthorizationPolicy", s.Name), "spec", "rules", 0, "from", 0, "source", "principals")
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("%s: Istio lets %v in, want %v", s.Name, got, want)
		}
	}
}

func checkObservability(t *testing.T, docs []Doc) {
	t.Helper()
	for _, name := range deployables() {
		if find(docs, "ServiceMonitor", name) == nil {
			t.Errorf("%s: no ServiceMonitor", name)
		}
	}
	rule := find(docs, "PrometheusRule", "registry")
	var alerts []string
	groups, _ := Get(rule, "spec", "groups").([]any)
	for _, g := range groups {
		rules, _ := Get(g, "rules").([]any)
		for _, r := range rules {
			if a, ok := Get(r, "alert").(string); ok {
				alerts = append(alerts, a)
				checkRunbook(t, a, Get(r, "annotations", "runbook"))
			}
		}
	}
	for _, want := range []string{"RegistryAvailabilityBudgetBurn", "RegistryLatencyBudgetBurn", "RegistryHigh5xxRatio",
		"RegistryDatabasePoolSaturated", "RegistryFindCacheHitRatioCollapse", "RegistryTokenVerificationFailures",
		"RegistryRateLimitFailingOpen", "RegistryOutboxRelayLagging", "RegistryOutboxRelayStopped", "RegistryOutboxNoRelay",
		"RegistryOutboxEventsSetAside", "RegistryMaintenanceFailing", "RegistryMaintenanceStale", "RegistryPartitionsRunningOut",
		"RegistryLogTampered", "RegistryLogCheckpointStale",
		"RegistryUpstreamBreakerOpen", "RegistryPeerBreakerOpen", "RegistryTokenValidityStale", "RegistryIdPTokenValidityStale", "RegistryReadReplicaUnavailable"} {
		if !slices.Contains(alerts, want) {
			t.Errorf("no alert %s", want)
		}
	}
	cm := find(docs, "ConfigMap", "registry-dashboard")
	if Get(cm, "metadata", "labels", "grafana_dashboard") != "1" {
		t.Error("the dashboard ConfigMap is not labelled for Grafana's sidecar")
	}
	var dash struct {
		Panels []struct{ Type, Title string }
	}
	if err := json.Unmarshal([]byte(fmt.Sprint(Get(cm, "data", "asset-registry.json"))), &dash); err != nil {
		t.Fatal(err)
	}
	var rows []string
	for _, p := range dash.Panels {
		if p.Type == "row" {
			rows = append(rows, p.Title)
		}
	}
	if !slices.Equal(rows, deployables()) {
		t.Errorf("dashboard rows %v, want one per deployable %v", rows, deployables())
	}
}

// checkRunbook holds an alert to an entry of its own in docs/operations.md,
// found by the alert's name: its runbook annotation is that entry's anchor,
// so an operator paged by it reads what it means and what to do.
func checkRunbook(t *testing.T, alert string, runbook any) {
	t.Helper()
	anchor := strings.ToLower(alert)
	if want := "docs/operations.md#" + anchor; runbook != want {
		t.Errorf("alert %s: runbook %v, want its own entry %s", alert, runbook, want)
	}
	if !strings.Contains(readDoc(t, "operations.md"), `<a id="`+anchor+`"></a>`) {
		t.Errorf("alert %s has no entry in docs/operations.md (an anchor %q)", alert, anchor)
	}
}

// readDoc is a file of docs/.
func readDoc(t *testing.T, name string) string {
	t.Helper()
	doc, err := os.ReadFile(filepath.Join(repoRoot, "docs", name))
	if err != nil {
		t.Fatal(err)
	}
	return string(doc)
}

// docPointer is how a chart value's description points at the docs: the
// file, then the section after a comma, in quotes when it holds a comma or
// a colon ("docs/configuration.md, Deadlines and breakers").
var docPointer = regexp.MustCompile(`docs/([a-z0-9-]+\.md)(?:, (?:"([^"]+)"|([A-Z][^).;,"]*)))?`)

// TestChartDescriptionsPointAtDocsThatExist holds every pointer at the docs
// in a chart value's description (charts/registry-lib/schema.yaml, which
// the value reference and every values.schema.json carry) to a file of
// docs/ and, when it names a section, to a heading or a paragraph's bold
// lead of that file: as the alerts' runbooks, a pointer is where an
// operator reads what a value means, and sections move between files.
func TestChartDescriptionsPointAtDocsThatExist(t *testing.T) {
	t.Parallel()
	raw, err := os.ReadFile(filepath.Join(repoRoot, "charts", "registry-lib", "schema.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var schema any
	if err := yaml.Unmarshal(raw, &schema); err != nil {
		t.Fatal(err)
	}
	sections := map[string]map[string]bool{}
	pointers := 0
	for _, description := range descriptions(schema) {
		for _, m := range docPointer.FindAllStringSubmatch(description, -1) {
			pointers++
			file, section := m[1], m[2]+m[3]
			if _, err := os.Stat(filepath.Join(repoRoot, "docs", file)); err != nil {
				t.Errorf("%q points at docs/%s, which is not there", description, file)
				continue
			}
			if sections[file] == nil {
				sections[file] = docSections(readDoc(t, file))
			}
			if section != "" && !sections[file][section] {
				t.Errorf("%q points at docs/%s, %q: no heading or bold lead of that file says so", description, file, section)
			}
		}
	}
	if pointers == 0 {
		t.Error("no description points at docs/: docPointer no longer reads them as they are written")
	}
}

// descriptions are the description strings anywhere in a YAML document.
func descriptions(node any) []string {
	var out []string
	switch n := node.(type) {
	case map[string]any:
		for k, v := range n {
			if s, ok := v.(string); ok && k == "description" {
				out = append(out, s)
			} else {
				out = append(out, descriptions(v)...)
			}
		}
	case []any:
		for _, v := range n {
			out = append(out, descriptions(v)...)
		}
	}
	return out
}

var (
	headingLine = regexp.MustCompile(`^#{1,6} (.+)$`)
	boldLead    = regexp.MustCompile(`^\*\*([^*]+)\*\*`)
	// parenthesisedTail is what a section's name may go without: "Organizations (bound clients)".
	parenthesisedTail = regexp.MustCompile(` \([^)]*\)$`)
)

// docSections are the names of a Markdown file's sections a pointer may
// give: its headings and its paragraphs' bold leads (outside code blocks),
// each also without a closing full stop and a parenthesised tail.
func docSections(doc string) map[string]bool {
	out := map[string]bool{}
	inCode := false
	for line := range strings.SplitSeq(doc, "\n") {
		if strings.HasPrefix(line, "```") {
			inCode = !inCode
			continue
		}
		if inCode {
			continue
		}
		m := headingLine.FindStringSubmatch(line)
		if m == nil {
			m = boldLead.FindStringSubmatch(line)
		}
		if m == nil {
			continue
		}
		name := strings.TrimSpace(m[1])
		out[name] = true
		name = strings.TrimSuffix(name, ".")
		out[name] = true
		out[parenthesisedTail.ReplaceAllString(name, "")] = true
	}
	return out
}

// TestWebhookReceiversAreReachable: the events deployable, which delivers
// webhooks, may reach public addresses on 443 and the ports an operator
// lists, never the ranges the service itself refuses to deliver to
// (services/events Forbidden) unless the operator lists a network of them;
// its settings reach its environment. Without such a rule the namespace's
// default deny fails every delivery.
func TestWebhookReceiversAreReachable(t *testing.T) {
	t.Parallel()
	refused := []string{"10.1.2.3", "172.16.5.4", "192.168.1.1", "127.0.0.1", "169.254.169.254", "100.100.100.200", "100.64.0.1",
		"0.1.2.3", "224.0.0.1", "255.255.255.255", "198.18.0.1", "192.0.0.8",
		"::1", "fd00:ec2::254", "fc00::1", "fe80::1", "ff02::1", "2002:a00:1::1", "2001:db8::1", "::ffff:10.0.0.1"}
	public := []string{"93.184.216.34", "8.8.8.8", "172.32.0.1", "2606:4700:4700::1111"}
	cases := []struct {
		name    string
		sets    []string
		ports   []int
		private []string // addresses reachable only by the operator's ranges
		env     map[string]string
	}{
		{name: "defaults", ports: []int{443},
			env: map[string]string{"WEBHOOKS_MAX_PER_CLIENT": "25", "WEBHOOKS_MAX_IN_FLIGHT": "4", "WEBHOOKS_WORKERS": "32", "WEBHOOKS_ALLOWED_ORIGINS": ""}},
		{name: "an operator's ports, network and settings",
			sets: []string{"events.webhooks.egress.ports={443,8443}", "events.webhooks.egress.privateRanges={10.20.0.0/16}",
				"events.webhooks.maxPerClient=10", "events.webhooks.maxInFlight=2", "events.webhooks.allowedOrigins={https://hooks.internal:8443}"},
			ports: []int{443, 8443}, private: []string{"10.20.1.1"},
			env: map[string]string{"WEBHOOKS_MAX_PER_CLIENT": "10", "WEBHOOKS_MAX_IN_FLIGHT": "2", "WEBHOOKS_ALLOWED_ORIGINS": "https://hooks.internal:8443"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			docs := render(t, "prod", c.sets...)
			for _, name := range deployables() {
				rules := ipBlockRules(find(docs, "NetworkPolicy", name))
				if svc, ok := catalog.Lookup(name); ok && name != "events" && svc.NeedsStore(catalog.ObjectStore) {
					// Production's object store is S3 by its public address: HTTPS
					// only, and never the cluster's private ranges.
					for _, rule := range rules {
						ports, _ := Get(rule, "ports").([]any)
						if len(ports) != 1 || Get(ports[0], "port") != 443 {
							t.Errorf("%s reaches the object store by address on %v, want 443 only", name, ports)
						}
						for _, addr := range refused[:3] {
							if allows(t, rule, addr) {
								t.Errorf("%s reaches %s, a private address, by the object store's rule", name, addr)
							}
						}
					}
					continue
				}
				if name != "events" {
					if len(rules) > 0 {
						t.Errorf("%s reaches addresses outside the cluster: %v", name, rules)
					}
					continue
				}
				if len(rules) != 1 {
					t.Fatalf("events: %d egress rules by address, want the receivers' one", len(rules))
				}
				rule := rules[0]
				var ports []int
				for _, p := range Get(rule, "ports").([]any) {
					if Get(p, "protocol") != "TCP" {
						t.Errorf("port %v is not TCP", p)
					}
					ports = append(ports, toInt(t, Get(p, "port")))
				}
				if fmt.Sprint(ports) != fmt.Sprint(c.ports) {
					t.Errorf("receivers on ports %v, want %v", ports, c.ports)
				}
				for _, a := range public {
					if !allows(t, rule, a) {
						t.Errorf("the public address %s is not reachable", a)
					}
				}
				for _, a := range refused {
					if allows(t, rule, a) {
						t.Errorf("%s is reachable, but the service refuses it", a)
					}
				}
				for _, a := range c.private {
					if !allows(t, rule, a) {
						t.Errorf("%s, in the operator's private ranges, is not reachable", a)
					}
				}
				if !slices.Contains(c.private, "10.20.1.1") && allows(t, rule, "10.20.1.1") {
					t.Error("a private address is reachable though no range was configured")
				}
			}
			cm := find(docs, "ConfigMap", "events")
			for k, v := range c.env {
				if got := Get(cm, "data", k); got != v {
					t.Errorf("%s = %v, want %q", k, got, v)
				}
			}
		})
	}
}

// ipBlockRules are the egress rules of a NetworkPolicy that name
// addresses (ipBlock) rather than pods.
func ipBlockRules(np Doc) []any {
	var out []any
	egress, _ := Get(np, "spec", "egress").([]any)
	for _, rule := range egress {
		to, _ := Get(rule, "to").([]any)
		if slices.ContainsFunc(to, func(peer any) bool { return Get(peer, "ipBlock") != nil }) {
			out = append(out, rule)
		}
	}
	return out
}

// allows says whether one of rule's ipBlocks holds addr outside its
// except list, as the cluster's network plugin decides.
func allows(t *testing.T, rule any, addr string) bool {
	t.Helper()
	a := netip.MustParseAddr(addr).Unmap()
	contains := func(cidr any) bool {
		p, err := netip.ParsePrefix(fmt.Sprint(cidr))
		if err != nil {
			t.Fatalf("ipBlock %v: %v", cidr, err)
		}
		return p.Contains(a) || p.Contains(netip.MustParseAddr(addr))
	}
	for _, peer := range Get(rule, "to").([]any) {
		block := Get(peer, "ipBlock")
		if block == nil || !contains(Get(block, "cidr")) {
			continue
		}
		except, _ := Get(block, "except").([]any)
		if !slices.ContainsFunc(except, contains) {
			return true
		}
	}
	return false
}

func toInt(t *testing.T, v any) int {
	t.Helper()
	switch n := v.(type) {
	case float64:
		return int(n)
	case int:
		return n
	case int64:
		return int(n)
	}
	t.Fatalf("%v is not a number", v)
	return 0
}

// A variant's render is validated by the objects it changed: those equal
// to the environment's own render's are left out, a changed or new one is
// kept whole.
func TestChangedObjectsAreThoseTheValuesChanged(t *testing.T) {
	base, err := Docs([]byte("kind: ConfigMap\nmetadata: {name: same}\ndata: {a: \"1\"}\n---\nkind: ConfigMap\nmetadata: {name: changed}\ndata: {a: \"1\"}\n"))
	if err != nil {
		t.Fatal(err)
	}
	variant := []byte("kind: ConfigMap\nmetadata: {name: same}\ndata: {a: \"1\"}\n---\nkind: ConfigMap\nmetadata: {name: changed}\ndata: {a: \"2\"}\n---\nkind: Secret\nmetadata: {name: same}\n")
	out, err := ChangedObjects(base, variant)
	if err != nil {
		t.Fatal(err)
	}
	docs, err := Docs(out)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, d := range docs {
		got = append(got, d.key())
	}
	if want := []string{"ConfigMap/changed", "Secret/same"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("changed objects %v, want %v", got, want)
	}
	if a := Get(docs[0], "data", "a"); a != "2" {
		t.Errorf("the changed ConfigMap holds a=%v, want the variant's 2", a)
	}
}
