package events

import (
	"context"
	"embed"
	"errors"
	"flag"
	"fmt"
	"time"

	"github.com/go-kit/log"
	"github.com/go-kit/log/level"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/assetregistry/registry/pkg/endpoints"
	"github.com/assetregistry/registry/pkg/outbox"
	"github.com/assetregistry/registry/pkg/process"
	"github.com/assetregistry/registry/pkg/servicekit"
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
	Poll            time.Duration // the dispatcher's look for due retries
	RotationOverlap time.Duration
	Retry           RetrySchedule
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
	fs.StringVar(&c.Durable, "events.durable", "events", "name of the stream position the feed stores with each batch (it survives restarts; replicas share it)")
	fs.IntVar(&c.Batch, "events.batch", 256, "events stored per transaction at most")
	fs.StringVar(&c.AllowedOrigins, "webhooks.allowed-origins", "", "comma-separated origins (scheme://host:port, port may be *) a webhook may use although plain http or private, e.g. http://127.0.0.1:*")
	fs.DurationVar(&c.Timeout, "webhooks.timeout", 15*time.Second, "a delivery not answered with a 2xx within this is a failed attempt")
	fs.IntVar(&c.Workers, "webhooks.workers", 32, "delivery attempts in flight at once")
	fs.DurationVar(&c.Poll, "webhooks.poll", 500*time.Millisecond, "how often the dispatcher looks for retries that fell due")
	fs.DurationVar(&c.RotationOverlap, "webhooks.rotation-overlap", 24*time.Hour, "how long the previous secret still signs deliveries after a rotation")
	c.Retry.RegisterFlags(fs)
}

// Spec describes the events service to the service kit.
func Spec() servicekit.Spec { return SpecWith(DefaultConfig()) }

// SpecWith is Spec with other settings (tests compress the retry
// schedule and allow loopback receivers).
func SpecWith(cfg Config) servicekit.Spec {
	spec := servicekit.Embedded("events", files)
	spec.Flags = cfg.RegisterFlags
	spec.Build = func(d servicekit.Deps) (servicekit.Handlers, error) { return build(d, cfg) }
	return spec
}

// build wires the service: the store, the address rules of webhooks, the
// endpoints; and, beside the server, the stream consumer, the delivery
// dispatcher and the feed's retention.
func build(d servicekit.Deps, cfg Config) (servicekit.Handlers, error) {
	origins, err := ParseOrigins(cfg.AllowedOrigins)
	if err != nil {
		return servicekit.Handlers{}, err
	}
	st := NewStore(d.Store)
	policy := AddressPolicy{Exempt: origins}
	svc := NewService(st, Settings{Policy: policy, RotationOverlap: cfg.RotationOverlap})
	h := servicekit.Handlers{Routes: NewHTTPHandler(MakeEndpoints(svc, endpoints.Timeout(d.RequestTimeout)))}
	dispatcher := (&Dispatcher{Store: st, Policy: policy, Schedule: cfg.Retry, Timeout: cfg.Timeout,
		Workers: cfg.Workers, Poll: cfg.Poll, Logger: d.Logger}).Init()
	h.Background = []func(context.Context){
		dispatcher.Run,
		every(cfg.PruneEvery, pruner(st, cfg.Retention, d.Logger)),
		every(15*time.Second, countDeliveries(st, d.Logger)),
	}
	if !d.NATS.Enabled() {
		level.Warn(d.Logger).Log("msg", "nats.url is not set: the feed receives no events")
		return h, nil
	}
	// Connecting never fails on NATS being down: the connection keeps
	// trying in the background, and the consumer waits for it.
	nc, err := outbox.Connect(d.NATS, "events")
	if err != nil {
		return h, err
	}
	h.Close = nc.Close
	js, err := jetstream.New(nc)
	if err != nil {
		nc.Close()
		return h, fmt.Errorf("events: jetstream: %w", err)
	}
	consumer := &Consumer{Store: st, Pool: d.Store.Pool.Pool, JS: js, Stream: d.NATS.Stream, Subject: d.NATS.SubjectPrefix + ".>",
		Name: cfg.Durable, Batch: cfg.Batch, Stored: dispatcher.Wake, Logger: d.Logger}
	h.Background = append(h.Background, consumer.Run)
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

// pruner is the job that removes what retention no longer keeps.
func pruner(st *Store, retention time.Duration, logger log.Logger) func(context.Context) {
	return func(ctx context.Context) {
		n, err := st.Prune(ctx, retention)
		switch {
		case err != nil && ctx.Err() == nil:
			level.Warn(logger).Log("msg", "pruning the feed failed; retrying later", "err", err)
		case n > 0:
			level.Info(logger).Log("msg", "pruned the feed", "events", n)
		}
	}
}

// every runs job now and then every interval until ctx ends.
func every(interval time.Duration, job func(context.Context)) func(context.Context) {
	return func(ctx context.Context) {
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			job(ctx)
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
		}
	}
}
