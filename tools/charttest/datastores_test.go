package charttest

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/assetregistry/registry/pkg/catalog"
)

// checkProductionDatastores holds the production profile's datastores to
// what the registry relies on (docs/operations.md, "Production
// datastores"): PostgreSQL with synchronous standbys behind a pooler the
// services can work through, Redis with Sentinel that keeps nothing on
// disk, and every deployable bound to them.
func checkProductionDatastores(t *testing.T, docs []Doc) {
	t.Helper()
	pg := find(docs, "Cluster", "registry-pg")
	if pg == nil {
		t.Fatal("no CloudNativePG Cluster registry-pg")
	}
	instances, _ := Get(pg, "spec", "instances").(int)
	if instances < 3 {
		t.Errorf("PostgreSQL has %d instances; production needs a primary and two standbys", instances)
	}
	// Quorum commit, one standby of the two: a lost standby stops no write, an answered write is
	// on two servers, and a failover promotes only a standby the quorum proves holds it.
	sync := Get(pg, "spec", "postgresql", "synchronous")
	if n, _ := Get(sync, "number").(int); Get(sync, "method") != "any" || n != 1 || n >= instances-1 {
		t.Errorf("synchronous replication %v: want quorum (method any) of one standby out of the %d, so that losing one stops no write", sync, instances-1)
	}
	if Get(sync, "dataDurability") != "required" || Get(sync, "failoverQuorum") != true {
		t.Errorf("synchronous replication %v: want dataDurability required (an answered write is never on one server only) and failoverQuorum (no promotion of a standby that may lack one)", sync)
	}
	if Get(pg, "spec", "affinity", "topologyKey") != "topology.kubernetes.io/zone" {
		t.Error("PostgreSQL's instances are not spread over zones")
	}
	if Get(pg, "spec", "enableSuperuserAccess") != false {
		t.Error("the superuser may log in")
	}
	sql := strings.Join(toStrings(Get(pg, "spec", "bootstrap", "initdb", "postInitApplicationSQL")), "\n")
	roles, _ := Get(pg, "spec", "managed", "roles").([]any)
	owners := []string{catalog.IdentityProvider.Name}
	for _, svc := range catalog.Services {
		if svc.NeedsStore(catalog.Postgres) {
			owners = append(owners, svc.Name)
		}
	}
	for _, owner := range owners {
		for _, setting := range []string{"search_path = " + owner, "statement_timeout = '5s'", "lock_timeout = '2s'",
			"idle_in_transaction_session_timeout = '30s'", "jit = off", "synchronous_commit = remote_apply"} {
			if !strings.Contains(sql, "ALTER ROLE "+owner+" IN DATABASE registry SET "+setting) {
				t.Errorf("role %s lacks %s: the pooler drops what the service asks at connection", owner, setting)
			}
		}
		if !strings.Contains(sql, "CREATE SCHEMA "+owner+" AUTHORIZATION "+owner) {
			t.Errorf("role %s does not own its schema", owner)
		}
		if !slices.ContainsFunc(roles, func(r any) bool { return Get(r, "name") == owner && Get(r, "login") == true }) {
			t.Errorf("no login role %s among the Cluster's managed roles", owner)
		}
	}
	// values-prod.yaml gives each instance 32Gi (the capacity model's).
	for name, want := range map[string]string{"shared_buffers": "8192MB", "effective_cache_size": "24576MB"} {
		if got := Get(pg, "spec", "postgresql", "parameters", name); got != want {
			t.Errorf("%s = %v, want %s: sized from the instance's 32Gi", name, got, want)
		}
	}
	checkBackups(t, docs, pg)
	checkDatastoreMonitoring(t, docs)
	pooler := find(docs, "Pooler", "registry-pg-pooler-rw")
	if pooler == nil {
		t.Fatal("no Pooler for request traffic")
	}
	if Get(pooler, "spec", "type") != "rw" || Get(pooler, "spec", "pgbouncer", "poolMode") != "transaction" {
		t.Error("the Pooler is not the primary's, in transaction mode")
	}
	ignored, _ := Get(pooler, "spec", "pgbouncer", "parameters", "ignore_startup_parameters").(string)
	for _, p := range []string{"search_path", "statement_timeout", "lock_timeout", "idle_in_transaction_session_timeout", "jit", "synchronous_commit"} {
		if !slices.Contains(strings.Split(ignored, ","), p) {
			t.Errorf("PgBouncer refuses connections that ask for %s (ignore_startup_parameters %q)", p, ignored)
		}
	}
	if v, _ := Get(pooler, "spec", "pgbouncer", "parameters", "max_prepared_statements").(string); v == "" || v == "0" {
		t.Error("PgBouncer keeps no prepared statements across transactions: pgx's statement cache would fail")
	}

	rr := find(docs, "RedisReplication", "registry-redis")
	if rr == nil {
		t.Fatal("no RedisReplication registry-redis")
	}
	if r, _ := Get(rr, "spec", "clusterSize").(int); r < 2 {
		t.Errorf("Redis has %d servers: nothing to fail over to", r)
	}
	if s, _ := Get(rr, "spec", "sentinel", "size").(int); s < 3 {
		t.Errorf("%d Sentinels: a failover needs a majority of at least three", s)
	}
	if Get(rr, "spec", "storage") != nil {
		t.Error("Redis has a volume: the find cache holds personal data and must not reach the disk")
	}
	if Get(rr, "spec", "kubernetesConfig", "redisSecret", "name") == nil {
		t.Error("Redis has no password")
	}
	configMap := toString(Get(rr, "spec", "redisConfig", "additionalRedisConfig"))
	config := strings.Split(toString(Get(find(docs, "ConfigMap", configMap), "data", "redis-additional.conf")), "\n")
	for _, want := range []string{`save ""`, "appendonly no", "maxmemory-policy allkeys-lru"} {
		if !slices.Contains(config, want) {
			t.Errorf("Redis lacks %q (ConfigMap %q): the find cache holds personal data and must not reach the disk", want, configMap)
		}
	}

	for _, owner := range owners {
		want := []string{"DATABASE_URL", "DATABASE_DIRECT_URL"}
		if owner != catalog.IdentityProvider.Name {
			want = append(want, "DATABASE_READ_URL")
		}
		env := containerEnv(docs, "Deployment", owner)
		for _, name := range want {
			if !slices.Contains(env, name) {
				t.Errorf("%s: no %s", owner, name)
			}
		}
		if !slices.Contains(containerEnv(docs, "Job", owner+"-migrate"), "DATABASE_DIRECT_URL") {
			t.Errorf("%s: its migration Job goes through the pooler (no DATABASE_DIRECT_URL): its session lock would not hold", owner)
		}
	}
	withRedis := []string{catalog.Gateway.Name}
	for _, svc := range catalog.Services {
		if svc.NeedsStore(catalog.Redis) {
			withRedis = append(withRedis, svc.Name)
		}
		config, _ := Get(find(docs, "ConfigMap", svc.Name), "data").(map[string]any)
		if svc.NeedsStore(catalog.NATS) && config["NATS_STREAM_REPLICAS"] != "3" {
			t.Errorf("%s: the stream has %v replicas, not 3 on the three-node cluster", svc.Name, config["NATS_STREAM_REPLICAS"])
		}
	}
	for _, name := range withRedis {
		config, _ := Get(find(docs, "ConfigMap", name), "data").(map[string]any)
		if config["REDIS_MASTER_NAME"] != "mymaster" || !strings.Contains(toString(config["REDIS_SENTINEL_ADDRS"]), "registry-redis-s-hl") {
			t.Errorf("%s: does not find Redis through the RedisReplication's Sentinels (%v, %v)", name, config["REDIS_MASTER_NAME"], config["REDIS_SENTINEL_ADDRS"])
		}
	}
}

