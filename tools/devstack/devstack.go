// Package devstack starts the whole registry on one machine: PostgreSQL,
// Redis, MinIO and NATS with JetStream (private, loopback only), the identity provider, every
// service and the gateway, each as the real binary in its own process.
// `make run` uses it with fixed ports and a persistent directory; the
// end-to-end tests use it with free ports and a throwaway one.
package devstack

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"

	"golang.org/x/mod/sumdb/note"

	"github.com/assetregistry/registry/pkg/catalog"
	"github.com/assetregistry/registry/pkg/process"
	"github.com/assetregistry/registry/tools/devinfra"
)

// Options of a stack.
type Options struct {
	// Dir is the state: postgres/ (and postgres.credentials), redis/ (empty:
	// Redis keeps nothing on disk), minio/ (and minio.credentials), nats/
	// (JetStream's store; nats.credentials, nats.conf), idp/, logs/,
	// services.env and datastores.env.
	Dir       string
	BinDir    string // where the binaries of pkg/catalog's deployables are
	Ports     Ports
	Ephemeral bool // throwaway data: no fsync
	// PostgresURL, RedisURL and S3 (when its Endpoint is set) point at
	// servers to use instead of starting private ones (tests under
	// `make test` share one set). The URLs must be a superuser's and
	// Redis's default user's: the stack makes its roles and users there.
	PostgresURL, RedisURL string
	S3                    S3
	// NATS, when its URL is set, is a NATS server (JetStream on) to use
	// instead of starting a private one.
	NATS NATS
	// Database the registry uses; created if missing. Its roles are named
	// after it ("registry" gives registry_parties, registry_idp, ...), so
	// stacks sharing a server never share a role. "" means "registry".
	Database string
	Env      []string // extra environment for every registry process
	// ObjectStoreLater starts the private object store, and the services
	// that need it, in the background once everything else is up, and
	// Start returns without waiting for them: make run on a fresh machine,
	// where MinIO is still being built from source (minutes), lets the
	// first calls through meanwhile. Until its service joins, the gateway
	// answers its paths with 503 and Retry-After. ObjectStoreReady says
	// when it has joined.
	ObjectStoreLater bool
	// FirstCallFirst starts only what the README's first call needs
	// (FirstCall: the identity provider, its service and the gateway, on
	// PostgreSQL and Redis) and returns; the private NATS server and object
	// store and the other services start in the background (planJoin),
	// each service once BuildLater has built its binary and the servers it
	// needs are up. Until a service joins, the gateway answers its paths
	// with 503 and Retry-After. Joining announces each part as it joins:
	// make run prints how to call as soon as the first call can work.
	FirstCallFirst bool
	// BuildLater, when set, builds the binaries of the named services
	// into BinDir before they start later (make run builds only
	// FirstCall's before the stack starts).
	BuildLater func(ctx context.Context, services []string) error
	// Via, when set, gives the address at which the registry's processes
	// reach a datastore ("postgres", "redis" or "s3") listening at addr:
	// a test puts a fault-injecting proxy in between ("nats" too). The launcher itself
	// always goes straight to addr. Services reach each other's internal
	// API by way of it too ("peer-<service>", ViaPeer), so a test can make
	// one peer slow for its callers; the gateway goes straight to each.
	Via func(datastore, addr string) (string, error)
	// Clusters runs the datastores as clusters on loopback, as production
	// runs them: PostgreSQL a primary with a synchronous standby (the
	// processes reach the primary by a URL naming both servers with
	// target_session_attrs=read-write, so they follow a promotion, and the
	// services read lists, finds and /compliance on the standby), Redis a
	// primary and a replica watched by three Sentinels (which the services
	// and the gateway ask for the primary), and NATS three JetStream nodes
	// (the stream kept in three copies). Not with PostgresURL, RedisURL,
	// NATS or Via.
	Clusters bool
}

// Datastore names for Options.Via.
const (
	ViaPostgres = "postgres"
	ViaRedis    = "redis"
	ViaS3       = "s3"
	ViaNATS     = "nats"
	ViaPeer     = "peer-" // + the service's name
)

