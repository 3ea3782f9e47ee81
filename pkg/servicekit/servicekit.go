// Package servicekit is the shared main of the registry's services: it reads
// the service's catalog entry (pkg/catalog) for what it needs, parses the
// flags (with environment fallback), opens PostgreSQL and applies the
// migrations, connects the Redis find cache, object storage and the peer
// clients the service needs, and serves the service's routes behind token
// verification with the probes and the bundled OpenAPI document. A
// service's spec.go names its migrations, OpenAPI document and how to build
// its routes from these dependencies, and nothing else.
package servicekit

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"maps"
	"net/http"
	"os"
	"slices"
	"time"

	"github.com/go-kit/log"
	"github.com/go-kit/log/level"

	"github.com/assetregistry/registry/pkg/auth"
	"github.com/assetregistry/registry/pkg/cache"
	"github.com/assetregistry/registry/pkg/catalog"
	"github.com/assetregistry/registry/pkg/endpoints"
	"github.com/assetregistry/registry/pkg/httpx"
	"github.com/assetregistry/registry/pkg/job"
	"github.com/assetregistry/registry/pkg/leader"
	"github.com/assetregistry/registry/pkg/objectstore"
	"github.com/assetregistry/registry/pkg/openapi"
	"github.com/assetregistry/registry/pkg/outbox"
	"github.com/assetregistry/registry/pkg/peer"
	"github.com/assetregistry/registry/pkg/process"
	"github.com/assetregistry/registry/pkg/refs"
	"github.com/assetregistry/registry/pkg/store"
	"github.com/assetregistry/registry/pkg/telemetry"
)

// Spec describes one service.
type Spec struct {
	Name        string // its catalog entry; also the schema, bucket and cache namespace name
	Migrations  fs.FS  // NNN_name.sql files at the root
	OpenAPIYAML []byte // bundled with pkg/openapi and served as /openapi.json
	// Flags registers the service's own settings, if it has any; their
	// defaults must also hold when Build runs without flags (tests).
	Flags func(*flag.FlagSet)
	// Build returns the service's routes (public and internal) and any
	// readiness checks of its own.
	Build func(Deps) (Handlers, error)
	// Commands are the service's own operations besides serve and migrate
	// (`<service> <command> [flags]`): each runs once, with the same flags
	// and dependencies as the service, and exits.
	Commands map[string]Command
}

// Command is an operation an operator runs with the service's binary.
type Command struct {
	Summary string
	// Flags registers the command's own flags, if it has any, beside the
	// service's.
	Flags func(*flag.FlagSet)
	// DatabaseOnly runs the command with nothing but the service's
	// database (Deps.Store, without a find cache): no issuer, peers,
	// relay or stream consumers, which a command that only reads and
	// marks rows has no use for.
	DatabaseOnly bool
	Run          func(ctx context.Context, d Deps) error
}

// Embedded is the spec of the named service whose files are embedded the
// usual way: migrations/*.sql and openapi.yaml at the root of files. The
// caller sets Build (and Flags). A file missing is a bug of the embed
// pattern, found by the first test that builds the spec.
func Embedded(name string, files fs.FS) Spec {
	migrations, err := fs.Sub(files, "migrations")
	if err != nil {
		panic(fmt.Sprintf("servicekit: %s embeds no migrations: %v", name, err))
	}
	doc, err := fs.ReadFile(files, "openapi.yaml")
	if err != nil {
		panic(fmt.Sprintf("servicekit: %s embeds no openapi.yaml: %v", name, err))
	}
	return Spec{Name: name, Migrations: migrations, OpenAPIYAML: doc}
}

// Deps are what Build gets; those the catalog entry does not need are nil.
type Deps struct {
	Store   *store.Store // pool; its writes make stale the finds they change
	Finds   *cache.Finds // the find cache (disabled without Redis)
	Objects *objectstore.Bucket
	Peers   *peer.Clients
	// NATS is where the change events go, for a service that consumes
	// them (outbox.Connect, its Stream and SubjectPrefix); a service's own
	// events are recorded through Store and published by the kit's relay.
	NATS           outbox.Config
	Logger         log.Logger
	RequestTimeout time.Duration
	// PublicURL is the registry's public base address (oidc.audience),
	// for a service that writes absolute URLs to it.
	PublicURL     string
	leaderSilence time.Duration
}

// Lock is the schema's lock named name, for work one replica does at a
// time (a consumer, a command that must not run twice at once): its
// sessions on the primary itself (database.direct-url: a session lock
// would not hold through a pooler in transaction mode), the leader's
// silence of database.leader-silence.
func (d Deps) Lock(name string) leader.Lock {
	return leader.Lock{Pool: d.Store.Pool.Sessions(), Name: name, Silence: d.leaderSilence, Logger: d.Logger}
}