// checkBackups holds the production Cluster to a restorable archive: every
// WAL segment and a scheduled base backup go to object storage with
// credentials from a Secret, and old ones go by a retention policy.
func checkBackups(t *testing.T, docs []Doc, pg Doc) {
	t.Helper()
	store := Get(pg, "spec", "backup", "barmanObjectStore")
	if store == nil {
		t.Fatal("the Cluster archives no WAL and takes no base backup (no backup.barmanObjectStore)")
	}
	if path, _ := Get(store, "destinationPath").(string); !strings.HasPrefix(path, "s3://") {
		t.Errorf("backups go to %q, not to object storage", path)
	}
	for _, key := range []string{"accessKeyId", "secretAccessKey"} {
		if Get(store, "s3Credentials", key, "name") == nil || Get(store, "s3Credentials", key, "key") == nil {
			t.Errorf("the object store's %s is not read from a Secret", key)
		}
	}
	if Get(store, "wal", "compression") == nil {
		t.Error("WAL segments are archived uncompressed")
	}
	if r, _ := Get(pg, "spec", "backup", "retentionPolicy").(string); r == "" {
		t.Error("no retention policy: the archive grows for ever")
	}
	sb := find(docs, "ScheduledBackup", "registry-pg-daily")
	if sb == nil {
		t.Fatal("no ScheduledBackup: the WAL archive alone restores nothing")
	}
	if Get(sb, "spec", "cluster", "name") != pg.Name() || Get(sb, "spec", "method") != "barmanObjectStore" ||
		Get(sb, "spec", "immediate") != true || Get(sb, "spec", "schedule") == nil {
		t.Errorf("the ScheduledBackup %v does not back up %s to its object store at once and on a schedule", Get(sb, "spec"), pg.Name())
	}
	if Get(sb, "metadata", "namespace") != Get(pg, "metadata", "namespace") {
		t.Error("the ScheduledBackup is not in its Cluster's namespace")
	}
}