// Stack is a running registry.
type Stack struct {
	RegistryURL string // the gateway: what clients call
	AuthURL     string // the identity provider (issuer)
	Resource    string // the audience clients ask tokens for
	// DatabaseURL is the launcher's: the superuser, in the stack's
	// database. The registry's processes each have a role of their own
	// (RoleURLs); this one is for the launcher and for tests that inspect
	// what the services wrote.
	DatabaseURL string
	// RedisURL is Redis's default user, who may do everything; the
	// services each have a user limited to their own keys (RedisUserURLs).
	RedisURL string
	// RoleURLs are the PostgreSQL URLs of each deployable with a schema
	// (the identity provider and the services that need PostgreSQL), by
	// name: its own role, which owns its schema and may use nothing else.
	RoleURLs map[string]string
	// RedisUserURLs are the Redis URLs of each service with finds, by name:
	// its own user, limited to its cache namespace's keys and the commands
	// of pkg/cache; and the gateway's, limited to its rate-limit budgets.
	RedisUserURLs map[string]string
	// Postgres, Redis and Minio are the servers the stack started (nil
	// where it was given one), and Processes the registry's own, by name:
	// for tests that pause, kill and restart them.
	Postgres *devinfra.Postgres
	Redis    *devinfra.Redis
	Minio    *devinfra.Minio
	Nats     *devinfra.Nats
	// With Options.Clusters: the standby of Postgres (the primary at
	// start), the replica of Redis (the primary at start), the Sentinels
	// watching those two (as RedisMasterName), and the NATS cluster (Nats
	// is then nil). ReadURLs are each service's read-only URLs.
	PostgresStandby *devinfra.Postgres
	// PostgresSecondStandby is the other member of the synchronous quorum
	// (SecondStandbyName); it serves no reads.
	PostgresSecondStandby *devinfra.Postgres
	RedisReplica          *devinfra.Redis
	Sentinels             []*devinfra.Sentinel
	SentinelPassword      string
	NatsCluster           *devinfra.NatsCluster
	ReadURLs              map[string]string
	Processes             map[string]*devinfra.Process
	S3Endpoint            string // host:port of the object store, plain HTTP; for S3_ENDPOINT
	S3AccessKey           string // for S3_ACCESS_KEY
	S3SecretKey           string // for S3_SECRET_KEY
	S3Region              string
	// S3Bucket is the documents service's bucket: its default on a private
	// MinIO, one of the stack's own on a shared object store, so stacks
	// that share one (make test's) never see each other's files.
	S3Bucket      string
	S3ConsoleURL  string // MinIO's web console; "" when off
	S3Credentials string // file with MinIO's root credentials (mode 0600); "" when S3 was given
	// NATS is the JetStream server the services publish their events to;
	// NATSCredentials its user's file (mode 0600), "" when NATS was given.
	NATS            NATS
	NATSCredentials string
	ServiceURLs     map[string]string // services reached directly, around the gateway
	SigningKeyFile  string
	LogDir          string
	Pids            map[string]int    // registry processes by name, for measurements
	MetricsURLs     map[string]string // each process's /metrics

	// ObjectStoreReady, when the private object store starts later
	// (Options.ObjectStoreLater, FirstCallFirst), receives nil once it and
	// the services that need it are up, or why they are not; nil otherwise.
	ObjectStoreReady <-chan error
	// StillJoining names what was not up when Start returned: services in
	// catalog order, then JoinedNATS and JoinedMinio for the private
	// servers that start later. Joining announces each of them as it joins
	// and is closed when nothing is left on the way (nil when nothing
	// joins later).
	StillJoining []string
	Joining      <-chan Joined

	mu         sync.Mutex
	stops      []func() error // in start order
	background sync.WaitGroup
	cancelLate context.CancelFunc
	opts       Options  // what the stack was started with, for StartGateway
	gatewayEnv []string // the gateway's own environment, for StartGateway
}