// Handlers are what Build returns.
type Handlers struct {
	Routes *httpx.Router
	Checks []process.HealthCheck
	// Jobs are the work the service does beside answering requests (a
	// stream consumer, a projection, a sweeper; job.Job). They run
	// with the kit's own (the outbox relay, the idempotency keys'
	// sweeper) from the end of Build until Close, which stops them all
	// and waits for each to return before anything they use is closed.
	Jobs []job.Job
	// Maintenance are the service's tasks that keep its schema in shape
	// (prunes, purges, partitions made ahead): one replica at a time runs
	// them, with the kit's own (the idempotency keys' and the remembered
	// targets' sweepers), each in bounded steps (leader.Maintenance).
	Maintenance []leader.Task
	// Close releases what the service opened for its jobs (a NATS
	// connection), once they have stopped; optional.
	Close func()
	// LongestRequest bounds the service's slowest request (an upload, say)
	// when that is longer than the request timeout: an Idempotency-Key
	// whose request died stays in flight that long.
	LongestRequest time.Duration
}

// LogFlushInterval is a service's log.flush-interval: its lines reach the
// output at most this late.
const LogFlushInterval = 50 * time.Millisecond

// Config is every flag of a service.
type Config struct {
	Server   process.ServerConfig
	Database store.Config
	Redis    cache.Config
	S3       objectstore.Config
	OIDC     auth.Config
	Peers    peer.Config
	Events   outbox.Config // NATS and the outbox relay
	Log      telemetry.LogConfig
	Timeout  time.Duration
	// RequireOrganization refuses writes from clients bound to no
	// organization (auth.RequireOrganization), unless they hold
	// registry:admin.
	RequireOrganization bool
}

// RegisterFlags adds all flags of the service's catalog entry; each also
// reads the environment variable of its upper-cased name.
func (c *Config) RegisterFlags(fs *flag.FlagSet, entry catalog.Service) {
	c.Server.RegisterFlags(fs, ":8080", ":9090")
	c.Database.RegisterFlags(fs, entry.Name)
	if entry.NeedsStore(catalog.Redis) {
		c.Redis.RegisterFlags(fs)
	}
	if entry.NeedsStore(catalog.ObjectStore) {
		c.S3.RegisterFlags(fs, entry.Name)
	}
	if entry.NeedsStore(catalog.NATS) {
		c.Events.RegisterFlags(fs)
	}
	c.OIDC.RegisterFlags(fs)
	c.Peers.RegisterFlags(fs, entry.Peers())
	// Every call is an access-log line, here as in the gateway: written in
	// batches (one system call for many lines) rather than one by one.
	c.Log.FlushInterval = LogFlushInterval
	c.Log.RegisterFlags(fs)
	fs.DurationVar(&c.Timeout, "request.timeout", 15*time.Second, "upper bound on the work done for one request")
	fs.BoolVar(&c.RequireOrganization, "tenancy.require-organization", false,
		"refuse writes (403 organization-required) from clients that belong to no organization, unless they hold registry:admin: for an installation where every integration that writes is bound to its organization")
}

// Main runs the service with os.Args and returns the exit code. The first
// argument may be "migrate", which applies the migrations and exits (for a
// deploy hook), one of the spec's Commands, which runs over the service's
// dependencies and exits, or "serve" (the default).
func Main(spec Spec) int {
	entry, ok := catalog.Lookup(spec.Name)
	if !ok {
		fmt.Fprintf(os.Stderr, "%s is not in pkg/catalog; add its entry there\n", spec.Name)
		return 2
	}
	commands := maps.Clone(spec.Commands)
	if entry.NeedsStore(catalog.NATS) && len(entry.Kinds) > 0 {
		commands = withOutboxCommands(commands)
	}
	args := os.Args[1:]
	command := "serve"
	if len(args) > 0 && (args[0] == "serve" || args[0] == "migrate" || commands[args[0]].Run != nil) {
		command, args = args[0], args[1:]
	}
	var cfg Config
	register := func(fs *flag.FlagSet) *telemetry.LogConfig {
		cfg.RegisterFlags(fs, entry)
		if spec.Flags != nil {
			spec.Flags(fs)
		}
		if c := commands[command]; c.Flags != nil {
			c.Flags(fs)
		}
		return &cfg.Log
	}
	return process.Execute(spec.Name, args, register, func(ctx context.Context, logger log.Logger) error {
		if command == "migrate" {
			return migrateOnly(ctx, spec, cfg, logger)
		}
		if c, ok := commands[command]; ok && c.DatabaseOnly {
			pool, err := openDatabase(ctx, spec, cfg, logger)
			if err != nil {
				return err
			}
			defer pool.Close()
			return c.Run(ctx, Deps{Store: store.New(pool, nil), Logger: logger, RequestTimeout: cfg.Timeout})
		}
		if c, ok := commands[command]; ok {
			built, err := Build(ctx, spec, cfg, logger)
			if err != nil {
				return err
			}
			defer built.Close()
			return c.Run(ctx, built.Deps)
		}
		return serve(ctx, spec, cfg, logger)
	})
}

