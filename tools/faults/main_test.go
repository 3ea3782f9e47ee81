//go:build faults

package faults

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"flag"
	"fmt"
	"os"
	"sync"
	"testing"
	"text/tabwriter"
	"time"

	toxiproxy "github.com/Shopify/toxiproxy/v2"
	"github.com/rs/zerolog"

	"github.com/assetregistry/registry/tools/devstack"
)

// The stack's limits, short so that a fault costs seconds, not minutes.
const (
	requestTimeout = 6 * time.Second
	peerTimeout    = 1500 * time.Millisecond
	// hangBound is how long the load waits for an answer: the request
	// timeout and a margin for the gateway's and the client's own work on a
	// busy machine. A call still unanswered then has hung, which no fault
	// may cause; a pause of a dependency lasts longer than this, so a
	// request that waits for the dependency instead of giving up is caught.
	hangBound = requestTimeout + 4*time.Second
	// upstreamTimeout is the gateway's deadline for an ordinary call
	// (UPSTREAM_TIMEOUT), a few seconds past the services' own, as in
	// production; uploads get the same as their bound on silence.
	upstreamTimeout = requestTimeout + 2*time.Second
	// breakerOpenFor is how long a breaker refuses before one call probes
	// (UPSTREAM_BREAKER_OPEN_FOR, PEER_BREAKER_OPEN_FOR).
	breakerOpenFor = 2 * time.Second
	// loadClients is how many clients send the load of each fault.
	loadClients   = 3
	bodyTimeout   = 3 * time.Second // HTTP_BODY_TIMEOUT and the upload rate window
	uploadTimeout = 20 * time.Second
	maxUpload     = 1 << 20
)

var (
	stack   *devstack.Stack
	creds   devstack.Credentials
	proxies = map[string]*toxiproxy.Proxy{} // by datastore: postgres, redis, s3, nats

	reportMu sync.Mutex
	report   []row
)

// clusters runs the suite against the datastores as clusters (make
// cluster-faults): TestClusterFaults alone, the others skip.
var clusters = flag.Bool("clusters", false, "run the registry on clusters of PostgreSQL, Redis and NATS and fail each over (TestClusterFaults)")

func TestMain(m *testing.M) {
	flag.Parse()
	if *clusters {
		os.Exit(runClusters(m))
	}
	if *restoreDrill {
		os.Exit(runRestore(m))
	}
	os.Exit(run(m))
}

func run(m *testing.M) int {
	// toxiproxy in-process: one proxy per datastore, every registry
	// process connecting through it, the suite's own checks going around.
	toxics := toxiproxy.NewServer(toxiproxy.NewMetricsContainer(nil), zerolog.Nop())
	via := func(datastore, addr string) (string, error) {
		p := toxiproxy.NewProxy(toxics, datastore, "127.0.0.1:0", addr)
		if err := p.Start(); err != nil {
			return "", err
		}
		proxies[datastore] = p
		return p.Listen, nil
	}
	defer func() {
		for _, p := range proxies {
			p.Stop()
		}
	}()

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	// Private datastores, since the suite kills them, with the durability
	// of production (a killed PostgreSQL must not lose what it
	// acknowledged: Ephemeral's synchronous_commit=off would).
	suite, stop, err := devstack.StartSuite(ctx, "faults", devstack.Options{
		Database: "registry", Via: via,
		Env: append(stackEnv(), webhookEnv...),
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, "faults:", err)
		return 1
	}
	defer func() {
		if err := stop(); err != nil {
			fmt.Fprintln(os.Stderr, "faults: stop stack:", err)
		}
	}()
	stack, creds = suite.Stack, suite.Creds
	code := m.Run()
	printReport()
	printWebhookReport()
	printSetAsideReport()
	return code
}

// stackEnv is the registry's settings under the suite: limits short so
// that a fault costs seconds, not minutes.
func stackEnv() []string {
	return []string{
		"REQUEST_TIMEOUT=" + requestTimeout.String(),
		"HTTP_BODY_TIMEOUT=" + bodyTimeout.String(),
		"HTTP_UPLOAD_RATE_WINDOW=" + bodyTimeout.String(),
		fmt.Sprintf("DOCUMENTS_MAX_SIZE=%d", maxUpload),
		// Objects of uploads a fault cut short are swept within
		// seconds of their deadline, so the suite can see the
		// bucket and the rows agree.
		"DOCUMENTS_UPLOAD_TIMEOUT=" + uploadTimeout.String(),
		"DOCUMENTS_SWEEP_EVERY=1s",
		"LOG_LEVEL=warn",
		// The load is one client at up to a few hundred calls a
		// second for minutes; the suite is about failures, not
		// budgets, so the limiter runs (Redis faults reach it) with
		// a budget the load never spends.
		"RATE_LIMIT_DEFAULT=10000000/60s",
		"RATE_LIMIT_ITEMS=10000000/60s",
		// A peer slower than this cannot answer: the slow-peer row's
		// 2 s is beyond it, the machine's own pace well within it.
		"PEER_TIMEOUT=" + peerTimeout.String(),
		// A frozen service's breakers open after as many calls
		// without an answer in time as the load has clients: the
		// first round of deadlines opens them, as more callers do in
		// production.
		"UPSTREAM_TIMEOUT=" + upstreamTimeout.String(),
		"UPSTREAM_IDLE_TIMEOUT=" + upstreamTimeout.String(),
		fmt.Sprintf("UPSTREAM_BREAKER_FAILURES=%d", loadClients), fmt.Sprintf("PEER_BREAKER_FAILURES=%d", loadClients),
		"UPSTREAM_BREAKER_OPEN_FOR=" + breakerOpenFor.String(),
		"PEER_BREAKER_OPEN_FOR=" + breakerOpenFor.String(),
		// The suite holds the stream to the outboxes (checkEvents):
		// published events stay for that, as outbox.retention keeps
		// them for an operator's inspection.
		"OUTBOX_RETENTION=1h",
	}
}

// row is one fault's line in the report.
type row struct {
	fault                                  string
	calls                                  int
	statuses                               string
	lost, duplicates, halfWritten, retried int
	eventsLost, eventsOutOfOrder           int // events not in the stream exactly once; out of order per resource
	recovered                              bool
	slowest                                time.Duration
	unaffected                             string // the calls that need nothing the fault breaks (checkUnaffected)
	frozen                                 *freezeFigures
}

func record(r row) {
	reportMu.Lock()
	defer reportMu.Unlock()
	report = append(report, r)
}

func printReport() {
	if len(report) == 0 {
		return
	}
	w := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(w, "\nfault\tcalls\tanswers by status\tslowest answer\tretried with key\tacked writes lost\tduplicates\thalf-written\tevents lost or doubled\tevents out of order\trecovered")
	for _, r := range report {
		fmt.Fprintf(w, "%s\t%d\t%s\t%s\t%d\t%d\t%d\t%d\t%d\t%d\t%v\n", r.fault, r.calls, r.statuses, r.slowest.Round(10*time.Millisecond),
			r.retried, r.lost, r.duplicates, r.halfWritten, r.eventsLost, r.eventsOutOfOrder, r.recovered)
	}
	w.Flush()
	for _, r := range report {
		if r.unaffected != "" {
			fmt.Printf("%s: %s\n", r.fault, r.unaffected)
		}
	}
	printFreezeReport()
	printLeaderReport()
	printLogReport()
}

func randomHex() string {
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// tag makes a fault's names unique within the run: f03-1a2b3c4d.
func tag(i int) string { return fmt.Sprintf("f%02d-%s", i, randomHex()) }