// Start brings the stack up, in dependency order, and returns once every
// process is ready. On failure whatever started is stopped again.
func Start(ctx context.Context, o Options) (*Stack, error) {
	s := &Stack{LogDir: filepath.Join(o.Dir, "logs"), ServiceURLs: map[string]string{}, Pids: map[string]int{}, MetricsURLs: map[string]string{},
		RoleURLs: map[string]string{}, RedisUserURLs: map[string]string{}, Processes: map[string]*devinfra.Process{},
		ReadURLs: map[string]string{}}
	if o.Clusters && (o.PostgresURL != "" || o.RedisURL != "" || o.NATS.URL != "" || o.Via != nil) {
		return nil, errors.New("devstack: Clusters starts its own datastores: not with PostgresURL, RedisURL, NATS or Via")
	}
	if o.Database == "" {
		o.Database = "registry"
	}
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
	plan := planJoin(o)
	if err := s.startDatastores(ctx, o, ports, !plan.objectStore, !plan.nats); err != nil {
		return err
	}
	if plan.nats {
		if err := s.reserveNATS(o, ports); err != nil {
			return err
		}
	}

	s.RegistryURL = localURL(ports[catalog.Gateway.Name])
	s.Resource = s.RegistryURL
	s.AuthURL = localURL(ports[catalog.IdentityProvider.Name])
	s.SigningKeyFile = filepath.Join(o.Dir, "idp", "signing-key.pem")
	// The transparency log's checkpoint key, made once and kept with the
	// data, as a cluster keeps it in a Secret.
	logKey, err := ensureLogKey(filepath.Join(o.Dir, "events", "log-signing-key"))
	if err != nil {
		return err
	}
	oidc := []string{"OIDC_ISSUER=" + s.AuthURL, "OIDC_AUDIENCE=" + s.Resource}
	for _, svc := range catalog.Services {
		s.ServiceURLs[svc.Name] = localURL(ports[svc.Name])
	}

	via, err := s.viaAddresses(o)
	if err != nil {
		return err
	}
	// The identity provider believes X-Forwarded-For from loopback, as a
	// production one believes its ingress's: a proxy or test on this
	// machine that forwards callers gets them throttled apart.
	if err := s.startProcess(ctx, o, catalog.IdentityProvider.Name, ports, "serve",
		"ISSUER="+s.AuthURL, "SIGNING_KEY_FILE="+s.SigningKeyFile, "TRUSTED_PROXIES="+LoopbackProxies,
		"DATABASE_URL="+via.url(s.RoleURLs[catalog.IdentityProvider.Name])); err != nil {
		return err
	}
	// Services call their peers with their own machine identities, which
	// must exist before they start.
	identities, err := s.ensureServiceClients(ctx, filepath.Join(o.Dir, "services.env"))
	if err != nil {
		return err
	}
	// Services call peers per request only, so they can start in any
	// order: each gets every peer's URL up front.
	serviceEnv := func(svc catalog.Service) []string {
		env := slices.Clone(oidc)
		if svc.NeedsStore(catalog.Postgres) {
			env = append(env, "DATABASE_URL="+via.url(s.RoleURLs[svc.Name]))
			if u := s.ReadURLs[svc.Name]; u != "" {
				env = append(env, "DATABASE_READ_URL="+u)
			}
		}
		if svc.NeedsStore(catalog.Redis) {
			env = append(env, "REDIS_URL="+via.url(s.RedisUserURLs[svc.Name]))
			env = append(env, s.sentinelEnv()...)
		}
		if svc.NeedsStore(catalog.ObjectStore) {
			env = append(env, "S3_ENDPOINT=http://"+via.host(s.S3Endpoint), "S3_ACCESS_KEY="+s.S3AccessKey,
				"S3_SECRET_KEY="+s.S3SecretKey, "S3_REGION="+s.S3Region, "S3_BUCKET="+s.S3Bucket)
		}
		if svc.NeedsStore(catalog.NATS) {
			env = append(env, s.NATS.env(via.url(s.NATS.URL))...)
		}
		if svc.Name == "events" {
			// Webhook receivers on this machine, which production refuses
			// (plain http, loopback): the contract's rule for make run.
			env = append(env, "WEBHOOKS_ALLOWED_ORIGINS=http://127.0.0.1:*", "TRANSPARENCY_SIGNING_KEY="+logKey)
		}
		if peers := svc.Peers(); len(peers) > 0 {
			id := identities[svc.Name]
			env = append(env, "PEER_CLIENT_ID="+id.ClientID, "PEER_CLIENT_SECRET="+id.ClientSecret)
			for _, peer := range peers {
				env = append(env, envName("PEER", peer, "URL")+"="+via.url(s.ServiceURLs[peer]))
			}
		}
		return env
	}
	for _, svc := range catalog.Services {
		if plan.later(svc) {
			continue
		}
		if err := s.startProcess(ctx, o, svc.Name, ports, "serve", serviceEnv(svc)...); err != nil {
			return err
		}
	}
	// The gateway's rate limits are on, in Redis, as in a cluster.
	gateway := append(slices.Clone(oidc), "REDIS_URL="+via.url(s.RedisUserURLs[catalog.Gateway.Name]),
		"RATE_LIMIT_KEY_PREFIX="+gatewayKeyPrefix(o.Database))
	gateway = append(gateway, s.sentinelEnv()...)
	for name, u := range s.ServiceURLs {
		gateway = append(gateway, envName("UPSTREAM", name, "")+"="+u)
	}
	if !plan.empty() {
		// The services that join later are not there to answer the
		// gateway's check of their API documents: it would wait its 30 s
		// for them before the first call could be made. Each is checked
		// when it first answers instead.
		gateway = append(gateway, "DOCS_STARTUP_WAIT=0s")
	}
	s.opts, s.gatewayEnv = o, gateway
	if err := s.startProcess(ctx, o, catalog.Gateway.Name, ports, "", gateway...); err != nil {
		return err
	}
	if !plan.empty() {
		s.startLater(o, ports, plan, serviceEnv)
	}
	return nil
}

