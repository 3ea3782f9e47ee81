package outbox

import (
	"errors"
	"flag"
	"fmt"
	"time"

	"github.com/go-kit/log"
	"github.com/go-kit/log/level"
	"github.com/nats-io/nats.go"
)

// Config is where a service's events go: the NATS servers, the user, the
// stream; and how the relay works.
type Config struct {
	URL, User, Password string
	// Stream and SubjectPrefix are StreamName and SubjectPrefix in
	// production; tests sharing one NATS server each take their own.
	Stream, SubjectPrefix string
	Replicas              int           // copies JetStream keeps of the stream
	MaxAge                time.Duration // how long the stream keeps an event
	DuplicateWindow       time.Duration // JetStream's Nats-Msg-Id deduplication window

	// Record false skips recording events altogether: only for measuring
	// what they cost (make bench), never in production.
	Record    bool
	Batch     int           // events the relay publishes per round
	Poll      time.Duration // the relay's wait when no write wakes it
	Retention time.Duration // how long published events stay in the outbox_published table (0: deleted once acknowledged)
	// LeaderSilence is how long the leading relay may say nothing to
	// PostgreSQL before its session, and the lead, go to a standby
	// (database.leader-silence; 0: leader.DefaultSilence).
	LeaderSilence time.Duration
}

// RegisterFlags adds the nats.* and outbox.* flags (env NATS_URL,
// NATS_USER, NATS_PASSWORD, ...).
func (c *Config) RegisterFlags(fs *flag.FlagSet) {
	fs.StringVar(&c.URL, "nats.url", "", "NATS server URLs (comma-separated) of the change events' JetStream stream; empty: events are recorded but not published")
	fs.StringVar(&c.User, "nats.user", "", "NATS user")
	fs.StringVar(&c.Password, "nats.password", "", "NATS password")
	fs.StringVar(&c.Stream, "nats.stream", StreamName, "JetStream stream of the change events")
	fs.StringVar(&c.SubjectPrefix, "nats.subject-prefix", SubjectPrefix, "subjects of the change events: <prefix>.<kind>.<id>")
	fs.IntVar(&c.Replicas, "nats.stream-replicas", 1, "copies JetStream keeps of the stream when the relay creates or updates it (3 on a three-node cluster)")
	fs.DurationVar(&c.MaxAge, "nats.stream-max-age", 7*24*time.Hour, "how long the stream keeps an event for its consumers")
	fs.DurationVar(&c.DuplicateWindow, "nats.duplicate-window", 10*time.Minute, "JetStream drops a second publish of an event within this window (a relay killed between publishing and marking)")
	fs.BoolVar(&c.Record, "outbox.record", true, "record an event for every write; false only to measure what events cost")
	fs.IntVar(&c.Batch, "outbox.batch", 256, "events the relay publishes per round")
	fs.DurationVar(&c.Poll, "outbox.poll", 100*time.Millisecond, "how often the relay looks for events besides when a write of its own process wakes it (writes of other replicas wait up to this)")
	fs.DurationVar(&c.Retention, "outbox.retention", 0, "how long published events stay in the outbox_published table for inspection (0: deleted as soon as the stream has acknowledged them; the events service keeps the feed)")
}

// Enabled reports whether events are published (a NATS URL is set).
func (c Config) Enabled() bool { return c.URL != "" }

// Connect opens a connection to NATS that keeps trying, in the background,
// for as long as the process lives: a NATS that is down at start or goes
// away later never stops the service (its writes keep recording events,
// which wait in the outbox), and nothing is buffered in the client while
// disconnected (a publish then fails at once, and the relay tries again).
func Connect(cfg Config, name string) (*nats.Conn, error) {
	if cfg.URL == "" {
		return nil, errors.New("outbox: nats.url is required")
	}
	opts := []nats.Option{
		nats.Name(name),
		nats.RetryOnFailedConnect(true),
		nats.MaxReconnects(-1),
		nats.ReconnectWait(time.Second),
		nats.ReconnectJitter(500*time.Millisecond, time.Second),
		nats.ReconnectBufSize(-1),
		nats.Timeout(10 * time.Second), // a busy server's connect handshake
	}
	if cfg.User != "" {
		opts = append(opts, nats.UserInfo(cfg.User, cfg.Password))
	}
	nc, err := nats.Connect(cfg.URL, opts...)
	if err != nil {
		return nil, fmt.Errorf("outbox: connect to nats: %w", err)
	}
	return nc, nil
}

// ConnectIfEnabled is Connect when cfg names a server. Without one the
// service still runs, only what follows the stream stands still: it warns
// what goes without events (without) and answers no connection.
func ConnectIfEnabled(cfg Config, name string, logger log.Logger, without string) (*nats.Conn, error) {
	if !cfg.Enabled() {
		level.Warn(logger).Log("msg", "nats.url is not set: "+without)
		return nil, nil
	}
	return Connect(cfg, name)
}