func migrateOnly(ctx context.Context, spec Spec, cfg Config, logger log.Logger) error {
	pool, err := openDatabase(ctx, spec, cfg, logger)
	if err != nil {
		return err
	}
	pool.Close()
	level.Info(logger).Log("msg", "migrations applied", "schema", cfg.Database.Schema)
	return nil
}

func serve(ctx context.Context, spec Spec, cfg Config, logger log.Logger) error {
	shutdownTracing, err := telemetry.SetupTracing(ctx, spec.Name, nil)
	if err != nil {
		return err
	}
	defer shutdownTracing(context.Background()) //nolint:errcheck // best effort at exit
	built, err := Build(ctx, spec, cfg, logger)
	if err != nil {
		return err
	}
	defer built.Close()
	return process.Run(ctx, cfg.Server, logger, built.Handler, built.Health)
}

// Built is a service ready to serve.
type Built struct {
	Handler http.Handler // the whole HTTP stack
	Routes  *httpx.Router
	Health  *process.Health
	Store   *store.Store
	Deps    Deps // what Build gave the service
	Close   func()
}

// Build assembles the service's full HTTP handler and its health checks;
// tests use it to run a service in-process against real datastores.
func Build(ctx context.Context, spec Spec, cfg Config, logger log.Logger) (b Built, err error) {
	doc, err := openapi.Bundle(spec.OpenAPIYAML)
	if err != nil {
		return b, err
	}
	docJSON, err := openapi.JSON(doc)
	if err != nil {
		return b, err
	}
	var closers []func()
	b.Close = func() {
		for i := len(closers) - 1; i >= 0; i-- {
			closers[i]()
		}
	}
	defer func() {
		if err != nil {
			b.Close()
		}
	}()
	verifier, err := auth.NewVerifier(cfg.OIDC)
	if err != nil {
		return b, err
	}
	closers = append(closers, verifier.Close)
	if err := verifier.Start(ctx, logger); err != nil {
		return b, err
	}
	pool, err := openDatabase(ctx, spec, cfg, logger)
	if err != nil {
		return b, err
	}
	closers = append(closers, pool.Close)
	// Every call needs the issuer's keys; once loaded they outlive an
	// issuer outage, so this check fails only until the first load.
	checks := []process.HealthCheck{{Name: "postgres", Probe: store.Ping(pool)}, {Name: "oidc", Probe: verifier.Ready}}
	if cfg.Database.ReadURL != "" {
		// Optional: the primary stands in for a replica that is down.
		checks = append(checks, process.HealthCheck{Name: "postgres-read", Optional: true, Probe: pool.ReplicaReady})
	}

	redisClient, err := cache.Connect(cfg.Redis)
	if err != nil {
		return b, err
	}
	if redisClient != nil {
		closers = append(closers, func() { _ = redisClient.Close() })
		checks = append(checks, process.HealthCheck{Name: "redis", Optional: true, Probe: func(ctx context.Context) error {
			return redisClient.Ping(ctx).Err()
		}})
	}
	// The namespace names the database too: installations that share a
	// Redis (test and production, say) must never see each other's finds.
	cc := pool.Config().ConnConfig
	namespace := fmt.Sprintf("%s:%s:%d/%s/%s", spec.Name, cc.Host, cc.Port, cc.Database, cfg.Database.Schema)
	finds := cache.NewFinds(redisClient, namespace, cfg.Redis, logger)
	deps := Deps{
		Store:          store.New(pool, finds),
		Finds:          finds,
		NATS:           cfg.Events,
		Logger:         logger,
		RequestTimeout: cfg.Timeout,
		PublicURL:      cfg.OIDC.Audience,
		leaderSilence:  cfg.Database.LeaderSilence,
	}
	cfg.Events.LeaderSilence = cfg.Database.LeaderSilence
	if cfg.S3.Endpoint != "" {
		if deps.Objects, err = objectstore.Open(ctx, cfg.S3); err != nil {
			return b, err
		}
		checks = append(checks, process.HealthCheck{Name: "s3", Probe: deps.Objects.Ready})
	}
	var jobs []job.Job
	// A service that owns kinds records an event for each write and relays
	// them to the stream; one that owns none and needs NATS (the events
	// service) consumes the stream itself, with deps.NATS, and runs no relay.
	if entry, _ := catalog.Lookup(spec.Name); entry.NeedsStore(catalog.NATS) && len(entry.Kinds) > 0 {
		deps.Store.Events = outbox.NewRecorder(cfg.Events)
		if cfg.Events.Enabled() {
			closeNATS, relay, err := newRelay(spec.Name, pool, deps.Store.Events, cfg, logger)
			if err != nil {
				return b, err
			}
			closers = append(closers, closeNATS)
			jobs = append(jobs, relay.Job())
			// Optional: NATS down stops the events, never the writes, so
			// it must not take the service out of its load balancer.
			checks = append(checks, process.HealthCheck{Name: "relay", Optional: true, Probe: relay.Ready})
		} else {
			level.Warn(logger).Log("msg", "nats.url is not set: events are recorded in the outbox but not published")
		}
	}
	peers := cfg.Peers
	peers.Logger = logger
	if deps.Peers, err = peer.NewClients(peers, cfg.OIDC.Issuer, cfg.OIDC.Audience); err != nil {
		return b, err
	}
	handlers, err := spec.Build(deps)
	if err != nil {
		return b, err
	}
	if handlers.Close != nil {
		closers = append(closers, handlers.Close)
	}
	b.Routes, b.Store, b.Deps = handlers.Routes, deps.Store, deps
	// The jobs start last (below); their check asks them once they run.
	var running *job.Running
	jobsReady := func(ctx context.Context) error {
		if running == nil {
			return nil
		}
		return running.Ready(ctx)
	}
	b.Health = process.NewHealth(append(append(checks, handlers.Checks...), process.HealthCheck{Name: "jobs", Probe: jobsReady})...)
	public := http.NewServeMux()
	b.Health.Mount(public)
	public.HandleFunc("GET /openapi.json", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(docJSON)
	})
	mountAnonymous(public, handlers.Routes)
	longest := max(cfg.Timeout, handlers.LongestRequest)
	keys := endpoints.NewIdempotencyKeys(deps.Store, 2*longest, cfg.Timeout)
	tasks := append([]leader.Task{keys.SweepTask(), refs.ForgetTask(refs.ForgetAfter(longest))}, handlers.Maintenance...)
	jobs = append(jobs, leader.Maintenance{Lock: deps.Lock("maintenance"), Tasks: tasks, Pause: maintenancePause}.Job())
	// Started last and so stopped first: Close stops every job before it
	// closes what they use.
	running = job.Start(logger, append(jobs, handlers.Jobs...)...)
	closers = append(closers, running.Stop)
	// The organization rule runs in every service, where each request
	// arrives (the gateway only passes it on), so a service reached around
	// the gateway holds it too; and before the idempotency keys, so that a
	// refused write remembers nothing.
	protected := keys.Handler(handlers.Routes)
	if cfg.RequireOrganization {
		protected = auth.RequireOrganization(protected)
	}
	b.Handler = process.Stack(logger, spec.Name, true, public, auth.Authenticate(verifier)(protected), cfg.Server.Read)
	return b, nil
}