func (s *Stack) addStop(stop func() error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stops = append(s.stops, stop)
}

// StartGateway starts one more gateway in front of the stack's services,
// on free ports, configured as the first with env added (a replica, or one
// with other settings: the bench's gateway without rate limits). name
// (not a catalog name) is its key in Processes, Pids and MetricsURLs; it
// is stopped with the stack. It returns the gateway's URL.
func (s *Stack) StartGateway(ctx context.Context, name string, env ...string) (string, error) {
	ports, err := resolvePorts(Ports{})
	if err != nil {
		return "", err
	}
	p := Ports{name: ports[catalog.Gateway.Name], metricsPort(name): ports[metricsPort(catalog.Gateway.Name)]}
	if err := s.startBinary(ctx, s.opts, name, catalog.Gateway.Name, p, "", append(slices.Clone(s.gatewayEnv), env...)...); err != nil {
		return "", err
	}
	return localURL(p[name]), nil
}

// envName is the environment variable of a per-service flag:
// ("PEER", "documents", "URL") -> PEER_DOCUMENTS_URL.
func envName(prefix, service, suffix string) string {
	name := prefix + "_" + strings.ToUpper(strings.ReplaceAll(service, "-", "_"))
	if suffix != "" {
		name += "_" + suffix
	}
	return name
}

func (s *Stack) startDatastores(ctx context.Context, o Options, ports Ports, objectStore, natsNow bool) error {
	// MinIO and NATS start alongside PostgreSQL and Redis, so they add no
	// wall time.
	minioDone, natsDone := make(chan error, 1), make(chan error, 1)
	var (
		minio *devinfra.Minio
		nats  *devinfra.Nats
	)
	go func() {
		if !objectStore {
			minioDone <- nil
			return
		}
		var err error
		minio, err = s.startObjectStore(ctx, o, ports)
		minioDone <- err
	}()
	go func() {
		var err error
		if !natsNow {
			natsDone <- nil
			return
		}
		if o.Clusters {
			natsDone <- s.startNATSCluster(ctx, o)
			return
		}
		nats, err = s.startNATS(ctx, o, ports)
		natsDone <- err
	}()
	err := s.startPostgresAndRedis(ctx, o, ports)
	minioErr, natsErr := <-minioDone, <-natsDone
	if minio != nil {
		s.addStop(minio.Stop)
	}
	if nats != nil {
		s.addStop(nats.Stop)
	}
	return errors.Join(err, minioErr, natsErr)
}

