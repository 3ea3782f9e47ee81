// Package bench is `make bench`: it starts a private registry (the real
// binaries, as make run does, on free ports) beside the limits of this
// machine (pgx on a table of the same shape, a minimal reference server, a
// bare reverse proxy, an RS256 signature) and measures every row with the
// same client loop, concurrency and duration, in rounds, so that ratios
// come from the same run. The rows are declarative (rows.go): a service
// adds its own with one Call each.
package bench

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/minio/minio-go/v7"
	"github.com/redis/go-redis/v9"

	"github.com/assetregistry/registry/tools/devinfra"
	"github.com/assetregistry/registry/tools/devstack"
)

// Options of a run.
type Options struct {
	BinDir   string // the registry's binaries
	OutDir   string // results.json and profiles/
	RepoRoot string // for the parties migrations (the reference schema)
	Load     Load
	Rounds   int // every row runs once per round; ratios are per round
	// Seed sizes: organizations and people created through the gateway
	// (and as many organizations in the reference schema) before measuring.
	Organizations, People int
	Assets                int // assets seeded (all of one asset type)
	// Actions are copied straight into the actions table (a million by
	// default), for the deep pages of GET /actions.
	Actions int
	// ComplianceAssets and ComplianceActions are copied into the actions
	// service's projection of assets and its actions table (a million and
	// five million by default) for the GET /compliance rows.
	ComplianceAssets, ComplianceActions int
	// ComplianceOrganizations own the compliance seed's assets, in turn
	// (10,000 for make bench; 0: one per hundred assets), the bound
	// client's organization among them (TenancyRows).
	ComplianceOrganizations int
	// LogLeaves is the size of the log the transparency log's rows read
	// (DefaultLogLeaves, the ten million, by default; the quick
	// run's is smaller, under the same row names, as its other seeds are).
	LogLeaves uint64
	// LargeEvents is how many of the largest events the pages' row seeds
	// (LargePagesRow; 64 by default, enough that its 16 clients read
	// different pages).
	LargeEvents int
	// UploadSize is the file of the upload rows; LargeUpload the file of
	// the one-client large upload (1 GiB), streamed from a generator.
	UploadSize, LargeUpload int64
	Profile                 bool // CPU and heap profiles of every process, last round (warm: caches filled, targets remembered)
	// ImportRows are the rows the bulk import runs after the table (0:
	// no import).
	ImportRows int
	Rows       *regexp.Regexp // only these rows (and the limits they are divided by); nil: all
	// Short leaves out the rows marked Long (keeping the limits and
	// partners of those it keeps): make test's form of the quick run.
	Short bool
	// PostgresURL and RedisURL are servers to share (make test); empty
	// starts private ones.
	PostgresURL, RedisURL string
	Progress              io.Writer
	// Self runs ChildMain (the reference server and the bare proxy); the
	// default is this executable.
	Self []string
	// StackEnv is added to every process of the stack (the soak's budget
	// for its noisy client).
	StackEnv []string
}

