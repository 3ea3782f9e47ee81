package bench

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/assetregistry/registry/pkg/process"
	"github.com/assetregistry/registry/tools/devinfra"
	"github.com/assetregistry/registry/tools/devstack"
)

// start brings up the stack (every process of the registry, as make run
// starts them), the reference pieces and the seed data.
func start(ctx context.Context, o Options, dir string) (*Env, func(), error) {
	var stops []func()
	stop := func() {
		for i := len(stops) - 1; i >= 0; i-- {
			stops[i]()
		}
	}
	fail := func(err error) (*Env, func(), error) { stop(); return nil, nil, err }

	database := "registry"
	if o.PostgresURL != "" {
		database = "bench_" + randomHex()
	}
	// The servers built from source (minutes, once per machine) are made
	// before the start's clock: on a fresh machine that run bin/loadtest
	// without make bench, the build was killed at the three minutes.
	for _, ensure := range []func(context.Context, io.Writer) (string, error){devinfra.EnsureMinioServer, devinfra.EnsureNatsServer} {
		if _, err := ensure(ctx, o.Progress); err != nil {
			return fail(err)
		}
	}
	startCtx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	// The large upload is over the default file size limit of the
	// documents service and the gateway.
	maxFile := strconv.FormatInt(max(o.UploadSize, o.LargeUpload), 10)
	stack, err := devstack.Start(startCtx, devstack.Options{
		Dir: dir, BinDir: o.BinDir, Ephemeral: true, Database: database,
		PostgresURL: o.PostgresURL, RedisURL: o.RedisURL,
		Env: append([]string{"DOCUMENTS_MAX_SIZE=" + maxFile, "UPLOAD_MAX_SIZE=" + maxFile,
			// The gateway's rate limits stay on, as in production (every
			// gateway row pays for them), with a budget the bench's one
			// client never spends; so does the budget of calls without a
			// token, which the anonymous rows (the log's tiles) draw on.
			"RATE_LIMIT_DEFAULT=" + benchBudget, "RATE_LIMIT_ITEMS=" + benchBudget,
			"RATE_LIMIT_UNAUTHENTICATED=" + benchBudget}, o.StackEnv...),
	})
	if err != nil {
		return fail(err)
	}
	stops = append(stops, func() {
		if err := stack.Stop(); err != nil {
			fmt.Fprintln(o.Progress, "stop the registry:", err)
		}
		if o.PostgresURL != "" {
			_ = devstack.DropDatabase(context.Background(), o.PostgresURL, database)
		}
	})
	creds, err := stack.EnsureClients(startCtx, filepath.Join(dir, "registry.env"))
	if err != nil {
		return fail(err)
	}
	// A second gateway without rate limits before the same services: the
	// limiter's cost is the difference between the two in one run.
	unlimited, err := stack.StartGateway(startCtx, unlimitedGateway, "RATE_LIMIT_ENABLED=false")
	if err != nil {
		return fail(err)
	}
	e := &Env{
		Stack: stack, Creds: creds, Load: o.Load, database: database, sharedPostgres: o.PostgresURL != "", progress: o.Progress,
		client: &http.Client{Transport: &http.Transport{
			MaxIdleConns: 4 * o.Load.Concurrency, MaxIdleConnsPerHost: 2 * o.Load.Concurrency,
			IdleConnTimeout: time.Minute, DisableCompression: true,
		}},
		processes: map[string]loadedProcess{}, LargeUpload: o.LargeUpload, UnlimitedGatewayURL: unlimited, LogLeaves: o.LogLeaves, LargeEvents: o.LargeEvents,
	}
	if e.upload, err = newUpload(o.UploadSize); err != nil {
		return fail(err)
	}
	if e.s3, err = connectS3(startCtx, stack.S3Endpoint, stack.S3AccessKey, stack.S3SecretKey, stack.S3Region); err != nil {
		return fail(err)
	}
	// The same parties binary and schema without events, for EventsOff.
	if e.EventsOffURL, err = stack.StartCopy(startCtx, "parties", "parties-events-off", "OUTBOX_RECORD=false", "NATS_URL="); err != nil {
		return fail(err)
	}
	for name, pid := range stack.Pids {
		e.processes[name] = loadedProcess{pid: pid, debugURL: strings.TrimSuffix(stack.MetricsURLs[name], "/metrics")}
	}
	redisOpts, err := redis.ParseURL(stack.RedisURL)
	if err != nil {
		return fail(err)
	}
	e.redis = redis.NewClient(redisOpts)
	stops = append(stops, func() { e.redis.Close() })

	if err := createReferenceSchema(startCtx, stack.DatabaseURL, o.RepoRoot); err != nil {
		return fail(err)
	}
	if e.Reference, err = referencePool(startCtx, stack.DatabaseURL); err != nil {
		return fail(err)
	}
	stops = append(stops, e.Reference.Close)
	if os.Getenv("REGISTRY_PG_STAT_STATEMENTS") != "" {
		if _, err := e.Reference.Exec(startCtx, "CREATE EXTENSION IF NOT EXISTS pg_stat_statements SCHEMA public"); err != nil {
			return fail(err)
		}
		fmt.Fprintf(o.Progress, "pg_stat_statements kept in %s\n", stack.DatabaseURL)
	}
	if e.RefOrgs, err = seedReference(startCtx, e.Reference, o.Organizations); err != nil {
		return fail(err)
	}
	logs := filepath.Join(dir, "logs")
	refURL, refStop, err := e.startChild(startCtx, o, logs, "reference", "BENCH_DATABASE_URL="+stack.DatabaseURL)
	if err != nil {
		return fail(err)
	}
	stops = append(stops, refStop)
	e.ReferenceURL = refURL
	proxyURL, proxyStop, err := e.startChild(startCtx, o, logs, "proxy", "BENCH_TARGET="+refURL)
	if err != nil {
		return fail(err)
	}
	stops = append(stops, proxyStop)
	e.ProxyURL = proxyURL

	if err := e.refreshToken(startCtx); err != nil {
		return fail(err)
	}
	fmt.Fprintf(o.Progress, "seeding %d organizations, %d people and %d assets through the gateway...\n", o.Organizations, o.People, o.Assets)
	if err := e.seed(startCtx, o.Organizations, o.People); err != nil {
		return fail(err)
	}
	if err := e.seedAssets(startCtx, o.Assets); err != nil {
		return fail(err)
	}
	if err := e.seedTenant(startCtx); err != nil {
		return fail(err)
	}
	// Not under startCtx: millions of rows on a busy machine may take
	// minutes of their own.
	if o.ComplianceAssets > 0 {
		seeding := time.Now()
		orgs := complianceOrganizations(o)
		fmt.Fprintf(o.Progress, "seeding %d assets of %d organizations and %d actions into the compliance read model...", o.ComplianceAssets, orgs, o.ComplianceActions)
		if err := e.seedCompliance(ctx, o.ComplianceAssets, o.ComplianceActions, orgs); err != nil {
			return fail(err)
		}
		walking := time.Now()
		// The full seed outlasts an access token (15 min; 19 min on a
		// loaded two-core machine): the walk needs a fresh one.
		if err := e.refreshToken(ctx); err != nil {
			return fail(err)
		}
		if err := e.findComplianceCursor(ctx); err != nil {
			return fail(err)
		}
		fmt.Fprintf(o.Progress, " %.1f s (%s), %.1f s walking to the deep page\n",
			walking.Sub(seeding).Seconds(), &e.seedSteps, time.Since(walking).Seconds())
		if err := e.explainCompliance(ctx, o.Progress); err != nil {
			return fail(err)
		}
	}
	if o.Actions == 0 {
		return e, stop, nil
	}
	seeding := time.Now()
	fmt.Fprintf(o.Progress, "seeding %d actions straight into the actions table...", o.Actions)
	if err := e.seedActions(ctx, o.Actions); err != nil {
		return fail(err)
	}
	walking := time.Now()
	if err := e.refreshToken(ctx); err != nil { // as after the compliance seed
		return fail(err)
	}
	if err := e.findDeepCursors(ctx); err != nil {
		return fail(err)
	}
	fmt.Fprintf(o.Progress, " %.1f s (copy and ANALYZE), %.1f s walking to the deep pages\n",
		walking.Sub(seeding).Seconds(), time.Since(walking).Seconds())
	return e, stop, nil
}

func (e *Env) startChild(ctx context.Context, o Options, logDir, role string, env ...string) (string, func(), error) {
	port, err := devinfra.FreePort()
	if err != nil {
		return "", nil, err
	}
	profPort, err := devinfra.FreePort()
	if err != nil {
		return "", nil, err
	}
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	cmd := exec.Command(o.Self[0], o.Self[1:]...)
	cmd.Env = append(os.Environ(), ChildEnv+"="+role,
		fmt.Sprintf("BENCH_ADDR=127.0.0.1:%d", port), fmt.Sprintf("BENCH_PROFILE_ADDR=127.0.0.1:%d", profPort))
	cmd.Env = append(cmd.Env, env...)
	p, err := devinfra.StartProcess(ctx, role, cmd, filepath.Join(logDir, role+".log"), process.HTTPCheck(base+"/healthz"))
	if err != nil {
		return "", nil, fmt.Errorf("start %s: %w", role, err)
	}
	e.processes[role] = loadedProcess{pid: p.Pid(), debugURL: fmt.Sprintf("http://127.0.0.1:%d", profPort)}
	return base, func() { _ = p.Stop() }, nil
}
