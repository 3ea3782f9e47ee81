package bench

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/rsa"
	"encoding/json"
	"fmt"
	"io"
	"net/url"
	"strconv"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// Row is one line of the table: something measured with the run's one
// load shape, and the row it is compared against.
type Row struct {
	Name  string // unique; what the table prints
	Via   string // where the load goes: "limit", "gateway" or "direct"
	Limit string // the row whose req/s this one's is divided by; "" for none
	// Op builds the operation once the environment is up.
	Op func(e *Env) (Op, error)
	// Before runs once before each measurement of the row, off the clock.
	Before func(ctx context.Context, e *Env) error
	// After runs once after each measurement of the row, off the clock
	// (uploads remove what they stored, so rounds do not fill the disk).
	After func(ctx context.Context, e *Env) error
	// Bytes is the payload one call moves (an upload's file): the table
	// shows MiB/s beside req/s for rows that set it.
	Bytes func(e *Env) int64
	// Once makes the row a single call by a single client, timed alone,
	// with no warm-up (a 1 GiB upload); its p50 and p99 are that call.
	Once bool
	// Events is how many change events one call makes published (the
	// relay's row): the table shows events/s beside req/s.
	Events int
	// MinWindow, when set, is the shortest measured window of the row
	// (and its warm-up): a call that lasts longer than a QUICK=1 window
	// (a delivery through relay, stream and dispatcher) would otherwise
	// never end inside it and the row would count nothing.
	MinWindow time.Duration
	// Paired names a row measured with this one call by call in turns, by
	// one client each (measureCallsInTurn), where the two are compared by a
	// goal and the one measured second would meet a machine or a datastore
	// the first changed. Both rows set Clients to 1. Selecting either row
	// selects both.
	Paired string
	// Clients, when set, is how many clients call the row at once instead
	// of the run's concurrency.
	Clients int
	// Long rows are left out of the short run inside make test
	// (Options.Short): another row of their kind stands for them there.
	// make bench runs them all, and so does make test FULL=1.
	Long bool
}

// Call is one registry operation, measured twice: through the gateway
// (compared with the direct row) and straight to its service with the same
// token (compared with Limit). A service adds its rows with one Call each.
type Call struct {
	Name    string // "GET /organizations/{id}"
	Service string // devstack name of the service that answers it
	Limit   string // what the direct row is divided by
	// Request says what worker w sends next.
	Request func(e *Env, w *Worker) Request
	// Prepare runs before each request, off the clock (see Op.Prepare).
	Prepare func(ctx context.Context, e *Env, w *Worker) error
	// Before runs once before each of the two rows, off the clock.
	Before func(ctx context.Context, e *Env, base string) error
	// After runs once after each of the two rows, off the clock.
	After func(ctx context.Context, e *Env) error
	// Bytes is the payload one call moves (see Row.Bytes).
	Bytes func(e *Env) int64
	// MinWindow is both rows' (see Row.MinWindow).
	MinWindow time.Duration
	// Long is both rows' (see Row.Long).
	Long bool
	// Clients is both rows' (see Row.Clients).
	Clients int
}

// Rows expands the calls into the gateway and direct rows.
func (c Call) Rows() []Row {
	direct := c.Name + " · direct"
	before := func(via func(e *Env) string) func(ctx context.Context, e *Env) error {
		if c.Before == nil {
			return nil
		}
		return func(ctx context.Context, e *Env) error { return c.Before(ctx, e, via(e)) }
	}
	gateway := func(e *Env) string { return e.Stack.RegistryURL }
	service := func(e *Env) string { return e.Stack.ServiceURLs[c.Service] }
	build := func(via func(e *Env) string) func(e *Env) (Op, error) {
		return func(e *Env) (Op, error) {
			base := via(e)
			if base == "" {
				return Op{}, fmt.Errorf("%s: no %s service in this stack", c.Name, c.Service)
			}
			op := e.HTTPOp(base, func(w *Worker) Request { return c.Request(e, w) })
			if c.Prepare != nil {
				op.Prepare = func(ctx context.Context, w *Worker) error { return c.Prepare(ctx, e, w) }
			}
			return op, nil
		}
	}
	return []Row{
		{Name: c.Name + " · gateway", Via: "gateway", Limit: direct, Op: build(gateway), Before: before(gateway), After: c.After, Bytes: c.Bytes, MinWindow: c.MinWindow, Long: c.Long, Clients: c.Clients},
		{Name: direct, Via: "direct", Limit: c.Limit, Op: build(service), Before: before(service), After: c.After, Bytes: c.Bytes, MinWindow: c.MinWindow, Long: c.Long, Clients: c.Clients},
	}
}