// checkDatastoreMonitoring holds production to watching its datastores
// themselves: their pods scraped, and alerts on what stops writes or loses
// them later (a standby lagging or missing, the WAL archive failing, old
// backups, volumes filling, a Redis replica missing), each with its runbook.
func checkDatastoreMonitoring(t *testing.T, docs []Doc) {
	t.Helper()
	for name, selector := range map[string][2]string{
		"registry-pg":           {"cnpg.io/cluster", "registry-pg"},
		"registry-pg-pooler-rw": {"cnpg.io/poolerName", "registry-pg-pooler-rw"},
		"registry-redis":        {"app", "registry-redis"},
	} {
		pm := find(docs, "PodMonitor", name)
		if pm == nil {
			t.Errorf("no PodMonitor %s", name)
			continue
		}
		if Get(pm, "metadata", "namespace") != "databases" || Get(pm, "spec", "selector", "matchLabels", selector[0]) != selector[1] ||
			Get(pm, "metadata", "labels", "release") != "prometheus" {
			t.Errorf("PodMonitor %s does not select %s=%s in databases for Prometheus: %v", name, selector[0], selector[1], pm)
		}
	}
	rule := find(docs, "PrometheusRule", "registry-datastores")
	if rule == nil {
		t.Fatal("no PrometheusRule registry-datastores")
	}
	exprs := map[string]string{}
	groups, _ := Get(rule, "spec", "groups").([]any)
	for _, g := range groups {
		rules, _ := Get(g, "rules").([]any)
		for _, r := range rules {
			name, _ := Get(r, "alert").(string)
			exprs[name] = toString(Get(r, "expr"))
			checkRunbook(t, name, Get(r, "annotations", "runbook"))
		}
	}
	for alert, metric := range map[string]string{
		"RegistryPostgresReplicationLagging": "cnpg_pg_replication_lag",
		"RegistryPostgresStandbyMissing":     "cnpg_pg_replication_streaming_replicas",
		"RegistryPostgresWALArchiveFailing":  "cnpg_pg_stat_archiver_last_failed_time",
		"RegistryPostgresBackupStale":        "cnpg_collector_last_available_backup_timestamp",
		"RegistryDatastoreVolumeFilling":     "kubelet_volume_stats_available_bytes",
		"RegistryDatastoreVolumeFull":        "kubelet_volume_stats_available_bytes",
		"RegistryRedisReplicaMissing":        "redis_connected_slaves",
	} {
		if !strings.Contains(exprs[alert], metric) {
			t.Errorf("alert %s is missing or does not watch %s: %q", alert, metric, exprs[alert])
		}
	}
	if !strings.Contains(exprs["RegistryDatastoreVolumeFilling"], "nats-js-") || !strings.Contains(exprs["RegistryDatastoreVolumeFilling"], "registry-pg-") {
		t.Error("RegistryDatastoreVolumeFilling does not watch both PostgreSQL's and NATS's volumes")
	}
}