// NATS is a NATS server (JetStream on) that is already running.
type NATS struct {
	URL            string // nats://host:port
	User, Password string
	// Stream and SubjectPrefix, when set, replace the production stream
	// and subjects, so that stacks sharing one server (tests under `make
	// test`) never see each other's events.
	Stream, SubjectPrefix string
	// Replicas, when set, is how many copies the stream keeps (3 on a
	// three-node cluster).
	Replicas int
}

// env is the environment of a process that publishes or consumes the
// events, reaching the server at url.
func (n NATS) env(url string) []string {
	env := []string{"NATS_URL=" + url, "NATS_USER=" + n.User, "NATS_PASSWORD=" + n.Password}
	if n.Stream != "" {
		env = append(env, "NATS_STREAM="+n.Stream)
	}
	if n.SubjectPrefix != "" {
		env = append(env, "NATS_SUBJECT_PREFIX="+n.SubjectPrefix)
	}
	if n.Replicas > 0 {
		env = append(env, "NATS_STREAM_REPLICAS="+strconv.Itoa(n.Replicas))
	}
	return env
}

// startNATS sets the stack's NATS to o.NATS or to a private server that it
// starts, with JetStream's store in nats/ and its generated user in
// nats.credentials (mode 0600), both kept for the next run. It returns the
// server it started, if any, for the caller to stop.
func (s *Stack) startNATS(ctx context.Context, o Options, ports Ports) (*devinfra.Nats, error) {
	if o.NATS.URL != "" {
		s.NATS = o.NATS
		return nil, nil
	}
	n, err := devinfra.StartNats(ctx, devinfra.NatsOptions{
		DataDir: filepath.Join(o.Dir, "nats"), Port: ports[NatsPort],
		LogFile: filepath.Join(s.LogDir, "nats.log"),
	})
	if err != nil {
		return nil, err
	}
	s.Nats, s.NATSCredentials = n, n.CredentialsFile
	s.NATS = NATS{URL: n.URL, User: n.User, Password: n.Password}
	return n, nil
}

func (s *Stack) startPostgresAndRedis(ctx context.Context, o Options, ports Ports) error {
	// Each deployable's own role and Redis user, with the passwords of the
	// previous run when there was one.
	access, err := readAccess(filepath.Join(o.Dir, accessFile), o.Database)
	if err != nil {
		return err
	}
	pgURL := o.PostgresURL
	if o.Clusters {
		var err error
		if pgURL, err = s.startPostgresCluster(ctx, o, ports); err != nil {
			return err
		}
	} else if pgURL == "" {
		pg, err := devinfra.StartPostgres(ctx, devinfra.PostgresOptions{
			DataDir: filepath.Join(o.Dir, "postgres"), Port: ports[PostgresPort], Ephemeral: o.Ephemeral,
			LogFile: filepath.Join(s.LogDir, "postgres.log"),
		})
		if err != nil {
			return err
		}
		s.addStop(pg.Stop)
		s.Postgres, pgURL = pg, pg.URL
	}
	dbURL, err := devinfra.EnsureDatabase(ctx, pgURL, o.Database)
	if err != nil {
		return fmt.Errorf("database %s on %s: %w", o.Database, redact(pgURL), err)
	}
	s.DatabaseURL = dbURL
	if err := ensureRoles(ctx, dbURL, o.Database, access.roles); err != nil {
		return err
	}
	s.RedisURL = o.RedisURL
	if o.Clusters {
		if err := s.startRedisSet(ctx, o, ports, access.redisUsers()); err != nil {
			return err
		}
	} else if s.RedisURL == "" {
		rd, err := devinfra.StartRedis(ctx, devinfra.RedisOptions{
			DataDir: filepath.Join(o.Dir, "redis"), Port: ports[RedisPort], Users: access.redisUsers(),
			LogFile: filepath.Join(s.LogDir, "redis.log"),
		})
		if err != nil {
			return err
		}
		s.addStop(rd.Stop)
		s.Redis, s.RedisURL = rd, rd.URL
	} else {
		remove, err := ensureRedisUsers(ctx, s.RedisURL, access.redisUsers())
		if err != nil {
			return err
		}
		s.addStop(remove)
	}
	for name, role := range access.roles {
		s.RoleURLs[name] = roleURL(dbURL, role)
		if s.PostgresStandby != nil && name != catalog.IdentityProvider.Name {
			if s.ReadURLs[name], err = devinfra.MultiHostURL(s.RoleURLs[name], "prefer-standby", s.PostgresStandby, s.Postgres); err != nil {
				return err
			}
		}
	}
	for name, user := range access.users {
		s.RedisUserURLs[name] = redisUserURL(s.RedisURL, user)
	}
	return writeAccess(filepath.Join(o.Dir, accessFile), s.RoleURLs, s.RedisUserURLs)
}