// Names of the limit rows, for Limit fields.
const (
	PgxSelect    = "pgx: the GET's select by primary key"
	PgxInsert    = "pgx: insert an organization"
	RefGet       = "reference server: GET /organizations/{id}"
	RefPost      = "reference server: POST /organizations"
	ProxyRefGet  = "bare ReverseProxy → reference GET"
	RS256Sign    = "RS256 signature, in process"
	TokenRequest = "POST /oidc/token · direct"
	PutObject    = "minio-go PutObject of the upload's bytes"
	PutLarge     = "minio-go PutObject, large file, one client"
	UploadLarge  = "POST /documents, large file, one client · gateway"
)

// Limits are what this machine can do without the registry's code: the
// database through pgx, a minimal server over it, a bare reverse proxy in
// front of that, and the signature the token endpoint must make.
var Limits = []Row{
	{Name: PgxSelect, Via: "limit", Op: func(e *Env) (Op, error) {
		return Op{Do: func(ctx context.Context, w *Worker) error {
			var org referenceOrganization
			return e.Reference.QueryRow(ctx, referenceSelect, e.RefOrgs[w.Rand.IntN(len(e.RefOrgs))]).Scan(org.fields()...)
		}}, nil
	}},
	{Name: PgxInsert, Via: "limit", Op: func(e *Env) (Op, error) {
		return Op{Do: func(ctx context.Context, w *Worker) error {
			in := newOrganization(w)
			var org referenceOrganization
			return e.Reference.QueryRow(ctx, referenceInsert, newUUIDv7(), in.Name, in.RegistrationNumber,
				in.OrganizationType, in.Country, "bench").Scan(org.fields()...)
		}}, nil
	}},
	{Name: RefGet, Via: "limit", Limit: PgxSelect, Op: func(e *Env) (Op, error) {
		return e.HTTPOp(e.ReferenceURL, func(w *Worker) Request { return getRefOrganization(e, w) }), nil
	}},
	{Name: RefPost, Via: "limit", Limit: PgxInsert, Op: func(e *Env) (Op, error) {
		return e.HTTPOp(e.ReferenceURL, func(w *Worker) Request { return createOrganization(e, w) }), nil
	}},
	{Name: ProxyRefGet, Via: "limit", Limit: RefGet, Op: func(e *Env) (Op, error) {
		return e.HTTPOp(e.ProxyURL, func(w *Worker) Request { return getRefOrganization(e, w) }), nil
	}},
	{Name: RS256Sign, Via: "limit", Op: func(*Env) (Op, error) {
		key, err := rsa.GenerateKey(rand.Reader, 2048)
		if err != nil {
			return Op{}, err
		}
		return Op{Do: func(_ context.Context, w *Worker) error {
			now := time.Now()
			_, err := jwt.NewWithClaims(jwt.SigningMethodRS256, jwt.MapClaims{
				"iss": "bench", "sub": w.Tag, "aud": "bench", "iat": now.Unix(), "exp": now.Add(time.Minute).Unix(),
				"scope": "registry:read registry:write", "jti": strconv.Itoa(w.N),
			}).SignedString(key)
			return err
		}}, nil
	}},
	// The upload's own limit: the same file put straight into the same
	// MinIO bucket by minio-go with the options the documents service
	// uses, its size known up front (which the service, reading a
	// multipart stream, never knows). Each client overwrites its own key.
	{Name: PutObject, Via: "limit", Bytes: uploadBytes, After: emptyBucket, Op: func(e *Env) (Op, error) {
		return Op{Do: func(ctx context.Context, w *Worker) error {
			return e.putObject(ctx, "bench/put-"+strconv.Itoa(w.ID), bytes.NewReader(e.upload.file), int64(len(e.upload.file)))
		}}, nil
	}},
	{Name: PutLarge, Via: "limit", Once: true, Long: true, Bytes: largeBytes, After: emptyBucket, Op: func(e *Env) (Op, error) {
		return Op{Do: func(ctx context.Context, _ *Worker) error {
			return e.putObject(ctx, "bench/put-large", newFileReader(e.LargeUpload), e.LargeUpload)
		}}, nil
	}},
}

