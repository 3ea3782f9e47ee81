package events

import (
	"context"
	"embed"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/go-kit/log/level"
	"github.com/google/uuid"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/assetregistry/registry/pkg/access"
	"github.com/assetregistry/registry/pkg/endpoints"
	"github.com/assetregistry/registry/pkg/job"
	"github.com/assetregistry/registry/pkg/leader"
	"github.com/assetregistry/registry/pkg/outbox"
	"github.com/assetregistry/registry/pkg/process"
	"github.com/assetregistry/registry/pkg/servicekit"
	"github.com/assetregistry/registry/services/events/feed"
	"github.com/assetregistry/registry/services/events/tlog"
	"github.com/assetregistry/registry/services/events/tlog/passport"
	"github.com/assetregistry/registry/services/events/tlog/witness"
	"github.com/assetregistry/registry/services/events/webhooks"
)

// files are the migrations and the OpenAPI document, in the binary.
//
//go:embed migrations/*.sql openapi.yaml
var files embed.FS

// Config is the events service's own settings.
type Config struct {
	// Retention is how long the feed keeps an event (a cursor from before
	// is a 410); PruneEvery how often it removes older ones.
	Retention, PruneEvery time.Duration
	Durable               string // names the stored stream position
	Batch                 int    // events stored per transaction at most
	// AllowedOrigins are exempt from the https-only and public-address
	// rules of webhook URLs ("http://127.0.0.1:*" under make run).
	AllowedOrigins  string
	Timeout         time.Duration // of one delivery attempt
	Workers         int           // delivery attempts at once
	MaxInFlight     int           // delivery attempts of one subscription at once
	MaxPerClient    int           // subscriptions of one client
	Poll            time.Duration // the dispatcher's look for due retries
	RotationOverlap time.Duration
	Retry           webhooks.RetrySchedule
	// HistoryRetention is how long histories keep an event (0: for good);
	// each resource's latest event stays whatever its age.
	HistoryRetention time.Duration
	// DeliveryRetention is how long a delivery that succeeded or failed
	// stays listed (0: for good).
	DeliveryRetention time.Duration
	Log               LogConfig
	// Redact is what `events redact-person` redacts.
	Redact RedactConfig
	// PublicURL is the registry's public base address, which passport
	// links start with ("": the oidc audience).
	PublicURL string
}

// RedactConfig names an erasure request: whose personal fields, and why.
type RedactConfig struct{ Person, Reason string }

// LogConfig is the transparency log's settings.
type LogConfig struct {
	// SigningKey is the note signing key of checkpoints
	// (PRIVATE+KEY+<origin>+<hash>+<key>); PreviousKeys the verifier keys
	// of keys that signed before, comma-separated.
	SigningKey, PreviousKeys string
	CheckpointEvery          time.Duration
	// AuditEvery is how often the leader derives the tree again from what
	// is stored and checks it against the signed checkpoints (0: never).
	AuditEvery time.Duration
	// Witnesses cosign the checkpoints: "<url> <verifier key>" each,
	// comma-separated (C2SP tlog-witness).
	Witnesses string
}

// Keys reads the signing key and the previous ones.
func (c LogConfig) Keys() (tlog.LogKeys, error) {
	return tlog.ParseLogKeys(strings.TrimSpace(c.SigningKey), strings.Split(c.PreviousKeys, ","))
}

// RegisterFlags adds the transparency.* flags.
func (c *LogConfig) RegisterFlags(fs *flag.FlagSet) {
	fs.StringVar(&c.SigningKey, "transparency.signing-key", "", "note signing key of the log's checkpoints, PRIVATE+KEY+<origin>+<hash>+<key> (a Secret); without it no checkpoint is signed")
	fs.StringVar(&c.PreviousKeys, "transparency.previous-keys", "", "comma-separated verifier keys (<origin>+<hash>+<key>) of signing keys used before, still published so that their checkpoints verify")
	fs.DurationVar(&c.CheckpointEvery, "transparency.checkpoint-every", 5*time.Second, "how often a checkpoint is signed while events arrive (at most 10s)")
	fs.StringVar(&c.Witnesses, "transparency.witnesses", "", "comma-separated witnesses that cosign the checkpoints (C2SP tlog-witness), each \"<url> <verifier key>\": the leader submits every new checkpoint to <url>/add-checkpoint and serves the cosignatures with it")
	fs.DurationVar(&c.AuditEvery, "transparency.audit-every", 24*time.Hour, "how often the leading replica derives the log again from the stored events and checks it against the signed checkpoints; 0 never (events audit runs it on demand)")
}

