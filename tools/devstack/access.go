package devstack

import (
	"context"
	"fmt"
	"net/url"
	"regexp"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/redis/go-redis/v9"

	assetaccess "github.com/assetregistry/registry/pkg/access"
	"github.com/assetregistry/registry/pkg/cache"
	"github.com/assetregistry/registry/pkg/catalog"
	"github.com/assetregistry/registry/tools/devinfra"
)

// accessFile records each deployable's own PostgreSQL role and Redis user
// (as the URLs that connect as them, mode 0600), so the next run keeps
// their passwords and a developer can connect as a service does.
const accessFile = "datastores.env"

// credential is a role's or a user's name and password.
type credential struct{ name, password string }

// access is what the registry's processes connect to the datastores as:
// by deployable name, a PostgreSQL role for each that owns a schema and a
// Redis user for each service with finds. Nobody but the launcher uses the
// superuser or Redis's default user.
type access struct {
	roles map[string]credential
	users map[string]credential
}

// schemaOwners are the deployables with a PostgreSQL schema of their own,
// which is named after them.
func schemaOwners() []string {
	owners := []string{catalog.IdentityProvider.Name}
	for _, svc := range catalog.Services {
		if svc.NeedsStore(catalog.Postgres) {
			owners = append(owners, svc.Name)
		}
	}
	return owners
}

// cacheUsers are the services that keep finds in Redis.
func cacheUsers() []string {
	var names []string
	for _, svc := range catalog.Services {
		if svc.NeedsStore(catalog.Redis) {
			names = append(names, svc.Name)
		}
	}
	return names
}

var identifier = regexp.MustCompile(`^[a-z_][a-z0-9_]{0,62}$`)

// accessName is the role (and Redis user) of a deployable in a database:
// stacks that share a server (tests) never share a role.
func accessName(database, deployable string) string {
	return database + "_" + strings.ReplaceAll(deployable, "-", "_")
}

// readAccess names every role and user and takes their passwords from the
// previous run's file, generating those it lacks.
func readAccess(path, database string) (access, error) {
	a := access{roles: map[string]credential{}, users: map[string]credential{}}
	previous := readEnvFile(path)
	fill := func(into map[string]credential, names []string, suffix string) error {
		for _, name := range names {
			c := credential{name: accessName(database, name)}
			if !identifier.MatchString(c.name) {
				return fmt.Errorf("role %q of database %q is not a plain lowercase identifier", c.name, database)
			}
			if u, err := url.Parse(previous[accessKey(name, suffix)]); err == nil && u.User.Username() == c.name {
				c.password, _ = u.User.Password()
			}
			if c.password == "" {
				var err error
				if c.password, err = devinfra.NewSecret(); err != nil {
					return err
				}
			}
			into[name] = c
		}
		return nil
	}
	if err := fill(a.roles, schemaOwners(), "DATABASE_URL"); err != nil {
		return a, err
	}
	return a, fill(a.users, append(cacheUsers(), catalog.Gateway.Name), "REDIS_URL")
}

// accessKey is a URL's name in the access file: PARTIES_DATABASE_URL.
func accessKey(deployable, suffix string) string {
	return strings.ToUpper(strings.ReplaceAll(deployable, "-", "_")) + "_" + suffix
}

func writeAccess(path string, roles, users map[string]string) error {
	var lines []string
	for _, set := range []struct {
		urls   map[string]string
		suffix string
	}{{roles, "DATABASE_URL"}, {users, "REDIS_URL"}} {
		for name, u := range set.urls {
			lines = append(lines, accessKey(name, set.suffix)+"="+u)
		}
	}
	slices.Sort(lines)
	return writeSecretFile(path, "each deployable's own PostgreSQL role and Redis user; "+
		"the superuser and Redis's default user are in postgres.credentials and redis.credentials, for the launcher alone", lines)
}