// S3 is an object store that is already running.
type S3 struct {
	Endpoint             string // host:port, plain HTTP
	AccessKey, SecretKey string
	Region               string // "" means us-east-1
}

const DefaultBucket = "documents" // the documents service's unless told otherwise

// startObjectStore sets the stack's S3 fields to o.S3 or to a private MinIO
// that it starts, with its data in minio/ and its generated root
// credentials in minio.credentials (mode 0600), both kept for the next run.
// It returns the server it started, if any, for the caller to stop.
func (s *Stack) startObjectStore(ctx context.Context, o Options, ports Ports) (*devinfra.Minio, error) {
	s.S3Bucket = DefaultBucket
	if o.S3.Endpoint != "" {
		s.S3Endpoint, s.S3AccessKey, s.S3SecretKey, s.S3Region = o.S3.Endpoint, o.S3.AccessKey, o.S3.SecretKey, o.S3.Region
		if s.S3Region == "" {
			s.S3Region = "us-east-1"
		}
		s.S3Bucket = DefaultBucket + "-" + strings.ToLower(rand.Text()[:12])
		return nil, nil
	}
	m, err := devinfra.StartMinio(ctx, devinfra.MinioOptions{
		DataDir: filepath.Join(o.Dir, "minio"), Port: ports[MinioPort], ConsolePort: ports[MinioConsolePort],
		LogFile: filepath.Join(s.LogDir, "minio.log"),
	})
	if err != nil {
		return nil, err
	}
	s.Minio = m
	s.S3Endpoint, s.S3AccessKey, s.S3SecretKey, s.S3Region = m.Endpoint, m.AccessKey, m.SecretKey, m.Region
	s.S3ConsoleURL, s.S3Credentials = m.ConsoleURL, m.CredentialsFile
	return m, nil
}

// startProcess runs one registry binary on loopback and waits for /readyz.
func (s *Stack) startProcess(ctx context.Context, o Options, name string, ports Ports, subcommand string, env ...string) error {
	return s.startBinary(ctx, o, name, name, ports, subcommand, env...)
}