// DefaultConfig is production's: what the flags default to.
func DefaultConfig() Config {
	var c Config
	fs := flag.NewFlagSet("events", flag.ContinueOnError)
	c.RegisterFlags(fs)
	return c
}

// RegisterFlags adds the events.* and webhooks.* flags.
func (c *Config) RegisterFlags(fs *flag.FlagSet) {
	fs.DurationVar(&c.Retention, "events.retention", 30*24*time.Hour, "how long the change feed keeps an event (at least 30 days by the contract); an older cursor is a 410")
	fs.DurationVar(&c.PruneEvery, "events.prune-every", time.Hour, "how often events past retention leave the feed")
	fs.DurationVar(&c.HistoryRetention, "events.history-retention", 0, "how long histories keep an event; 0 keeps them for good (each resource's latest event is always kept)")
	fs.StringVar(&c.Durable, "events.durable", "events", "name of the stream position the feed stores with each batch (it survives restarts; replicas share it)")
	fs.IntVar(&c.Batch, "events.batch", 256, "events stored per transaction at most")
	fs.StringVar(&c.AllowedOrigins, "webhooks.allowed-origins", "", "comma-separated origins (scheme://host:port, port may be *) a webhook may use although plain http or private, e.g. http://127.0.0.1:*")
	fs.DurationVar(&c.Timeout, "webhooks.timeout", 15*time.Second, "a delivery not answered with a 2xx within this is a failed attempt")
	fs.IntVar(&c.Workers, "webhooks.workers", 32, "delivery attempts in flight at once (per replica)")
	fs.IntVar(&c.MaxInFlight, "webhooks.max-in-flight", 4, "delivery attempts of one subscription in flight at once (across replicas): a receiver that hangs holds at most this many workers")
	fs.IntVar(&c.MaxPerClient, "webhooks.max-per-client", 25, "webhook subscriptions one client may have; one more is a 409 (subscription-limit)")
	fs.DurationVar(&c.Poll, "webhooks.poll", 500*time.Millisecond, "how often the dispatcher looks for retries that fell due")
	fs.DurationVar(&c.RotationOverlap, "webhooks.rotation-overlap", 24*time.Hour, "how long the previous secret still signs deliveries after a rotation")
	fs.DurationVar(&c.DeliveryRetention, "webhooks.delivery-retention", 30*24*time.Hour, "how long a delivery that succeeded or failed stays listed (by its last attempt); 0 keeps them for good")
	c.Retry.RegisterFlags(fs)
	c.Log.RegisterFlags(fs)
	fs.StringVar(&c.PublicURL, "passports.public-url", "", "the registry's public base address (https://registry.example.com), which passport links start with; empty: oidc.audience")
	fs.StringVar(&c.Redact.Person, "redact.person", "", "events redact-person: the id of the person whose personal fields leave every event")
	fs.StringVar(&c.Redact.Reason, "redact.reason", "", "events redact-person: why (an erasure request's reference), recorded in the log")
}

// Spec describes the events service to the service kit.
func Spec() servicekit.Spec { return SpecWith(DefaultConfig()) }

// SpecWith is Spec with other settings (tests compress the retry
// schedule and allow loopback receivers).
func SpecWith(cfg Config) servicekit.Spec {
	spec := servicekit.Embedded("events", files)
	spec.Flags = cfg.RegisterFlags
	spec.Build = func(d servicekit.Deps) (servicekit.Handlers, error) { return build(d, cfg) }
	spec.Commands = map[string]servicekit.Command{
		"audit": {
			Summary: "derive the transparency log again from the stored events, check it against every signed checkpoint, print what differs and exit (1 when anything does)",
			Run:     func(ctx context.Context, d servicekit.Deps) error { return auditCommand(ctx, d, cfg.Log) },
		},
		"redact-person": {
			Summary: "remove a person's personal fields from every event that holds them (an erasure request: -redact.person ID -redact.reason TEXT), recording each redaction in the log, then exit",
			Run:     func(ctx context.Context, d servicekit.Deps) error { return redactCommand(ctx, d, cfg.Redact) },
		},
	}
	return spec
}

