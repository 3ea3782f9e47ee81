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

	"github.com/assetregistry/registry/pkg/process"
	"github.com/assetregistry/registry/pkg/store"
	"github.com/assetregistry/registry/pkg/telemetry"
)

// DefaultTokenTTL is the lifetime of access tokens unless configured.
const DefaultTokenTTL = 15 * time.Minute

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
	SigningKeyFile   string
	PreviousKeyFiles []string
	Throttle         ThrottleConfig // zero: no throttle (the flags' defaults throttle)
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
	c.Database.RegisterFlags(fs, "idp")
	c.Server.RegisterFlags(fs, ":8090", ":9091")
	c.Log.RegisterFlags(fs)
}

func (c Config) validate() error {
	u, err := url.Parse(c.Issuer)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
		return fmt.Errorf("idp: issuer %q must be an http(s) URL without query or fragment", c.Issuer)
	}
	if c.TokenTTL < 0 {
		return fmt.Errorf("idp: token-ttl %s is negative", c.TokenTTL)
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
	keys, err := LoadKeys(cfg.SigningKeyFile, cfg.PreviousKeyFiles)
	if err != nil {
		return nil, err
	}
	pool, err := store.OpenAndMigrate(ctx, cfg.Database, Migrations(), store.LogRetries(logger))
	if err != nil {
		return nil, fmt.Errorf("idp: database: %w", err)
	}
	clients := NewClients(pool)
	health := process.NewHealth(process.HealthCheck{Name: "postgres", Probe: store.Ping(pool)})
	svc := &tokenService{issuer: cfg.Issuer, ttl: cfg.TokenTTL, keys: keys, clients: clients, throttle: newThrottle(cfg.Throttle)}
	handler, err := newHandler(svc, keys, health, logger)
	if err != nil {
		pool.Close()
		return nil, fmt.Errorf("idp: handler: %w", err)
	}
	level.Info(logger).Log("msg", "identity provider ready", "issuer", cfg.Issuer, "kid", keys.KeyID(), "token_ttl", cfg.TokenTTL)
	return &Provider{Clients: clients, handler: handler, health: health, pool: pool, throttle: svc.throttle}, nil
}

// Handler serves the token endpoint, discovery, the JWKS and the probes.
func (p *Provider) Handler() http.Handler { return p.handler }

// Health is the probes, for process.Run or process.Serve.
func (p *Provider) Health() *process.Health { return p.health }

// Close closes the database pool.
func (p *Provider) Close() { p.pool.Close() }

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