// Calls are the registry's rows. Each service adds its own here.
var Calls = []Call{
	{Name: "GET /organizations/{id}", Service: "parties", Limit: RefGet, Request: func(e *Env, w *Worker) Request {
		return Request{Method: "GET", Path: "/organizations/" + e.Orgs[w.Rand.IntN(len(e.Orgs))], Want: 200}
	}},
	{Name: "POST /organizations", Service: "parties", Limit: RefPost, Request: createOrganization},
	// An action naming an asset, a person and an organization: the insert
	// waits for assets and parties, asked concurrently over kept-alive
	// connections, so the row shows what the three checks cost beside the
	// organization's plain insert.
	{Name: "POST /actions", Service: "actions", Limit: RefPost, Request: createAction},
	// The same actions, 100 to a batch: one ask per owner for the batch
	// (none for targets the actions service remembers) and one commit.
	ActionsBatchCall,
	PassportCall,
	// Keyset pages of a million actions (Options.Actions): a page from the
	// middle of each filter's actions must cost what its first page costs.
	actionsPage(actionLists[0], false), actionsPage(actionLists[0], true),
	actionsPage(actionLists[1], false), actionsPage(actionLists[1], true),
	// What is due at registry scale (Options.ComplianceAssets): overdue
	// expert controls, the first page and one 500 pages deep.
	compliancePage(false), compliancePage(true),
	// The same question of a type under an inspection plan, whose dates
	// are computed as the page is read.
	compliancePlannedPage(),
	// Warm: a small set of people, each found once before the row starts
	// and then again and again.
	{Name: "POST /people/find, cache warm", Service: "parties", Limit: RefGet,
		Before: func(ctx context.Context, e *Env, base string) error {
			for i := range min(e.People, warmPeople) {
				if _, err := e.send(ctx, base, findPerson(i)); err != nil {
					return err
				}
			}
			return nil
		},
		Request: func(e *Env, w *Worker) Request { return findPerson(w.Rand.IntN(min(e.People, warmPeople))) }},
	// Cold: before each find (off the clock) the cache's epoch is bumped,
	// exactly what a write that makes every find stale does, and concurrent
	// workers look up different people, so every find misses, reads
	// PostgreSQL and stores its answer. The table's cache column shows the
	// hit rate the service itself counted.
	{Name: "POST /people/find, cache cold", Service: "parties", Limit: RefGet,
		Prepare: func(ctx context.Context, e *Env, _ *Worker) error { return e.StaleFinds(ctx, "parties") },
		Request: func(e *Env, w *Worker) Request {
			return findPerson((w.N*e.Load.Concurrency + w.ID) % e.People)
		}},
	// The first pages of assets and actions, beside the stores' own
	// reads of them.
	AssetsFirstPage.Call(), ActionsFirstPage.Call(),
	// Meter readings, a full batch of 1,000 at a time.
	ReadingsBatchCall,
	// Full tiles of the log, anonymous.
	LogTilesCall,
	{Name: "GET /assets/{id}", Service: "assets", Limit: RefGet, Request: func(e *Env, w *Worker) Request {
		return Request{Method: "GET", Path: "/assets/" + e.Assets[w.Rand.IntN(len(e.Assets))], Want: 200}
	}},
	// Asset finds, warm and cold, made the same way as the people's.
	{Name: "POST /assets/find, cache warm", Service: "assets", Limit: RefGet, Long: true,
		Before: func(ctx context.Context, e *Env, base string) error {
			for i := range min(len(e.Assets), warmPeople) {
				if _, err := e.send(ctx, base, findAsset(i)); err != nil {
					return err
				}
			}
			return nil
		},
		Request: func(e *Env, w *Worker) Request { return findAsset(w.Rand.IntN(min(len(e.Assets), warmPeople))) }},
	{Name: "POST /assets/find, cache cold", Service: "assets", Limit: RefGet, Long: true,
		Prepare: func(ctx context.Context, e *Env, _ *Worker) error { return e.StaleFinds(ctx, "assets") },
		Request: func(e *Env, w *Worker) Request {
			return findAsset((w.N*e.Load.Concurrency + w.ID) % len(e.Assets))
		}},
	// An upload of one file (Options.UploadSize) with its document type,
	// as an integration sends it: multipart/form-data. The objects are
	// removed after the row, off the clock.
	{Name: "POST /documents, upload", Service: "documents", Limit: PutObject, Bytes: uploadBytes, After: emptyBucket,
		Request: func(e *Env, _ *Worker) Request {
			return Request{Method: "POST", Path: "/documents", Body: e.upload.body, ContentType: e.upload.contentType, Want: 201}
		}},
}

