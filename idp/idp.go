// Package idp is a small OAuth 2.0 / OpenID Connect identity provider for
// the registry's machine clients, for local runs, tests and small installs
// (production may use any OIDC issuer). It issues RS256-signed JWT access
// tokens (RFC 9068) for the client credentials grant with resource
// indicators (RFC 8707), and publishes its discovery document and JWKS.
//
// Layers: transport.go (HTTP), service.go (token rules), clients.go (the
// admin API over clients and secrets), store.go (PostgreSQL), keys.go
// (signing keys and the JWKS); cli.go is the idp command.
package idp

import (
	"context"
	"embed"
	"flag"
	"fmt"
	"io/fs"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/go-kit/log"
	"github.com/go-kit/log/level"

	"github.com/assetregistry/registry/pkg/job"
	"github.com/assetregistry/registry/pkg/process"
	"github.com/assetregistry/registry/pkg/store"
	"github.com/assetregistry/registry/pkg/telemetry"
)

// DefaultTokenTTL is the lifetime of access tokens unless configured.
const DefaultTokenTTL = 15 * time.Minute

// DefaultInternalTokenTTL is the lifetime of the services' own tokens (of
// clients holding registry:internal) unless configured. A service renews
// its token halfway through its life and goes on with the one it holds
// while the identity provider is away, so an outage shorter than half of
// this costs no call between services.
const DefaultInternalTokenTTL = time.Hour

//go:embed migrations/*.sql
var migrationFiles embed.FS

// Migrations returns the IdP's schema migrations, for store.Migrate or
// store.OpenAndMigrate.
func Migrations() fs.FS {
	sub, err := fs.Sub(migrationFiles, "migrations")
	if err != nil {
		panic(err) // the embed pattern guarantees the folder
	}
	return sub
}

// Config is every setting of the IdP.
type Config struct {
	Issuer           string        // public base URL: iss of the tokens, base of the endpoints
	TokenTTL         time.Duration // 0 means DefaultTokenTTL
	InternalTokenTTL time.Duration // 0 means DefaultInternalTokenTTL
	SigningKeyFile   string
	PreviousKeyFiles []string
	Throttle         ThrottleConfig // zero: no throttle (the flags' defaults throttle)
	Validity         ValidityConfig // zero: the defaults, but no limit per address
	Database         store.Config
	Server           process.ServerConfig
	Log              telemetry.LogConfig
}

// RegisterFlags adds the IdP's flags; app.ParseFlags gives each the
// environment variable of its upper-cased name (issuer -> ISSUER,
// signing-key-file -> SIGNING_KEY_FILE, database.url -> DATABASE_URL).
func (c *Config) RegisterFlags(fs *flag.FlagSet) {
	fs.StringVar(&c.Issuer, "issuer", "", "public base URL of this IdP, e.g. http://127.0.0.1:8090; the iss of its tokens (required)")
	fs.DurationVar(&c.TokenTTL, "token-ttl", DefaultTokenTTL, "lifetime of access tokens")
	fs.DurationVar(&c.InternalTokenTTL, "internal-token-ttl", DefaultInternalTokenTTL,
		"lifetime of the services' own access tokens (clients holding registry:internal): renewed halfway, so an outage of the identity provider shorter than half of it costs no call between services")
	fs.StringVar(&c.SigningKeyFile, "signing-key-file", "", "PEM RSA private key that signs tokens; created (mode 0600) when missing (required)")
	fs.Func("previous-key-files", "comma-separated PEM files of earlier signing keys, published in the JWKS so their tokens verify until they expire", func(v string) error {
		for _, f := range strings.Split(v, ",") {
			if f = strings.TrimSpace(f); f != "" {
				c.PreviousKeyFiles = append(c.PreviousKeyFiles, f)
			}
		}
		return nil
	})
	c.Throttle.RegisterFlags(fs)
	c.Validity.RegisterFlags(fs)
	c.Database.RegisterFlags(fs, "idp")
	c.Server.RegisterFlags(fs, ":8090", ":9091")
	c.Log.RegisterFlags(fs)
}