// Backups switched on without a place to put them are refused at render,
// not discovered when the first WAL segment fails to archive.
func TestBackupsNeedADestination(t *testing.T) {
	t.Parallel()
	w := workspace(t)
	if _, err := w.Template("charts/registry", namespace("prod"), []string{envFile("prod")}, "datastores.postgres.backup.destinationPath="); err == nil {
		t.Error("backups without a destinationPath rendered; they should be refused")
	}
	if _, err := w.Template("charts/registry", namespace("prod"), []string{envFile("prod")}, "datastores.postgres.backup.retentionPolicy=forever"); err == nil {
		t.Error("retentionPolicy forever rendered; it should be refused")
	}
}

// A restore renders the Cluster from the backups, up to the target time,
// and archives to a path of its own.
func TestRestoreFromBackup(t *testing.T) {
	t.Parallel()
	const (
		source = "s3://registry-pg-backups/prod"
		target = "2026-12-06 17:26:09.297972+00"
	)
	restore := []string{"datastores.postgres.recovery.enabled=true", "datastores.postgres.recovery.sourcePath=" + source,
		"datastores.postgres.backup.destinationPath=s3://registry-pg-backups/prod-restored"}
	pg := find(render(t, "prod", append(restore, "datastores.postgres.recovery.targetTime="+target)...), "Cluster", "registry-pg")
	if pg == nil {
		t.Fatal("no CloudNativePG Cluster registry-pg")
	}
	if Get(pg, "spec", "bootstrap", "initdb") != nil || Get(pg, "spec", "bootstrap", "recovery", "source") != "origin" {
		t.Fatalf("the Cluster is not bootstrapped from the backups: %v", Get(pg, "spec", "bootstrap"))
	}
	if got := Get(pg, "spec", "bootstrap", "recovery", "recoveryTarget", "targetTime"); got != target {
		t.Errorf("recovery target %v, want %s", got, target)
	}
	origin := Get(pg, "spec", "externalClusters", 0)
	if Get(origin, "name") != "origin" || Get(origin, "barmanObjectStore", "destinationPath") != source ||
		Get(origin, "barmanObjectStore", "serverName") != "registry-pg" ||
		Get(origin, "barmanObjectStore", "s3Credentials", "secretAccessKey", "name") != "registry-pg-backup" {
		t.Errorf("the backups restored from are %v; want %s, server registry-pg, with the backup Secret", origin, source)
	}
	w := workspace(t)
	if _, err := w.Template("charts/registry", namespace("prod"), []string{envFile("prod")},
		"datastores.postgres.recovery.enabled=true", "datastores.postgres.recovery.sourcePath=s3://registry-pg-backups/prod"); err == nil {
		t.Error("a restore archiving into the path it restores from rendered; it should be refused")
	}
	if _, err := w.Template("charts/registry", namespace("prod"), []string{envFile("prod")},
		append(restore, "datastores.postgres.recovery.targetTime=yesterday")...); err == nil {
		t.Error("targetTime yesterday rendered; it should be refused")
	}
}

// containerEnv names the environment variables of the first container of
// the object's pods.
func containerEnv(docs []Doc, kind, name string) []string {
	var names []string
	env, _ := Get(find(docs, kind, name), "spec", "template", "spec", "containers", 0, "env").([]any)
	for _, e := range env {
		if n, ok := Get(e, "name").(string); ok {
			names = append(names, n)
		}
	}
	return names
}

func toStrings(v any) []string {
	list, _ := v.([]any)
	var out []string
	for _, e := range list {
		out = append(out, toString(e))
	}
	return out
}

func toString(v any) string {
	s, _ := v.(string)
	return s
}

// natsValues is the production values file of the official NATS chart.
const natsValues = "charts/registry/nats-values-prod.yaml"

// The values of the official NATS chart hold the cluster to what the
// registry's production profile expects of it: three JetStream servers on
// file storage, spread over nodes and zones with one down at a time, and
// the registry's user whose password is the one in the Secret the
// services read.
// PostgreSQL's memory settings follow datastores.postgres.memory, and what
// datastores.postgres.parameters says wins over them.
func TestPostgresSizedFromItsMemory(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name              string
		sets              []string
		shared, cacheSize string
	}{
		{"Mi", []string{"datastores.postgres.memory=3000Mi"}, "750MB", "2250MB"},
		{"Gi", []string{"datastores.postgres.memory=8Gi"}, "2048MB", "6144MB"},
		{"parameters win", []string{"datastores.postgres.memory=8Gi", "datastores.postgres.parameters.shared_buffers=1GB"}, "1GB", "6144MB"},
	} {
		t.Run(c.name, func(t *testing.T) {
			pg := find(render(t, "prod", c.sets...), "Cluster", "registry-pg")
			if pg == nil {
				t.Fatal("no CloudNativePG Cluster registry-pg")
			}
			for name, want := range map[string]string{"shared_buffers": c.shared, "effective_cache_size": c.cacheSize} {
				if got := Get(pg, "spec", "postgresql", "parameters", name); got != want {
					t.Errorf("%s = %v, want %s", name, got, want)
				}
			}
		})
	}
	w := workspace(t)
	if _, err := w.Template("charts/registry", namespace("prod"), []string{envFile("prod")}, "datastores.postgres.memory=8G"); err == nil {
		t.Error("memory 8G (not Mi or Gi) rendered; it should be refused")
	}
}