// The rate limiter's cost: the same GET through the stack's gateway
// (limits on, one Redis round trip per request) and through a second
// gateway before the same services with limits off.
const (
	GetLimitsOff = "GET /organizations/{id} · gateway, rate limits off"
	GetLimitsOn  = "GET /organizations/{id} · gateway, rate limits on"
	// unlimitedGateway is the second gateway's process name.
	unlimitedGateway = "api-gateway-unlimited"
	// benchBudget is the bench client's budget: the limiter runs, the
	// load never spends it.
	benchBudget = "1000000000/60s"
)

// RateLimitRows measure GetLimitsOn against GetLimitsOff.
var RateLimitRows = []Row{
	{Name: GetLimitsOff, Via: "gateway", Op: func(e *Env) (Op, error) {
		return e.HTTPOp(e.UnlimitedGatewayURL, getOrganization(e)), nil
	}},
	{Name: GetLimitsOn, Via: "gateway", Limit: GetLimitsOff, Op: func(e *Env) (Op, error) {
		return e.HTTPOp(e.Stack.RegistryURL, getOrganization(e)), nil
	}},
}

func getOrganization(e *Env) func(w *Worker) Request {
	return func(w *Worker) Request {
		return Request{Method: "GET", Path: "/organizations/" + e.Orgs[w.Rand.IntN(len(e.Orgs))], Want: 200}
	}
}

// warmPeople is how many people the warm find cycles through.
const warmPeople = 200

// Token is the identity provider's row; it has no gateway in front.
var Token = Row{Name: TokenRequest, Via: "direct", Limit: RS256Sign, Op: func(e *Env) (Op, error) {
	form := url.Values{
		"grant_type": {"client_credentials"}, "client_id": {e.Creds.ClientID},
		"client_secret": {e.Creds.ClientSecret}, "resource": {e.Creds.Resource},
	}.Encode()
	return e.HTTPOp(e.Stack.AuthURL, func(*Worker) Request {
		return Request{Method: "POST", Path: "/oidc/token", Body: []byte(form), ContentType: "application/x-www-form-urlencoded", NoToken: true, Want: 200}
	}), nil
}}