func (c Config) validate() error {
	u, err := url.Parse(c.Issuer)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
		return fmt.Errorf("idp: issuer %q must be an http(s) URL without query or fragment", c.Issuer)
	}
	if c.TokenTTL < 0 || c.InternalTokenTTL < 0 {
		return fmt.Errorf("idp: token-ttl %s or internal-token-ttl %s is negative", c.TokenTTL, c.InternalTokenTTL)
	}
	if err := c.Validity.validate(); err != nil {
		return err
	}
	return c.Throttle.validate()
}

// Provider is an assembled IdP: its HTTP handler, its probes and the admin
// API, over one database pool.
type Provider struct {
	Clients  *Clients
	handler  http.Handler
	health   *process.Health
	pool     *store.Pool
	throttle *throttle
	validity *validityList
	stopJobs func()
}

// Open loads (or creates) the signing key, connects to the database,
// applies the migrations and assembles the IdP. Close releases it.
func Open(ctx context.Context, cfg Config, logger log.Logger) (*Provider, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	if cfg.TokenTTL == 0 {
		cfg.TokenTTL = DefaultTokenTTL
	}
	if cfg.InternalTokenTTL == 0 {
		cfg.InternalTokenTTL = DefaultInternalTokenTTL
	}
	keys, err := LoadKeys(cfg.SigningKeyFile, cfg.PreviousKeyFiles)
	if err != nil {
		return nil, err
	}
	pool, err := store.OpenAndMigrate(ctx, cfg.Database, Migrations(), store.LogRetries(logger))
	if err != nil {
		return nil, fmt.Errorf("idp: database: %w", err)
	}
	clients := NewClients(pool)
	svc := &tokenService{issuer: cfg.Issuer, ttl: cfg.TokenTTL, internalTTL: cfg.InternalTokenTTL, keys: keys, clients: clients, throttle: newThrottle(cfg.Throttle)}
	validity := newValidityList(clients, cfg.Validity, cfg.Throttle.TrustedProxies, logger)
	// Ready while it holds a token validity list: with its database away
	// a replica still serves the list from memory, which verifiers that
	// start meanwhile need, and answers token requests 503
	// temporarily_unavailable; its database is reported, not required.
	health := process.NewHealth(
		process.HealthCheck{Name: "postgres", Optional: true, Probe: store.Ping(pool)},
		process.HealthCheck{Name: "token-validity", Probe: validity.held},
	)
	handler, err := newHandler(svc, validity, keys, health, logger)
	if err != nil {
		pool.Close()
		return nil, fmt.Errorf("idp: handler: %w", err)
	}
	// The list is read once before the first request and then in the
	// background (every replica); until a read succeeds it is a 503.
	validity.refresh(ctx)
	stopJobs := job.StartJobs(logger, validity.job())
	level.Info(logger).Log("msg", "identity provider ready", "issuer", cfg.Issuer, "kid", keys.KeyID(), "token_ttl", cfg.TokenTTL, "internal_token_ttl", cfg.InternalTokenTTL)
	return &Provider{Clients: clients, handler: handler, health: health, pool: pool, throttle: svc.throttle,
		validity: validity, stopJobs: stopJobs}, nil
}

// Handler serves the token endpoint, discovery, the JWKS and the probes.
func (p *Provider) Handler() http.Handler { return p.handler }

// Health is the probes, for process.Run or process.Serve.
func (p *Provider) Health() *process.Health { return p.health }

// Close stops the list's refresh and closes the database pool.
func (p *Provider) Close() {
	p.stopJobs()
	p.pool.Close()
}

// Serve runs the IdP until ctx ends: the API on cfg.Server.Addr, metrics on
// cfg.Server.MetricsAddr.
func Serve(ctx context.Context, cfg Config, logger log.Logger) error {
	shutdownTracing, err := telemetry.SetupTracing(ctx, "idp", nil)
	if err != nil {
		return err
	}
	defer shutdownTracing(context.Background()) //nolint:errcheck // best effort at exit
	p, err := Open(ctx, cfg, logger)
	if err != nil {
		return err
	}
	defer p.Close()
	return process.Run(ctx, cfg.Server, logger, p.Handler(), p.Health())
}
