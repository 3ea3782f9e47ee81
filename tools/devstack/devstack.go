// Package devstack starts the whole registry on one machine: PostgreSQL,
// Redis and MinIO (private, loopback only), the identity provider, every
// service and the gateway, each as the real binary in its own process.
// `make run` uses it with fixed ports and a persistent directory; the
// end-to-end tests use it with free ports and a throwaway one.
package devstack

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/assetregistry/registry/pkg/devinfra"
	"github.com/assetregistry/registry/pkg/server"
)

// Ports of the stack; 0 picks a free one, except for MinioConsole, where 0
// leaves MinIO's web console off.
type Ports struct {
	Gateway, IdP, Parties                      int
	GatewayMetrics, IdPMetrics, PartiesMetrics int
	Postgres, Redis                            int
	Minio, MinioConsole                        int
}

// DefaultPorts are make run's: the gateway on 8080, the rest on ports that
// stay clear of default PostgreSQL, Redis and MinIO (9000, 9001)
// installations and of the services' ports in pkg/catalog (81xx, metrics
// 91xx).
var DefaultPorts = Ports{
	Gateway: 8080, IdP: 8090, Parties: 8101,
	GatewayMetrics: 9080, IdPMetrics: 9090, PartiesMetrics: 9101,
	Postgres: 54329, Redis: 63799,
	Minio: 9009, MinioConsole: 9019,
}

// Options of a stack.
type Options struct {
	Dir       string // state: postgres/, redis/, minio/ (and minio.credentials), idp/, logs/
	BinDir    string // where api-gateway, parties and idp are
	Ports     Ports
	Ephemeral bool // throwaway data: no fsync, no Redis persistence
	// PostgresURL, RedisURL and S3 (when its Endpoint is set) point at
	// servers to use instead of starting private ones (tests under
	// `make test` share one set).
	PostgresURL, RedisURL string
	S3                    S3
	Database              string   // database the services use; created if missing
	Env                   []string // extra environment for every registry process
}

// Stack is a running registry.
type Stack struct {
	RegistryURL    string // the gateway: what clients call
	AuthURL        string // the identity provider (issuer)
	Resource       string // the audience clients ask tokens for
	DatabaseURL    string
	RedisURL       string
	S3Endpoint     string // host:port of the object store, plain HTTP; for S3_ENDPOINT
	S3AccessKey    string // for S3_ACCESS_KEY
	S3SecretKey    string // for S3_SECRET_KEY
	S3Region       string
	S3ConsoleURL   string            // MinIO's web console; "" when off
	S3Credentials  string            // file with MinIO's root credentials (mode 0600); "" when S3 was given
	ServiceURLs    map[string]string // services reached directly, around the gateway
	SigningKeyFile string
	LogDir         string
	Pids           map[string]int    // registry processes by name, for measurements
	MetricsURLs    map[string]string // each process's /metrics

	stops []func() error // in start order
}

// Start brings the stack up, in dependency order, and returns once every
// process is ready. On failure whatever started is stopped again.
func Start(ctx context.Context, o Options) (*Stack, error) {
	s := &Stack{LogDir: filepath.Join(o.Dir, "logs"), ServiceURLs: map[string]string{}, Pids: map[string]int{}, MetricsURLs: map[string]string{}}
	if err := s.start(ctx, o); err != nil {
		return nil, errors.Join(err, s.Stop())
	}
	return s, nil
}