// LargeUploadRow is one large file (Options.LargeUpload, 1 GiB by
// default) uploaded through the gateway by one client, streamed from a
// generator (nothing holds the file in memory). The table shows its MiB/s
// against PutLarge and the peak resident set of every process while it
// ran: the documents service's must stay small whatever the file's size.
// Before it the documents service gives back what the rows before it left
// (Env.settle), so its peak is the upload's own.
var LargeUploadRow = Row{Name: UploadLarge, Via: "gateway", Limit: PutLarge, Once: true, Long: true, Bytes: largeBytes, After: emptyBucket,
	Before: func(ctx context.Context, e *Env) error { return e.settle(ctx, "documents") },
	Op: func(e *Env) (Op, error) {
		return e.HTTPOp(e.Stack.RegistryURL, func(*Worker) Request {
			return Request{Method: "POST", Path: "/documents", ContentType: e.upload.contentType, Want: 201,
				BodyFrom: func() io.Reader { return e.upload.stream(e.LargeUpload) }, Length: e.upload.streamLength(e.LargeUpload)}
		}), nil
	}}

// AllRows is the table, in order.
func AllRows() []Row {
	rows := append(append([]Row{}, Limits...), AssetsFirstPage.StoreRow(), ActionsFirstPage.StoreRow())
	for _, c := range Calls {
		rows = append(rows, c.Rows()...)
	}
	rows = append(rows, RateLimitRows...)
	rows = append(rows, LargeUploadRow, Token, EventsOff, ReadersStopped, RelayRow, WebhookRow, WebhookBesideHangingRow, ConsumerRow, LargePagesRow, FlowRow, InclusionRow, StoreRow, UnloggedStoreRow, AppendRow,
		RevocationRow)
	rows = append(rows, TenancyRows()...)
	// Last of a round: its components are in the read model only while it runs.
	return append(rows, ComponentsPageRow)
}

// Goal is a target of the bench: Row's metric divided by Of's (or by Value)
// must be at least AtLeast, or at most AtMost.
type Goal struct {
	Name    string
	Row     string
	Of      string  // another row; or
	Value   float64 // a fixed number
	Metric  string  // "req/s", "p50", "p99" (the row's ÷ Of's), "p99/p50", "p50 s" or "p99 s" (the row's own p99 ÷ p50, or p50 or p99 in seconds; Of and Value unused), or "rss" (Process's peak in MiB, Of and Value unused)
	Process string  // for "rss"
	// Items is how many items a request of Row carries (a batch's size):
	// a "req/s" goal then counts items a second, against Of's requests or
	// Value. 0 counts requests.
	Items   float64
	AtLeast float64
	AtMost  float64
}

// PostgRESTGetRate is PostgREST's published GET rate on 2 vCPUs.
const PostgRESTGetRate = 2000