// redisUsers are the services' Redis users: each may run the commands of
// pkg/cache on the keys of its own cache namespace, which starts with the
// service's name (pkg/servicekit), and read the assets' access watermark,
// and nothing else. The gateway's may
// run its rate limiter's script on the budgets' keys (redis_rate's "rate:"
// and the gateway's key prefix, gatewayKeyPrefix).
func (a access) redisUsers() []devinfra.RedisUser {
	var users []devinfra.RedisUser
	for _, name := range cacheUsers() {
		c := a.users[name]
		u := devinfra.RedisUser{Name: c.name, Password: c.password, Keys: RedisNamespace(name) + "*", Commands: cache.Commands}
		if name != "assets" {
			// The assets' access watermark, which their copies of who sees
			// which asset read (pkg/access).
			u.ReadKeys = RedisNamespace("assets") + "*:" + assetaccess.WatermarkName
		}
		users = append(users, u)
	}
	gw := a.users[catalog.Gateway.Name]
	return append(users, devinfra.RedisUser{Name: gw.name, Password: gw.password,
		Keys: RedisNamespace(catalog.Gateway.Name) + "*", Commands: rateLimitCommands})
}

// RedisNamespace starts every key a deployable's Redis user may touch: a
// service's cache namespace ("parties:"), the gateway's budgets
// ("rate:api-gateway:").
func RedisNamespace(deployable string) string {
	if deployable == catalog.Gateway.Name {
		return "rate:" + deployable + ":"
	}
	return deployable + ":"
}

// rateLimitCommands are what the gateway's limiter (go-redis/redis_rate)
// sends: the connection handshake, its script (EVALSHA, EVAL when Redis
// does not have it yet) and the commands the script runs.
var rateLimitCommands = []string{"hello", "ping", "evalsha", "eval", "get", "set", "time"}

// gatewayKeyPrefix starts the keys of a stack's rate-limit budgets: stacks
// sharing a Redis (tests) never share a budget.
func gatewayKeyPrefix(database string) string {
	return catalog.Gateway.Name + ":" + database + ":"
}

// ensureRoles gives each deployable a role that may log in to the database
// and owns the deployable's schema, and nothing more: no superuser, no
// CREATE on the database (no other schemas), nothing on the other
// deployables' schemas or on public. Everyone else loses the default
// CONNECT and TEMP on the database. It runs at every start, so a password
// from the access file and the ownership always hold, also for a data dir
// from before roles, whose tables the superuser owned.
func ensureRoles(ctx context.Context, databaseURL, database string, roles map[string]credential) error {
	conn, err := pgx.Connect(ctx, databaseURL)
	if err != nil {
		return fmt.Errorf("connect to %s: %w", redact(databaseURL), err)
	}
	defer conn.Close(ctx)
	db := pgx.Identifier{database}.Sanitize()
	for _, stmt := range []string{
		"REVOKE ALL ON DATABASE " + db + " FROM PUBLIC",
		"REVOKE ALL ON SCHEMA public FROM PUBLIC",
	} {
		if _, err := conn.Exec(ctx, stmt); err != nil {
			return fmt.Errorf("%s: %w", stmt, err)
		}
	}
	for _, schema := range schemaOwners() {
		c := roles[schema]
		if err := ensureRole(ctx, conn, db, schema, c); err != nil {
			return fmt.Errorf("role %s: %w", c.name, err)
		}
	}
	return nil
}

func ensureRole(ctx context.Context, conn *pgx.Conn, db, schema string, c credential) error {
	role := pgx.Identifier{c.name}.Sanitize()
	var exists bool
	if err := conn.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = $1)", c.name).Scan(&exists); err != nil {
		return err
	}
	if !exists {
		if _, err := conn.Exec(ctx, "CREATE ROLE "+role); err != nil {
			return err
		}
	}
	// The verifier, not the password: a failed statement is logged whole.
	verifier, err := devinfra.PostgresPasswordVerifier(c.password)
	if err != nil {
		return err
	}
	ns := pgx.Identifier{schema}.Sanitize()
	for _, stmt := range []string{
		"ALTER ROLE " + role + " LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION NOBYPASSRLS INHERIT PASSWORD '" + verifier + "'",
		"GRANT CONNECT ON DATABASE " + db + " TO " + role,
		"CREATE SCHEMA IF NOT EXISTS " + ns + " AUTHORIZATION " + role,
		"ALTER SCHEMA " + ns + " OWNER TO " + role,
		// Tables, views and sequences someone else made in the schema (the
		// superuser, before roles) become the role's; indexes and a
		// column's own sequence follow their table.
		fmt.Sprintf(`DO $$
DECLARE rel regclass;
BEGIN
	FOR rel IN SELECT c.oid FROM pg_class c
		WHERE c.relnamespace = %[1]s::regnamespace AND c.relkind IN ('r', 'p', 'v', 'm', 'f', 'S')
		  AND c.relowner <> %[2]s::regrole
		  AND NOT EXISTS (SELECT 1 FROM pg_depend d
			WHERE d.classid = 'pg_class'::regclass AND d.objid = c.oid AND d.deptype IN ('a', 'i'))
	LOOP
		EXECUTE format('ALTER TABLE %%s OWNER TO %%I', rel, %[3]s);
	END LOOP;
END $$`, quoteLiteral(schema), quoteLiteral(c.name), quoteLiteral(c.name)),
	} {
		if _, err := conn.Exec(ctx, stmt); err != nil {
			if strings.Contains(stmt, "PASSWORD") {
				stmt = "ALTER ROLE " + role + " ... PASSWORD"
			}
			return fmt.Errorf("%s: %w", stmt, err)
		}
	}
	return nil
}