// startBinary is startProcess for a process named apart from its binary.
func (s *Stack) startBinary(ctx context.Context, o Options, name, binary string, ports Ports, subcommand string, env ...string) error {
	port, metricsPort := ports[name], ports[metricsPort(name)]
	var args []string
	if subcommand != "" {
		args = append(args, subcommand)
	}
	cmd := exec.Command(filepath.Join(o.BinDir, binary), args...)
	cmd.Env = append(os.Environ(), o.Env...)
	cmd.Env = append(cmd.Env,
		"HTTP_ADDR="+loopback(port),
		"METRICS_ADDR="+loopback(metricsPort),
		"LOG_FORMAT=json",
	)
	cmd.Env = append(cmd.Env, env...)
	p, err := devinfra.StartProcess(ctx, name, cmd, filepath.Join(s.LogDir, name+".log"), process.HTTPCheck(localURL(port)+"/readyz"))
	if err != nil {
		return fmt.Errorf("start %s: %w", name, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stops = append(s.stops, p.Stop)
	s.Processes[name] = p
	s.Pids[name] = p.Pid()
	s.MetricsURLs[name] = localURL(metricsPort) + "/metrics"
	return nil
}

// StartCopy runs another instance of a registry process, named name, with
// the original's settings and env on top (later settings win), on free
// ports; it is stopped with the stack. It returns the copy's base URL: the
// bench compares a service with a setting changed beside the original.
func (s *Stack) StartCopy(ctx context.Context, original, name string, env ...string) (string, error) {
	p, ok := s.Processes[original]
	if !ok {
		return "", fmt.Errorf("no process %s in the stack", original)
	}
	port, err := devinfra.FreePort()
	if err != nil {
		return "", err
	}
	metrics, err := devinfra.FreePort()
	if err != nil {
		return "", err
	}
	cmd := p.Command()
	cmd.Env = append(append(cmd.Env, "HTTP_ADDR="+loopback(port), "METRICS_ADDR="+loopback(metrics)), env...)
	c, err := devinfra.StartProcess(ctx, name, cmd, filepath.Join(s.LogDir, name+".log"), process.HTTPCheck(localURL(port)+"/readyz"))
	if err != nil {
		return "", fmt.Errorf("start %s: %w", name, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stops = append(s.stops, c.Stop)
	s.Processes[name], s.Pids[name], s.MetricsURLs[name] = c, c.Pid(), localURL(metrics)+"/metrics"
	return localURL(port), nil
}

// Stop stops everything in reverse start order, each gracefully.
func (s *Stack) Stop() error {
	if s.cancelLate != nil {
		// A build still running stops; Go's build cache keeps what it
		// compiled for the next run.
		s.cancelLate()
		s.background.Wait()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var errs []error
	for i := len(s.stops) - 1; i >= 0; i-- {
		errs = append(errs, s.stops[i]())
	}
	s.stops = nil
	return errors.Join(errs...)
}

// resolvePorts picks a free port for every deployable port left at 0. They
// are picked before any process starts, since each is named in the
// settings of others (the identity provider's in every service's, the
// services' in the gateway's); FreePort keeps them from every other
// process's FreePort meanwhile, so another test's server cannot take one.
//
// A port given (make run's) must be free: a registry process of another
// stack on it would answer this one's readiness check, and the stack would
// come up with a process of its own that had exited on a taken port.
func resolvePorts(given Ports) (Ports, error) {
	p := Ports{}
	for name, port := range given {
		p[name] = port
	}
	for _, d := range catalog.Deployables() {
		for _, name := range []string{d.Name, metricsPort(d.Name)} {
			if port := p[name]; port != 0 {
				if err := devinfra.PortFree(port); err != nil {
					return p, fmt.Errorf("%s's port %d is taken (is another make run up?): %w", name, port, err)
				}
				continue
			}
			free, err := devinfra.FreePort()
			if err != nil {
				return p, err
			}
			p[name] = free
		}
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

// ensureLogKey returns the note signing key of the log's checkpoints kept
// in file, making one the first time.
func ensureLogKey(file string) (string, error) {
	if b, err := os.ReadFile(file); err == nil {
		return strings.TrimSpace(string(b)), nil
	} else if !errors.Is(err, fs.ErrNotExist) {
		return "", err
	}
	signing, _, err := note.GenerateKey(rand.Reader, LogOrigin)
	if err != nil {
		return "", fmt.Errorf("devstack: log signing key: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(file), 0o700); err != nil {
		return "", err
	}
	return signing, os.WriteFile(file, []byte(signing+"\n"), 0o600)
}

// LogOrigin names the transparency log of a local stack.
const LogOrigin = "asset-registry.local/log"

// LoopbackProxies are the networks whose X-Forwarded-For make run's
// identity provider believes (TRUSTED_PROXIES): this machine's.
const LoopbackProxies = "127.0.0.0/8,::1"