// Env is what rows are built from.
type Env struct {
	Stack        *devstack.Stack
	Creds        devstack.Credentials
	Load         Load
	Reference    *pgxpool.Pool // the reference schema
	ReferenceURL string
	ProxyURL     string
	Orgs         []string // organization ids in the parties service
	RefOrgs      []string // organization ids in the reference schema
	People       int      // people 0..People-1 exist (see person)
	PersonIDs    []string // their ids
	Assets       []string // asset ids; asset i has serial number SN<i>
	AssetTypeID  string   // their type
	Actions      int      // actions seeded (see seedActions)
	LogLeaves    uint64   // the seeded log's size (see seededLog)
	LargeEvents  int      // the largest events the pages' row seeds (Options.LargeEvents)
	LargeUpload  int64    // bytes of the large upload's file
	// UnlimitedGatewayURL is a second gateway before the same services,
	// with its rate limits off.
	UnlimitedGatewayURL string
	// EventsOffURL is a second parties process recording no events.
	EventsOffURL string
	// DeepCursors are the cursors halfway through each actionLists
	// filter's seeded actions, by filter name.
	DeepCursors map[string]string
	// ComplianceAssets are the assets of the compliance seed; its deep
	// page starts at ComplianceCursor.
	ComplianceAssets int
	ComplianceCursor string
	// seedSteps is where the compliance seed's time went.
	seedSteps seedSteps
	// tenancy is the state of the rows of a bound client (TenancyRows).
	tenancy tenancy
	// progress is Options.Progress: what rows print beside the table.
	progress io.Writer

	upload upload        // the upload rows' file and form
	s3     *minio.Client // the stack's object store, for PutObject

	client   *http.Client
	token    atomic.Pointer[string]
	redis    *redis.Client
	database string
	// sharedPostgres: the run's database is on a PostgreSQL it did not
	// start (Options.PostgresURL).
	sharedPostgres bool
	// idleCores is the CPU the stack uses doing nothing (measureIdle).
	idleCores  float64
	namespaces sync.Map // service -> find cache namespace
	processes  map[string]loadedProcess
	stopped    sync.Map // process name -> true while a row holds it stopped (SIGSTOP): nothing asks it anything
}

// loadedProcess is one process under load: for memory and profiles.
type loadedProcess struct {
	pid      int
	debugURL string // base of /debug/pprof/
}

// ChildEnv selects ChildMain's role in a process the bench started.
const ChildEnv = "REGISTRY_BENCH_CHILD"