// quoteLiteral quotes an identifier checked by identifier (no quotes in it)
// as an SQL string literal.
func quoteLiteral(s string) string { return "'" + s + "'" }

// ensureRedisUsers makes the users on a Redis that the stack did not start
// (a shared one under make test) and returns what removes them again.
func ensureRedisUsers(ctx context.Context, adminURL string, users []devinfra.RedisUser) (func() error, error) {
	opts, err := redis.ParseURL(adminURL)
	if err != nil {
		return nil, fmt.Errorf("parse the Redis URL: %w", err)
	}
	admin := redis.NewClient(opts)
	defer admin.Close()
	for _, u := range users {
		cmd := []any{"ACL", "SETUSER", u.Name}
		for _, r := range u.Rule() {
			cmd = append(cmd, r)
		}
		if err := admin.Do(ctx, cmd...).Err(); err != nil {
			return nil, fmt.Errorf("redis user %s: %w", u.Name, err)
		}
	}
	return func() error {
		admin := redis.NewClient(opts)
		defer admin.Close()
		cmd := []any{"ACL", "DELUSER"}
		for _, u := range users {
			cmd = append(cmd, u.Name)
		}
		return admin.Do(context.Background(), cmd...).Err()
	}, nil
}

// roleURL is databaseURL connecting as c instead.
func roleURL(databaseURL string, c credential) string {
	u, err := url.Parse(databaseURL)
	if err != nil {
		return ""
	}
	u.User = url.UserPassword(c.name, c.password)
	return u.String()
}

// redisUserURL is adminURL connecting as c instead.
func redisUserURL(adminURL string, c credential) string { return roleURL(adminURL, c) }

// routes map a datastore's address (host:port) to the one the registry's
// processes use instead (Options.Via).
type routes map[string]string

func (s *Stack) viaAddresses(o Options) (routes, error) {
	r := routes{}
	if o.Via == nil {
		return r, nil
	}
	type datastore struct{ name, addr string }
	stores := []datastore{
		{ViaPostgres, hostOf(s.DatabaseURL)}, {ViaRedis, hostOf(s.RedisURL)}, {ViaS3, s.S3Endpoint},
		{ViaNATS, hostOf(s.NATS.URL)},
	}
	for _, svc := range catalog.Services {
		stores = append(stores, datastore{ViaPeer + svc.Name, hostOf(s.ServiceURLs[svc.Name])})
	}
	for _, ds := range stores {
		via, err := o.Via(ds.name, ds.addr)
		if err != nil {
			return nil, fmt.Errorf("a way to %s: %w", ds.name, err)
		}
		r[ds.addr] = via
	}
	return r, nil
}

func hostOf(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return ""
	}
	return u.Host
}

// url is raw reaching its host by way of the route, if there is one.
func (r routes) url(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return raw
	}
	u.Host = r.host(u.Host)
	return u.String()
}

func (r routes) host(addr string) string {
	if via, ok := r[addr]; ok {
		return via
	}
	return addr
}

// DropDatabase removes a database a test stack created, and its roles.
func DropDatabase(ctx context.Context, serverURL, name string) error {
	if err := devinfra.DropDatabase(ctx, serverURL, name); err != nil {
		return err
	}
	conn, err := pgx.Connect(ctx, serverURL)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	// The roles owned nothing outside that database.
	for _, d := range schemaOwners() {
		if _, err := conn.Exec(ctx, "DROP ROLE IF EXISTS "+pgx.Identifier{accessName(name, d)}.Sanitize()); err != nil {
			return fmt.Errorf("drop role: %w", err)
		}
	}
	return nil
}