// build wires the service: the store, the address rules of webhooks, the
// endpoints; and, beside the server, the stream consumer, the delivery
// dispatcher and the feed's retention.
func build(d servicekit.Deps, cfg Config) (servicekit.Handlers, error) {
	origins, err := webhooks.ParseOrigins(cfg.AllowedOrigins)
	if err != nil {
		return servicekit.Handlers{}, err
	}
	keys, err := cfg.Log.Keys()
	if err != nil {
		return servicekit.Handlers{}, err
	}
	if cfg.Log.CheckpointEvery <= 0 || cfg.Log.CheckpointEvery > 10*time.Second {
		return servicekit.Handlers{}, fmt.Errorf("transparency.checkpoint-every must be more than 0 and at most 10s, not %s", cfg.Log.CheckpointEvery)
	}
	if !keys.CanSign() {
		level.Warn(d.Logger).Log("msg", "transparency.signing-key is not set: the log grows but no checkpoint is signed")
	}
	witnesses, err := witness.ParseWitnesses(cfg.Log.Witnesses)
	if err != nil {
		return servicekit.Handlers{}, err
	}
	log := tlog.NewStore(d.Store)
	st := feed.NewStore(d.Store, log)
	// Who sees which asset: the events service's copy of the assets
	// service's owners and grants (pkg/access), which every read by a
	// bound client, and the webhooks' fan-out, filter on.
	seen := access.New(d.Store, d.Peers.Get("assets"))
	st.UseAccess(seen)
	passports := passport.NewStore(st.LogReader)
	policy := webhooks.AddressPolicy{Exempt: origins}
	if cfg.Workers < 1 || cfg.MaxInFlight < 1 || cfg.MaxPerClient < 1 {
		return servicekit.Handlers{}, fmt.Errorf("webhooks: workers (%d), max-in-flight (%d) and max-per-client (%d) must be at least 1",
			cfg.Workers, cfg.MaxInFlight, cfg.MaxPerClient)
	}
	timeout := endpoints.Timeout(d.RequestTimeout)
	routes := endpoints.NewRouter()
	endpoints.Mount(routes, feed.Routes(feed.NewService(st)), timeout)
	endpoints.Mount(routes, tlog.Routes(tlog.NewService(log, tlog.Settings{Keys: keys})), timeout)
	publicURL := cfg.PublicURL
	if publicURL == "" {
		publicURL = d.PublicURL
	}
	// A passport carries the asset's compliance rows, which the actions
	// service answers (none when it is not deployed).
	endpoints.Mount(routes, passport.Routes(passport.NewService(passports, log,
		passport.Settings{PublicURL: publicURL}, passport.PeerCompliance(d.Peers.Get("actions")))), timeout)
	hooks := webhooks.NewStore(d.Store)
	endpoints.Mount(routes, webhooks.Routes(webhooks.NewService(hooks, webhooks.Settings{Policy: policy,
		RotationOverlap: cfg.RotationOverlap, MaxPerClient: cfg.MaxPerClient})), timeout)
	h := servicekit.Handlers{Routes: routes}
	dispatcher := (&webhooks.Dispatcher{Store: hooks, Policy: policy, Schedule: cfg.Retry, Timeout: cfg.Timeout,
		Workers: cfg.Workers, MaxInFlight: cfg.MaxInFlight, Poll: cfg.Poll, Logger: d.Logger, Access: seen}).Init()
	h.Jobs = []job.Job{
		{Name: "webhook dispatcher", Run: dispatcher.Run},
	}
	h.Maintenance = maintenance(cfg)
	// Connecting never fails on NATS being down: the connection keeps
	// trying in the background, and the consumer waits for it.
	nc, err := outbox.ConnectIfEnabled(d.NATS, "events", d.Logger, "the feed receives no events")
	if nc == nil || err != nil {
		return h, err
	}
	h.Close = nc.Close // once the jobs have stopped
	js, err := jetstream.New(nc)
	if err != nil {
		nc.Close()
		return h, fmt.Errorf("events: jetstream: %w", err)
	}
	consumer := &feed.Consumer{Store: st, Lock: d.Lock("events consumer"), JS: js, Stream: d.NATS.Stream, Subject: d.NATS.SubjectPrefix + ".>",
		Name: cfg.Durable, Batch: cfg.Batch, Stored: dispatcher.Wake, Logger: d.Logger,
		// The leader alone appends to the log and signs it.
		Leading: []job.Job{job.Every("log checkpointer", cfg.Log.CheckpointEvery, tlog.Checkpointer(log, keys, d.Logger)),
			// The leader alone counts: replicas would each repeat the count.
			webhooks.DeliveryCounter(hooks, d.Logger)}}
	if len(witnesses) > 0 {
		consumer.Leading = append(consumer.Leading, job.Every("log witnesses", cfg.Log.CheckpointEvery,
			witness.Submitter(log, witness.NewStore(d.Store), witnesses, &http.Client{}, d.Logger)))
	}
	if cfg.Log.AuditEvery > 0 {
		consumer.Leading = append(consumer.Leading, job.Later("log auditor", cfg.Log.AuditEvery, tlog.Auditor(log, keys, d.Logger)))
	}
	h.Jobs = append(h.Jobs, job.Job{Name: "events consumer", Run: consumer.Run})
	// The API answers without NATS (the feed only stops growing), so the
	// stream is reported, not required.
	h.Checks = append(h.Checks, process.HealthCheck{Name: "nats", Optional: true, Probe: func(context.Context) error {
		if !nc.IsConnected() {
			return errors.New("not connected to NATS")
		}
		return nil
	}})
	return h, nil
}