// ChildMain runs the reference server or the bare proxy and exits when
// this process was started as one; otherwise it returns at once. The bench
// command's main and the test's TestMain call it first.
func ChildMain() {
	role := os.Getenv(ChildEnv)
	if role == "" {
		return
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	if err := runChild(ctx, role); err != nil {
		fmt.Fprintf(os.Stderr, "bench %s: %v\n", role, err)
		os.Exit(1)
	}
	os.Exit(0)
}

func runChild(ctx context.Context, role string) error {
	ln, err := net.Listen("tcp", os.Getenv("BENCH_ADDR"))
	if err != nil {
		return err
	}
	profLn, err := net.Listen("tcp", os.Getenv("BENCH_PROFILE_ADDR"))
	if err != nil {
		return err
	}
	go serveUntilDone(ctx, profLn, profilerMux()) //nolint:errcheck // ends with the process
	switch role {
	case "reference":
		return serveReference(ctx, ln, os.Getenv("BENCH_DATABASE_URL"))
	case "proxy":
		return serveProxy(ctx, ln, os.Getenv("BENCH_TARGET"))
	}
	return fmt.Errorf("unknown role %q", role)
}

func (o *Options) defaults() error {
	if o.Load.Concurrency <= 0 {
		o.Load.Concurrency = 16
	}
	if o.Load.Duration <= 0 {
		o.Load.Duration = 5 * time.Second
	}
	if o.Rounds <= 0 {
		o.Rounds = 1
	}
	if o.Organizations <= 0 {
		o.Organizations = 1000
	}
	if o.People <= 0 {
		o.People = 2000
	}
	if o.Assets <= 0 {
		o.Assets = 1000
	}
	if o.Actions <= 0 {
		o.Actions = 1_000_000
	}
	if o.ComplianceAssets <= 0 {
		o.ComplianceAssets = 1_000_000
	}
	if o.ComplianceActions <= 0 {
		o.ComplianceActions = 5 * o.ComplianceAssets
	}
	if o.LargeEvents == 0 {
		o.LargeEvents = defaultLargeEvents
	}
	if o.LogLeaves == 0 {
		o.LogLeaves = DefaultLogLeaves
	}
	if o.UploadSize <= 0 {
		o.UploadSize = 8 << 20
	}
	if o.LargeUpload <= 0 {
		o.LargeUpload = 1 << 30
	}
	if o.Progress == nil {
		o.Progress = io.Discard
	}
	if len(o.Self) == 0 {
		self, err := os.Executable()
		if err != nil {
			return err
		}
		o.Self = []string{self}
	}
	if o.Profile && o.Load.Duration < time.Second {
		return errors.New("bench: profiles need a duration of at least 1s")
	}
	return nil
}

// Run measures every selected row and writes OutDir/results.json.
func Run(ctx context.Context, o Options) (*Results, error) {
	if err := o.defaults(); err != nil {
		return nil, err
	}
	rows := selectRows(AllRows(), o.Rows)
	if o.Short {
		rows = shortRows(rows)
	}
	if len(rows) == 0 {
		return nil, fmt.Errorf("bench: no row matches %s", o.Rows)
	}
	if err := os.MkdirAll(o.OutDir, 0o755); err != nil {
		return nil, err
	}
	dir, err := devinfra.MkdirTemp("bench-")
	if err != nil {
		return nil, err
	}
	defer devinfra.RemoveDir(dir) //nolint:errcheck // a temporary directory

	// The million actions take a minute to copy: only for the rows of
	// their pages.
	if !slices.ContainsFunc(rows, func(r Row) bool { return strings.HasPrefix(r.Name, actionsPagePrefix) }) {
		o.Actions = 0
	}
	// The compliance seed takes minutes: only for its rows.
	if !slices.ContainsFunc(rows, func(r Row) bool { return strings.HasPrefix(r.Name, compliancePagePrefix) }) {
		o.ComplianceAssets = 0
	}
	started := time.Now()
	fmt.Fprintf(o.Progress, "starting the registry, the reference server and the bare proxy...\n")
	env, stop, err := start(ctx, o, dir)
	if err != nil {
		return nil, err
	}
	defer func() {
		stopping := time.Now()
		fmt.Fprintf(o.Progress, "stopping the registry...")
		stop()
		fmt.Fprintf(o.Progress, " %.1f s\n", time.Since(stopping).Seconds())
	}()

	ops := make([]Op, len(rows))
	for i, r := range rows {
		if ops[i], err = r.Op(env); err != nil {
			return nil, fmt.Errorf("row %s: %w", r.Name, err)
		}
	}
	res := newResults(o, rows, started)
	if o.Short {
		fmt.Fprintf(o.Progress, "the short run: rows follow each other without waiting for a quiet machine\n")
	} else {
		env.measureIdle()
		fmt.Fprintf(o.Progress, "the idle stack uses %.2f cores; a row begins once the stack is under %.2f\n", env.idleCores, env.idleCores+quietCores)
	}
	for round := range o.Rounds {
		for i, r := range rows {
			partner := slices.IndexFunc(rows, func(p Row) bool { return p.Name == r.Paired })
			if slices.ContainsFunc(rows[:i], func(p Row) bool { return p.Paired == r.Name }) {
				continue // measured with the row that names it
			}
			// A round of a full run outlasts an access token (15 min):
			// each row starts with a fresh one.
			if err := env.refreshToken(ctx); err != nil {
				return nil, err
			}
			measured, measuredOps := []int{i}, []Op{ops[i]}
			if partner >= 0 {
				measured, measuredOps = append(measured, partner), append(measuredOps, ops[partner])
			}
			fmt.Fprintf(o.Progress, "round %d/%d  %2d/%d  %s ", round+1, o.Rounds, i+1, len(rows), pad(r.Name, 46))
			samples := env.measureRows(ctx, o, pick(rows, measured), measuredOps, uint64(round*1000+i), fmt.Sprintf("r%d-%d", round+1, i+1),
				filepath.Join(o.OutDir, "profiles"), o.Profile && round == o.Rounds-1)
			for k, s := range samples {
				if k > 0 {
					fmt.Fprintf(o.Progress, "             in turns with %s ", pad(rows[measured[k]].Name, 46))
				}
				res.add(measured[k], s)
				fmt.Fprintf(o.Progress, "%8s req/s  p50 %6.2f ms  p99 %7.2f ms  %d errors", rate(s.PerSec), ms(s.P50), ms(s.P99), s.Errors)
				if s.QuietAfterS >= 1 && k == 0 {
					fmt.Fprintf(o.Progress, "  (began after %.0f s of catch-up; busiest, in cores: %s)", s.QuietAfterS, s.QuietBusiest)
				}
				fmt.Fprintln(o.Progress)
				if s.FirstError != "" {
					fmt.Fprintf(o.Progress, "    first error: %s\n", s.FirstError)
				}
			}
		}
	}
	if o.ImportRows > 0 {
		refPost := 0.0
		if row := res.row(RefPost); row != nil {
			refPost = median(collect(row.Samples, func(s RowSample) float64 { return s.PerSec }))
		}
		fmt.Fprintf(o.Progress, "import of %d rows through the gateway...\n", o.ImportRows)
		if err := env.refreshToken(ctx); err != nil {
			return nil, err
		}
		imp, err := env.measureImport(ctx, o, dir, o.ImportRows, refPost)
		res.Import = imp
		if err != nil {
			fmt.Fprintf(o.Progress, "    %v\n", err)
		}
	}
	var lagErr error
	if env.ComplianceAssets > 0 {
		lagFor := complianceLagFor
		if o.Load.Duration < time.Second { // QUICK=1
			lagFor = 3 * time.Second
		}
		fmt.Fprintf(o.Progress, "measuring the compliance read model's lag under %d action writes/s for %s...\n", complianceLagRate, lagFor)
		if err := env.refreshToken(ctx); err != nil {
			return nil, err
		}
		// A failed lag measurement is reported, as a failed import is,
		// without throwing away the rows measured before it.
		if lag, err := env.measureComplianceLag(ctx, lagFor); err != nil {
			fmt.Fprintf(o.Progress, "    compliance lag: %v\n", err)
			lagErr = err
		} else {
			res.ComplianceLag = &lag
			fmt.Fprintf(o.Progress, "%s\n", lag)
		}
		if o.Load.Duration >= time.Second { // not QUICK=1: too few rows to say anything
			fmt.Fprintf(o.Progress, "measuring the compliance roller: a day's transitions, a plan's change...\n")
			if roll, err := env.measureComplianceRoll(ctx); err != nil {
				fmt.Fprintf(o.Progress, "    compliance roller: %v\n", err)
				lagErr = errors.Join(lagErr, err)
			} else {
				res.ComplianceRoll = &roll
				fmt.Fprintf(o.Progress, "%s\n", roll)
			}
		}
	}
	res.finish(time.Now())
	if err := res.write(filepath.Join(o.OutDir, "results.json")); err != nil {
		return res, err
	}
	return res, lagErr
}

// selectRows keeps the rows that match and, transitively, their limits.
func selectRows(all []Row, match *regexp.Regexp) []Row {
	if match == nil {
		return all
	}
	return selectWhere(all, func(r Row) bool { return match.MatchString(r.Name) })
}

// shortRows keeps the rows not marked Long and, transitively, their limits
// and partners (a long limit of a short row is measured all the same).
func shortRows(all []Row) []Row {
	return selectWhere(all, func(r Row) bool { return !r.Long })
}

// selectWhere keeps the rows wanted and, transitively, their limits and
// partners.
func selectWhere(all []Row, wanted func(Row) bool) []Row {
	keep := map[string]bool{}
	var want func(name string)
	want = func(name string) {
		if name == "" || keep[name] {
			return
		}
		keep[name] = true
		for _, r := range all {
			if r.Name == name {
				want(r.Limit)
				want(r.Paired)
			}
			if r.Paired == name {
				want(r.Name)
			}
		}
	}
	for _, r := range all {
		if wanted(r) {
			want(r.Name)
		}
	}
	return slices.DeleteFunc(slices.Clone(all), func(r Row) bool { return !keep[r.Name] })
}

// pick is the rows at the given indexes.
func pick(rows []Row, at []int) []Row {
	picked := make([]Row, len(at))
	for k, i := range at {
		picked[k] = rows[i]
	}
	return picked
}

// seed creates organizations and people through the gateway, as an
// integration would.
func (e *Env) seed(ctx context.Context, orgs, people int) error {
	e.Orgs = make([]string, orgs)
	e.People = people
	e.PersonIDs = make([]string, people)
	gateway := e.Stack.RegistryURL
	return e.parallel(ctx, max(orgs, people), func(ctx context.Context, i int) error {
		if i < people {
			body, _ := json.Marshal(person(i))
			raw, err := e.send(ctx, gateway, Request{Method: "POST", Path: "/people", Body: body, Want: 201})
			var created struct{ ID string }
			if err == nil {
				err = json.Unmarshal(raw, &created)
			}
			if err != nil {
				return err
			}
			e.PersonIDs[i] = created.ID
		}
		if i < orgs {
			body, _ := json.Marshal(organizationInput{Name: fmt.Sprintf("Org %d", i), RegistrationNumber: fmt.Sprintf("REG%d", i), OrganizationType: "private", Country: "no"})
			raw, err := e.send(ctx, gateway, Request{Method: "POST", Path: "/organizations", Body: body, Want: 201})
			var created struct{ ID string }
			if err == nil {
				err = json.Unmarshal(raw, &created)
			}
			if err != nil {
				return err
			}
			e.Orgs[i] = created.ID
		}
		return nil
	})
}

// seedAssets creates one asset type and n assets of it through the
// gateway.
func (e *Env) seedAssets(ctx context.Context, n int) error {
	gateway := e.Stack.RegistryURL
	body, _ := json.Marshal(map[string]string{"brand": benchBrand, "model": benchModel})
	raw, err := e.send(ctx, gateway, Request{Method: "POST", Path: "/asset_types", Body: body, Want: 201})
	if err != nil {
		return fmt.Errorf("seed: %w", err)
	}
	var assetType struct{ ID string }
	if err := json.Unmarshal(raw, &assetType); err != nil {
		return fmt.Errorf("seed: %w", err)
	}
	e.AssetTypeID = assetType.ID
	e.Assets = make([]string, n)
	return e.parallel(ctx, n, func(ctx context.Context, i int) error {
		// Each belongs to a seeded organization: a bound client's reads
		// have other organizations' assets to leave out.
		in := assetInput(i, assetType.ID)
		in["owner_organization_id"] = e.Orgs[i%len(e.Orgs)]
		body, _ := json.Marshal(in)
		raw, err := e.send(ctx, gateway, Request{Method: "POST", Path: "/assets", Body: body, Want: 201})
		var created struct{ ID string }
		if err == nil {
			err = json.Unmarshal(raw, &created)
		}
		e.Assets[i] = created.ID
		return err
	})
}

// parallel runs do(0..n-1) on as many workers as the load has clients.
func (e *Env) parallel(ctx context.Context, n int, do func(ctx context.Context, i int) error) error {
	var next atomic.Int64
	errs := make(chan error, e.Load.Concurrency)
	var wg sync.WaitGroup
	for range e.Load.Concurrency {
		wg.Go(func() {
			for {
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				if err := do(ctx, i); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		return fmt.Errorf("seed: %w", err)
	}
	return nil
}

// Request is one HTTP call of a row.
type Request struct {
	Method, Path string
	Body         []byte
	// BodyFrom, when set, streams a body of Length bytes instead of Body
	// (a file too large to hold in memory).
	BodyFrom    func() io.Reader
	Length      int64
	ContentType string // application/json when there is a body and none is named
	NoToken     bool   // the token endpoint takes none
	Token       string // another client's access token instead of the run's
	Want        int    // the status that counts as success
}

// HTTPOp is an Op that sends next(w) to base with the run's token.
func (e *Env) HTTPOp(base string, next func(w *Worker) Request) Op {
	return Op{Do: func(ctx context.Context, w *Worker) error {
		_, err := e.send(ctx, base, next(w))
		return err
	}}
}

// send makes one call on the keep-alive client; it reads the whole answer
// and returns it only when the status is the expected one.
func (e *Env) send(ctx context.Context, base string, r Request) ([]byte, error) {
	raw, _, err := e.exchange(ctx, base, r)
	return raw, err
}

// exchange is send that also returns the answer's header (a list's Link).
func (e *Env) exchange(ctx context.Context, base string, r Request) ([]byte, http.Header, error) {
	var body io.Reader = http.NoBody
	switch {
	case r.BodyFrom != nil:
		body = r.BodyFrom()
	case r.Body != nil:
		body = bytes.NewReader(r.Body)
	}
	req, err := http.NewRequestWithContext(ctx, r.Method, base+r.Path, body)
	if err != nil {
		return nil, nil, err
	}
	if r.BodyFrom != nil {
		req.ContentLength = r.Length
	}
	if body != http.NoBody {
		ct := r.ContentType
		if ct == "" {
			ct = "application/json"
		}
		req.Header.Set("Content-Type", ct)
	}
	if !r.NoToken {
		token := r.Token
		if token == "" {
			token = *e.token.Load()
		}
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := e.client.Do(req)
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, nil, err
	}
	if resp.StatusCode != r.Want {
		return nil, nil, fmt.Errorf("%s %s: %d (want %d): %.300s", r.Method, r.Path, resp.StatusCode, r.Want, raw)
	}
	return raw, resp.Header, nil
}

// refreshToken gets a fresh access token for the read-write client.
func (e *Env) refreshToken(ctx context.Context) error {
	token, err := e.accessToken(ctx, e.Creds.ClientID, e.Creds.ClientSecret)
	if err != nil {
		return err
	}
	e.token.Store(&token)
	return nil
}

// clientToken makes one more machine client with scopes (or gives it a
// fresh secret) and returns an access token of it: a row's second caller.
func (e *Env) clientToken(ctx context.Context, id string, scopes ...string) (string, error) {
	secret, err := e.Stack.NewClient(ctx, id, scopes...)
	if err != nil {
		return "", err
	}
	return e.accessToken(ctx, id, secret)
}

// accessToken asks the identity provider for a client's access token to
// the stack's resource.
func (e *Env) accessToken(ctx context.Context, id, secret string) (string, error) {
	form := url.Values{
		"grant_type": {"client_credentials"}, "client_id": {id},
		"client_secret": {secret}, "resource": {e.Creds.Resource},
	}.Encode()
	raw, err := e.send(ctx, e.Stack.AuthURL, Request{Method: "POST", Path: "/oidc/token", Body: []byte(form),
		ContentType: "application/x-www-form-urlencoded", NoToken: true, Want: 200})
	if err != nil {
		return "", fmt.Errorf("token: %w", err)
	}
	var body struct {
		AccessToken string `json:"access_token"`
	}
	if err := json.Unmarshal(raw, &body); err != nil || body.AccessToken == "" {
		return "", fmt.Errorf("token: no access_token in %.100s", raw)
	}
	return body.AccessToken, nil
}

// StaleFinds makes every cached find of service stale by bumping its
// cache's epoch, as the cache itself does after Redis was unreachable.
func (e *Env) StaleFinds(ctx context.Context, service string) error {
	ns, err := e.findNamespace(ctx, service)
	if err != nil {
		return err
	}
	return e.redis.Incr(ctx, ns+":gen:epoch").Err()
}

// findNamespace finds the service's cache namespace in Redis
// ("<service>:<host>:<port>/<database>/<schema>", see pkg/app): after
// seeding, writes have bumped generations under it.
func (e *Env) findNamespace(ctx context.Context, service string) (string, error) {
	if ns, ok := e.namespaces.Load(service); ok {
		return ns.(string), nil
	}
	pattern := service + ":*/" + e.database + "/*:gen:*"
	iter := e.redis.Scan(ctx, 0, pattern, 1000).Iterator()
	if !iter.Next(ctx) {
		if err := iter.Err(); err != nil {
			return "", err
		}
		return "", fmt.Errorf("no find cache generations of %s match %s", service, pattern)
	}
	ns, _, _ := strings.Cut(iter.Val(), ":gen:")
	e.namespaces.Store(service, ns)
	return ns, nil
}

func randomHex() string {
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