func TestNatsValuesMatchTheRegistry(t *testing.T) {
	t.Parallel()
	raw, err := os.ReadFile(filepath.Join(repoRoot, natsValues))
	if err != nil {
		t.Fatal(err)
	}
	var v map[string]any
	if err := yaml.Unmarshal(raw, &v); err != nil {
		t.Fatal(err)
	}
	prod := map[string]any{}
	raw, err = os.ReadFile(filepath.Join(repoRoot, envFile("prod")))
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(raw, &prod); err != nil {
		t.Fatal(err)
	}
	streamReplicas, _ := Get(prod, "global", "nats", "replicas").(int)
	servers, _ := Get(v, "config", "cluster", "replicas").(int)
	if Get(v, "config", "cluster", "enabled") != true || servers < 3 || servers < streamReplicas {
		t.Errorf("%d servers in a cluster (enabled %v) for a stream of %d replicas", servers, Get(v, "config", "cluster", "enabled"), streamReplicas)
	}
	if streamReplicas != 3 {
		t.Errorf("the production profile keeps the stream in %d copies, not 3", streamReplicas)
	}
	if Get(v, "config", "jetstream", "enabled") != true || Get(v, "config", "jetstream", "fileStore", "enabled") != true ||
		Get(v, "config", "jetstream", "fileStore", "pvc", "size") == nil {
		t.Error("JetStream is not on with a file store on a volume")
	}
	if Get(v, "podDisruptionBudget", "enabled") != true {
		t.Error("no PodDisruptionBudget: a drain could take a majority of the servers")
	}
	if Get(v, "podTemplate", "topologySpreadConstraints", "kubernetes.io/hostname") == nil {
		t.Error("the servers are not spread over nodes")
	}
	users, _ := Get(v, "config", "merge", "accounts", "REGISTRY", "users").([]any)
	if len(users) != 1 || Get(users, 0, "user") != "registry" || Get(users, 0, "password") != "<< $REGISTRY_NATS_PASSWORD >>" {
		t.Errorf("the registry's NATS user is %v; want user registry whose password is the variable REGISTRY_NATS_PASSWORD, unquoted (<< >>)", users)
	}
	if Get(v, "container", "env", "REGISTRY_NATS_PASSWORD", "valueFrom", "secretKeyRef", "name") != "registry-nats" {
		t.Error("the NATS servers do not read the registry's password from the Secret registry-nats")
	}
}

// natsChart is the official NATS chart at the version charts/registry/nats-chart.yaml pins,
// fetched into the user's cache by tools/scripts/nats-chart.sh (once per machine).
func natsChart(t *testing.T) string {
	t.Helper()
	cmd := exec.Command(filepath.Join(repoRoot, "tools", "scripts", "nats-chart.sh"))
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	var exit *exec.ExitError
	if errors.As(err, &exit) && exit.ExitCode() == 3 && os.Getenv("NATS_CHART_REQUIRED") == "" {
		// The chart is the one part of these checks that comes from outside the repository; a
		// machine that can reach none of its sources has nothing to render. A release sets
		// NATS_CHART_REQUIRED, which turns this into a failure.
		t.Skipf("the official NATS chart is out of reach (set NATS_CHART_REPO or NATS_CHART_REQUIRED): %s", stderr.String())
	}
	if err != nil {
		t.Fatalf("nats-chart.sh: %v\n%s", err, stderr.String())
	}
	dir, ok := strings.CutPrefix(strings.TrimSpace(string(out)), "NATS_CHART=")
	if !ok {
		t.Fatalf("nats-chart.sh printed %q", out)
	}
	return dir
}