func (s *Stack) start(ctx context.Context, o Options) error {
	if err := os.MkdirAll(s.LogDir, 0o755); err != nil {
		return err
	}
	ports, err := resolvePorts(o.Ports)
	if err != nil {
		return err
	}
	if err := s.startDatastores(ctx, o, ports); err != nil {
		return err
	}

	s.RegistryURL = localURL(ports.Gateway)
	s.Resource = s.RegistryURL
	s.AuthURL = localURL(ports.IdP)
	s.SigningKeyFile = filepath.Join(o.Dir, "idp", "signing-key.pem")
	oidc := []string{"OIDC_ISSUER=" + s.AuthURL, "OIDC_AUDIENCE=" + s.Resource}

	if err := s.startProcess(ctx, o, "idp", ports.IdP, ports.IdPMetrics, "serve",
		"ISSUER="+s.AuthURL, "SIGNING_KEY_FILE="+s.SigningKeyFile, "DATABASE_URL="+s.DatabaseURL); err != nil {
		return err
	}
	s.ServiceURLs["parties"] = localURL(ports.Parties)
	if err := s.startProcess(ctx, o, "parties", ports.Parties, ports.PartiesMetrics, "serve",
		append(oidc, "DATABASE_URL="+s.DatabaseURL, "REDIS_URL="+s.RedisURL)...); err != nil {
		return err
	}
	if err := s.startProcess(ctx, o, "api-gateway", ports.Gateway, ports.GatewayMetrics, "",
		append(oidc, "UPSTREAM_PARTIES="+s.ServiceURLs["parties"])...); err != nil {
		return err
	}
	return nil
}

func (s *Stack) startDatastores(ctx context.Context, o Options, ports Ports) error {
	// MinIO starts alongside PostgreSQL and Redis, so it adds no wall time.
	minioDone := make(chan error, 1)
	var minio *devinfra.Minio
	go func() {
		var err error
		minio, err = s.startObjectStore(ctx, o, ports)
		minioDone <- err
	}()
	err := s.startPostgresAndRedis(ctx, o, ports)
	minioErr := <-minioDone
	if minio != nil {
		s.stops = append(s.stops, minio.Stop)
	}
	return errors.Join(err, minioErr)
}

func (s *Stack) startPostgresAndRedis(ctx context.Context, o Options, ports Ports) error {
	pgURL := o.PostgresURL
	if pgURL == "" {
		pg, err := devinfra.StartPostgres(ctx, devinfra.PostgresOptions{
			DataDir: filepath.Join(o.Dir, "postgres"), Port: ports.Postgres, Ephemeral: o.Ephemeral,
			LogFile: filepath.Join(s.LogDir, "postgres.log"),
		})
		if err != nil {
			return err
		}
		s.stops = append(s.stops, pg.Stop)
		pgURL = pg.URL
	}
	dbURL, err := ensureDatabase(ctx, pgURL, o.Database)
	if err != nil {
		return err
	}
	s.DatabaseURL = dbURL
	s.RedisURL = o.RedisURL
	if s.RedisURL == "" {
		rd, err := devinfra.StartRedis(ctx, devinfra.RedisOptions{
			DataDir: filepath.Join(o.Dir, "redis"), Port: ports.Redis, Persistent: !o.Ephemeral,
			LogFile: filepath.Join(s.LogDir, "redis.log"),
		})
		if err != nil {
			return err
		}
		s.stops = append(s.stops, rd.Stop)
		s.RedisURL = rd.URL
	}
	return nil
}

// S3 is an object store that is already running.
type S3 struct {
	Endpoint             string // host:port, plain HTTP
	AccessKey, SecretKey string
	Region               string // "" means us-east-1
}

// startObjectStore sets the stack's S3 fields to o.S3 or to a private MinIO
// that it starts, with its data in minio/ and its generated root
// credentials in minio.credentials (mode 0600), both kept for the next run.
// It returns the server it started, if any, for the caller to stop.
func (s *Stack) startObjectStore(ctx context.Context, o Options, ports Ports) (*devinfra.Minio, error) {
	if o.S3.Endpoint != "" {
		s.S3Endpoint, s.S3AccessKey, s.S3SecretKey, s.S3Region = o.S3.Endpoint, o.S3.AccessKey, o.S3.SecretKey, o.S3.Region
		if s.S3Region == "" {
			s.S3Region = "us-east-1"
		}
		return nil, nil
	}
	m, err := devinfra.StartMinio(ctx, devinfra.MinioOptions{
		DataDir: filepath.Join(o.Dir, "minio"), Port: ports.Minio, ConsolePort: ports.MinioConsole,
		LogFile: filepath.Join(s.LogDir, "minio.log"),
	})
	if err != nil {
		return nil, err
	}
	s.S3Endpoint, s.S3AccessKey, s.S3SecretKey, s.S3Region = m.Endpoint, m.AccessKey, m.SecretKey, m.Region
	s.S3ConsoleURL, s.S3Credentials = m.ConsoleURL, m.CredentialsFile
	return m, nil
}