// mountAnonymous serves the routes that declare endpoints.Anonymous
// beside the probes, before authentication: a call without a token (or
// with one) reaches them as it is, and their scope check lets them pass.
func mountAnonymous(public *http.ServeMux, routes *httpx.Router) {
	for _, r := range routes.Routes() {
		if slices.Contains(r.Rules, auth.AnonymousRule) {
			public.Handle(r.Method+" "+r.Pattern, routes)
		}
	}
}

// maintenancePause is the breath between two steps of a maintenance task.
const maintenancePause = 10 * time.Millisecond

// newRelay connects to NATS and makes the outbox relay of the service's
// schema, whose job the caller runs. Connecting never fails on NATS being
// down: the connection keeps trying in the background while writes record
// their events.
func newRelay(name string, pool *store.Pool, rec *outbox.Recorder, cfg Config, logger log.Logger) (closeNATS func(), relay *outbox.Relay, err error) {
	nc, err := outbox.Connect(cfg.Events, name)
	if err != nil {
		return nil, nil, err
	}
	// The relay's leader holds a session lock: on the primary itself.
	relay, err = outbox.NewRelay(pool.Sessions(), cfg.Database.Schema, nc, rec, cfg.Events, logger)
	if err != nil {
		nc.Close()
		return nil, nil, err
	}
	return nc.Close, relay, nil
}

func openDatabase(ctx context.Context, spec Spec, cfg Config, logger log.Logger) (*store.Pool, error) {
	if spec.Migrations == nil {
		return nil, errors.New("service: the spec has no migrations")
	}
	return store.OpenAndMigrateSets(ctx, cfg.Database, store.LogRetries(logger), store.Migrations(spec.Migrations)...)
}