// The official NATS chart at the pinned version renders with the production values, and what it
// renders is valid Kubernetes (kubectl-validate); the install commands name that version.
func TestNatsValuesRenderWithTheOfficialChart(t *testing.T) {
	t.Parallel()
	var pin struct{ Name, Version string }
	readYAML(t, "charts/registry/nats-chart.yaml", &pin)
	chart := natsChart(t)
	var fetched struct{ Name, Version string }
	readYAML(t, filepath.Join(chart, "Chart.yaml"), &fetched)
	if fetched != pin {
		t.Fatalf("the cached chart is %+v, the pin %+v", fetched, pin)
	}
	install := "helm upgrade --install nats nats/nats --version " + pin.Version + " "
	for _, doc := range []string{natsValues, "docs/operations.md"} {
		raw, err := os.ReadFile(filepath.Join(repoRoot, doc))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(raw), install) {
			t.Errorf("%s does not install the pinned chart (%q)", doc, install)
		}
	}
	w := workspace(t)
	cmd := exec.Command(w.tools.Helm, "template", "nats", chart, "--namespace", "registry-prod", "--values", filepath.Join(repoRoot, natsValues))
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("helm template: %v", err)
	}
	if err := w.Validate("nats", out); err != nil {
		t.Fatal(err)
	}
	docs, err := Docs(out)
	if err != nil {
		t.Fatal(err)
	}
	if Get(find(docs, "PodMonitor", "nats"), "metadata", "labels", "release") != "prometheus" {
		t.Error("no PodMonitor of the NATS servers that Prometheus selects (release: prometheus)")
	}
	sts := find(docs, "StatefulSet", "nats")
	if r, _ := Get(sts, "spec", "replicas").(int); r != 3 {
		t.Errorf("the NATS StatefulSet has %d replicas", r)
	}
	conf := toString(Get(find(docs, "ConfigMap", "nats-config"), "data", "nats.conf"))
	if !strings.Contains(conf, `"password": $REGISTRY_NATS_PASSWORD`) || !strings.Contains(conf, `"routes"`) {
		t.Errorf("the servers' configuration lacks the routes or the registry's password variable:\n%s", conf)
	}
}

// Production binds to an S3 store it does not deploy: the documents
// deployable renders only with an https endpoint, a region, the keys'
// Secret and a valid bucket name, and takes its keys from that Secret.
func TestProductionObjectStoreIsBoundOverTLS(t *testing.T) {
	t.Parallel()
	w := workspace(t)
	out, err := w.Template("charts/registry", namespace("prod"), []string{envFile("prod")})
	if err != nil {
		t.Fatal(err)
	}
	docs, err := Docs(out)
	if err != nil {
		t.Fatal(err)
	}
	config := find(docs, "ConfigMap", "documents")
	if got := fmt.Sprint(Get(config, "data", "S3_ENDPOINT")); !strings.HasPrefix(got, "https://") {
		t.Errorf("prod documents S3_ENDPOINT = %q, want an https:// address", got)
	}
	if got := fmt.Sprint(Get(config, "data", "S3_BUCKET")); got != "prod-documents" {
		t.Errorf("prod documents S3_BUCKET = %q, want prod-documents", got)
	}
	deploy := find(docs, "Deployment", "documents")
	env := fmt.Sprint(Get(deploy, "spec", "template", "spec", "containers"))
	for _, want := range []string{"S3_ACCESS_KEY", "S3_SECRET_KEY", "registry-s3"} {
		if !strings.Contains(env, want) {
			t.Errorf("prod documents Deployment does not take %s from the Secret", want)
		}
	}
	for _, bad := range []struct{ set, says string }{
		{"global.objectStore.endpoint=", "must be an https:// address"},
		{"global.objectStore.endpoint=http://minio.storage.svc:9000", "must be an https:// address"},
		{"global.objectStore.region=", "region is required"},
		{"global.objectStore.secretName=", "Secret"},
		{"global.objectStore.secretKeyKey=", "Secret"},
		{"documents.objectStore.bucket=Prod_Documents", "not an S3 bucket name"},
	} {
		_, err := w.Template("charts/registry", namespace("prod"), []string{envFile("prod")}, bad.set)
		if err == nil || !strings.Contains(err.Error(), bad.says) {
			t.Errorf("prod with %s: %v, want a refusal saying %q", bad.set, err, bad.says)
		}
	}
}