// startProcess runs one registry binary on loopback and waits for /readyz.
func (s *Stack) startProcess(ctx context.Context, o Options, name string, port, metricsPort int, subcommand string, env ...string) error {
	var args []string
	if subcommand != "" {
		args = append(args, subcommand)
	}
	cmd := exec.Command(filepath.Join(o.BinDir, name), args...)
	cmd.Env = append(os.Environ(), o.Env...)
	cmd.Env = append(cmd.Env,
		"HTTP_ADDR="+loopback(port),
		"METRICS_ADDR="+loopback(metricsPort),
		"LOG_FORMAT=json",
	)
	cmd.Env = append(cmd.Env, env...)
	p, err := devinfra.StartProcess(ctx, name, cmd, filepath.Join(s.LogDir, name+".log"), server.HTTPCheck(localURL(port)+"/readyz"))
	if err != nil {
		return fmt.Errorf("start %s: %w", name, err)
	}
	s.stops = append(s.stops, p.Stop)
	s.Pids[name] = p.Pid()
	s.MetricsURLs[name] = localURL(metricsPort) + "/metrics"
	return nil
}

// Stop stops everything in reverse start order, each gracefully.
func (s *Stack) Stop() error {
	var errs []error
	for i := len(s.stops) - 1; i >= 0; i-- {
		errs = append(errs, s.stops[i]())
	}
	s.stops = nil
	return errors.Join(errs...)
}

// ensureDatabase creates the database if needed and returns its URL.
func ensureDatabase(ctx context.Context, serverURL, name string) (string, error) {
	if name == "" {
		return serverURL, nil
	}
	conn, err := pgx.Connect(ctx, serverURL)
	if err != nil {
		return "", fmt.Errorf("connect to %s: %w", redact(serverURL), err)
	}
	defer conn.Close(ctx)
	var exists bool
	if err := conn.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)", name).Scan(&exists); err != nil {
		return "", err
	}
	if !exists {
		if _, err := conn.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize()); err != nil {
			return "", fmt.Errorf("create database %s: %w", name, err)
		}
	}
	u, err := url.Parse(serverURL)
	if err != nil {
		return "", err
	}
	u.Path = "/" + name
	return u.String(), nil
}

// DropDatabase removes a database a test stack created.
func DropDatabase(ctx context.Context, serverURL, name string) error {
	conn, err := pgx.Connect(ctx, serverURL)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	_, err = conn.Exec(ctx, "DROP DATABASE IF EXISTS "+pgx.Identifier{name}.Sanitize()+" WITH (FORCE)")
	return err
}

func resolvePorts(p Ports) (Ports, error) {
	for _, port := range []*int{&p.Gateway, &p.IdP, &p.Parties, &p.GatewayMetrics, &p.IdPMetrics, &p.PartiesMetrics} {
		if *port != 0 {
			continue
		}
		free, err := devinfra.FreePort()
		if err != nil {
			return p, err
		}
		*port = free
	}
	return p, nil
}

func loopback(port int) string { return "127.0.0.1:" + strconv.Itoa(port) }
func localURL(port int) string { return "http://" + loopback(port) }

func redact(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(database URL)"
	}
	return strings.Replace(u.Redacted(), u.Path, "", 1)
}