// Goals are checked in every round and reported with the table.
var Goals = []Goal{
	{Name: "through the gateway ≥ 0.8 × direct, GET by id", Row: "GET /organizations/{id} · gateway", Of: "GET /organizations/{id} · direct", Metric: "req/s", AtLeast: 0.8},
	{Name: "through the gateway ≥ 0.8 × direct, find", Row: "POST /people/find, cache warm · gateway", Of: "POST /people/find, cache warm · direct", Metric: "req/s", AtLeast: 0.8},
	{Name: "direct ≥ 0.5 × reference server, GET by id", Row: "GET /organizations/{id} · direct", Of: RefGet, Metric: "req/s", AtLeast: 0.5},
	{Name: "warm find p50 ≤ 0.5 × cold find p50 (gateway)", Row: "POST /people/find, cache warm · gateway", Of: "POST /people/find, cache cold · gateway", Metric: "p50", AtMost: 0.5},
	{Name: "whole stack GET ≥ 3 × PostgREST's 2,000/s", Row: "GET /organizations/{id} · gateway", Value: PostgRESTGetRate, Metric: "req/s", AtLeast: 3},
	{Name: "assets: through the gateway ≥ 0.8 × direct, GET", Row: "GET /assets/{id} · gateway", Of: "GET /assets/{id} · direct", Metric: "req/s", AtLeast: 0.8},
	{Name: "assets: through the gateway ≥ 0.8 × direct, find", Row: "POST /assets/find, cache warm · gateway", Of: "POST /assets/find, cache warm · direct", Metric: "req/s", AtLeast: 0.8},
	{Name: "assets: direct ≥ 0.5 × reference server, GET", Row: "GET /assets/{id} · direct", Of: RefGet, Metric: "req/s", AtLeast: 0.5},
	{Name: "assets: warm find p50 ≤ 0.5 × cold (gateway)", Row: "POST /assets/find, cache warm · gateway", Of: "POST /assets/find, cache cold · gateway", Metric: "p50", AtMost: 0.5},
	{Name: "upload through the gateway ≥ 0.8 × PutObject", Row: "POST /documents, upload · gateway", Of: PutObject, Metric: "req/s", AtLeast: 0.8},
	{Name: "documents peak RSS, large upload ≤ 64 MiB", Row: UploadLarge, Process: "documents", Metric: "rss", AtMost: 64},
	{Name: "rate limits on ≥ 0.95 × off, GET through the gateway", Row: GetLimitsOn, Of: GetLimitsOff, Metric: "req/s", AtLeast: 0.95},
	{Name: "events: POST /organizations with events ≥ 0.8 × without", Row: "POST /organizations · direct", Of: EventsOffName, Metric: "req/s", AtLeast: 0.8},
	{Name: "events: POST /organizations with events, their readers stopped ≥ 0.8 × without", Row: ReadersStoppedName, Of: EventsOffName, Metric: "req/s", AtLeast: 0.8},
	{Name: "events: write answered → webhook delivered, p99 ≤ 1 s", Row: WebhookRowName, Metric: "p99 s", AtMost: 1},
	{Name: "events: webhook p99 beside another client's hanging receiver ≤ 2 × without", Row: WebhookBesideHangingRowName, Of: WebhookRowName, Metric: "p99", AtMost: 2},
	{Name: "auth: client deleted → token refused by the gateway, p99 ≤ 5 s", Row: RevocationRowName, Metric: "p99 s", AtMost: 5},
	{Name: "events deployable peak RSS, delivering ≤ 128 MiB", Row: WebhookRowName, Process: "events", Metric: "rss", AtMost: 128},
	{Name: "events deployable peak RSS, 16 clients reading pages of the largest events ≤ 256 MiB", Row: LargePagesRowName, Process: "events", Metric: "rss", AtMost: 256},
	{Name: "actions: POST /actions direct ≥ 0.3 × reference POST", Row: "POST /actions · direct", Of: RefPost, Metric: "req/s", AtLeast: 0.3},
	{Name: "actions: POST /actions p99 ≤ 3 × p50 (16 writers, direct)", Row: "POST /actions · direct", Metric: "p99/p50", AtMost: 3},
	{Name: "actions: batches of 100 ≥ 5,000 actions/s (gateway)", Row: ActionsBatch + " · gateway", Value: 5000, Items: BatchSize, Metric: "req/s", AtLeast: 1},
	{Name: "actions: batches of 100 ≥ 0.8 × reference POST, in actions/s (gateway)", Row: ActionsBatch + " · gateway", Of: RefPost, Items: BatchSize, Metric: "req/s", AtLeast: 0.8},
	{Name: "parties: POST /organizations direct ≥ 0.6 × reference POST", Row: "POST /organizations · direct", Of: RefPost, Metric: "req/s", AtLeast: 0.6},
	{Name: "log: inclusion proof at 10 million leaves, p99 ≤ 20 ms", Row: InclusionRowName, Metric: "p99 s", AtMost: 0.02},
	// The log's goal: "appending to the log costs at most 10 % of the feed's
	// store rate", where the log's cost is paid: the consumer's store with
	// it and without, one writer, call by call in turns. (Dividing the
	// store's rate by AppendRow's charged the log a transaction of its own,
	// a commit it does not pay inside the store.)
	{Name: "log: storing a batch with the log ≥ 0.9 × without", Row: StoreRowName, Of: UnloggedStoreRowName, Metric: "req/s", AtLeast: 0.9},
	{Name: "log: full tiles ≥ 5,000 tiles/s, anonymous (gateway)", Row: LogTiles + " · gateway", Value: 5000, Metric: "req/s", AtLeast: 1},
	{Name: "assets: batches of 1,000 meter readings ≥ 20,000 readings/s (gateway)", Row: ReadingsBatch + " · gateway", Value: 20000, Items: ReadingsBatchSize, Metric: "req/s", AtLeast: 1},
	// The store row reads the page and encodes it with 16 clients, as the
	// rows do: its rate is the inverse of PostgreSQL's time and the
	// encoding's, so "within 3 × that time" is a third of its rate.
	{Name: "assets: first page of 100 ≤ 3 × (PostgreSQL + encoding 100 rows) (gateway)", Row: AssetsFirstPage.Name() + " · gateway", Of: AssetsFirstPage.StoreName(), Metric: "req/s", AtLeast: 1.0 / 3},
	{Name: "actions: first page of 100 ≤ 3 × (PostgreSQL + encoding 100 rows) (gateway)", Row: ActionsFirstPage.Name() + " · gateway", Of: ActionsFirstPage.StoreName(), Metric: "req/s", AtLeast: 1.0 / 3},
	{Name: "compliance: include=components, first page p50 ≤ 25 ms, three components under each asset (gateway)", Row: ComponentsPageName, Metric: "p50 s", AtMost: 0.025},
	{Name: "log: passport, 100 actions, p50 ≤ 300 ms (gateway)", Row: PassportName + " · gateway", Metric: "p50 s", AtMost: 0.3},
}