// auditCommand is `events audit`.
func auditCommand(ctx context.Context, d servicekit.Deps, cfg LogConfig) error {
	keys, err := cfg.Keys()
	if err != nil {
		return err
	}
	r, err := tlog.NewStore(d.Store).Audit(ctx, keys)
	if err != nil {
		return err
	}
	fmt.Fprintf(os.Stdout, "audited %d leaves (%d pruned events taken from the tiles) against %d checkpoints\n", r.Leaves, r.Kept, r.Checkpoints)
	for _, p := range r.Problems {
		fmt.Fprintln(os.Stdout, "MISMATCH", p)
	}
	if len(r.Problems) > 0 {
		return fmt.Errorf("the stored log does not match what was signed: %d problems", len(r.Problems))
	}
	fmt.Fprintln(os.Stdout, "everything stored matches the signed checkpoints")
	return nil
}

// redactCommand is `events redact-person`.
func redactCommand(ctx context.Context, d servicekit.Deps, r RedactConfig) error {
	person, err := uuid.Parse(r.Person)
	if err != nil || r.Reason == "" {
		return errors.New("events redact-person needs -redact.person (the person's id) and -redact.reason (why: it is recorded in the log)")
	}
	n, err := tlog.NewStore(d.Store).RedactPerson(ctx, person, r.Reason)
	if err != nil {
		return err
	}
	fmt.Fprintf(os.Stdout, "redacted person %s in %d events; each redaction is an entry of the log\n", person, n)
	return nil
}

// partitionsEvery is how often the partitions ahead are made up.
const partitionsEvery = 10 * time.Minute

// maintenance is the events schema's tasks for cfg: the feed's and the
// deliveries' (pkg/leader: on one replica at a time, a bounded batch per
// step).
func maintenance(cfg Config) []leader.Task {
	return append(feed.Tasks(partitionsEvery, cfg.Retention, cfg.PruneEvery, cfg.HistoryRetention),
		webhooks.Tasks(partitionsEvery, cfg.DeliveryRetention)...)
}