func getRefOrganization(e *Env, w *Worker) Request {
	return Request{Method: "GET", Path: "/organizations/" + e.RefOrgs[w.Rand.IntN(len(e.RefOrgs))], Want: 200}
}

type organizationInput struct {
	Name               string `json:"name"`
	RegistrationNumber string `json:"registration_number"`
	OrganizationType   string `json:"organization_type"`
	Country            string `json:"country"`
}

func newOrganization(w *Worker) organizationInput {
	return organizationInput{Name: "Bench " + w.Tag, RegistrationNumber: w.Tag + "-" + strconv.Itoa(w.N), OrganizationType: "private", Country: "no"}
}

func createOrganization(_ *Env, w *Worker) Request {
	body, _ := json.Marshal(newOrganization(w))
	return Request{Method: "POST", Path: "/organizations", Body: body, Want: 201}
}

func person(i int) map[string]string {
	return map[string]string{"first_name": "First" + strconv.Itoa(i), "last_name": "Last" + strconv.Itoa(i), "date_of_birth": "1980-01-01"}
}

func findPerson(i int) Request {
	body, _ := json.Marshal(person(i))
	return Request{Method: "POST", Path: "/people/find", Body: body, Want: 200}
}

func createAction(e *Env, w *Worker) Request {
	return Request{Method: "POST", Path: "/actions", Body: actionBody(e, w, w.Tag+"-"+strconv.Itoa(w.N)), Want: 201}
}

// actionBody is an action on a seeded asset, person and organization;
// reference is its source_reference, unique per action (the sync key).
func actionBody(e *Env, w *Worker, reference string) []byte {
	body, _ := json.Marshal(map[string]any{"asset_id": e.Assets[w.Rand.IntN(len(e.Assets))], "action_type": "expert_control",
		"performed_at": "2025-03-14", "person_id": e.PersonIDs[w.Rand.IntN(len(e.PersonIDs))],
		"organization_id": e.Orgs[w.Rand.IntN(len(e.Orgs))], "status_ok": true, "source_system": "bench", "source_reference": reference,
		"data": map[string]any{"checklist": map[string]string{"brakes": "ok", "chains": "ok"}}})
	return body
}

// The seeded assets are all of one type; asset i has serial number SN<i>.
const benchBrand, benchModel = "Bench", "B1"

func assetInput(i int, typeID string) map[string]string {
	return map[string]string{"serial_number": "SN" + strconv.Itoa(i), "asset_type_id": typeID}
}

func findAsset(i int) Request {
	body, _ := json.Marshal(map[string]string{"serial_number": "SN" + strconv.Itoa(i), "brand": benchBrand, "model": benchModel})
	return Request{Method: "POST", Path: "/assets/find", Body: body, Want: 200}
}
