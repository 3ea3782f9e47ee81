//go:build faults

package faults

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"sync"
	"testing"
	"text/tabwriter"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/assetregistry/registry/pkg/outbox"
	"github.com/assetregistry/registry/tools/devinfra"
	"github.com/assetregistry/registry/tools/devstack"
)

// The cluster faults (make cluster-faults): the registry runs on the
// datastores as clusters (devstack's Options.Clusters: PostgreSQL with a
// synchronous standby, Redis with Sentinel, three NATS nodes) and each
// loses a member under the fault suite's load, as production's would. The
// checks are the suite's: every answer the right one, nothing acknowledged
// lost, nothing twice, every event in the stream once and in order. Each
// row also says how long the registry took to come back, which the suite
// measures and prints but does not hold to a bound (speed is not asserted
// in tests).

func skipOnClusters(t *testing.T) {
	t.Helper()
	if *clusters || *restoreDrill {
		t.Skip("with -clusters only TestClusterFaults runs (make cluster-faults), with -restore only TestRestoreDrill (make restore-drill)")
	}
}

func runClusters(m *testing.M) int {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	suite, stop, err := devstack.StartSuite(ctx, "cluster-faults", devstack.Options{
		Database: "registry", Clusters: true, Env: stackEnv(),
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, "cluster faults:", err)
		return 1
	}
	defer func() {
		if err := stop(); err != nil {
			fmt.Fprintln(os.Stderr, "cluster faults: stop stack:", err)
		}
	}()
	stack, creds = suite.Stack, suite.Creds
	code := m.Run()
	printReport()
	printClusterReport()
	return code
}

// clusterFault takes one member of a cluster away. inject returns once the
// member is gone and, where an operator would act, acted (a standby
// promoted); failedOver returns once the cluster has a new primary or
// leader. heal then restores the lost redundancy, after the registry has
// recovered, as a supervisor or an operator would.
type clusterFault struct {
	name                     string
	inject, failedOver, heal func(t *testing.T)
	// observe, when set, runs right after inject and returns when what it
	// watches has come back (the find cache serving hits again).
	observe func(t *testing.T, since time.Time) time.Duration
	// prepare, when set, runs before the load starts (the standbys put
	// behind links the fault cuts).
	prepare func(t *testing.T)
	// unavailable: the load may get 503s with Retry-After meanwhile.
	unavailable bool
}

// clusterRow is one cluster fault's timings, beside its row in the
// suite's report.
type clusterRow struct {
	fault      string
	failover   time.Duration // until the cluster had a new primary or leader
	writeGap   time.Duration // the longest time without an acknowledged write
	refused    int           // creates answered with a failure (or not at all)
	recovered  time.Duration // until a create, read, find, upload, asset type, asset and action on it all succeeded
	eventsBack time.Duration // until an event recorded after the fault was published
	observed   string
}

var clusterReport []clusterRow

func TestClusterFaults(t *testing.T) {
	if !*clusters {
		t.Skip("needs -clusters: make cluster-faults")
	}
	faults := []clusterFault{
		{name: "nats: the stream's leader killed (SIGKILL), restarted", inject: killStreamLeader, failedOver: streamHasLeader,
			heal: restartNatsNode},
		{name: "postgres: a standby killed (SIGKILL) under writes, restarted", inject: killSecondStandby,
			failedOver: func(*testing.T) {}, heal: restartSecondStandby},
		{name: "postgres: a standby rebuilt (pg_basebackup) while writes go on", inject: rebuildSecondStandby,
			failedOver: func(*testing.T) {}, heal: func(*testing.T) {}},
		{name: "postgres: primary killed (SIGKILL), standby promoted (pg_ctl promote)", inject: killPrimaryAndPromote,
			failedOver: func(*testing.T) {}, heal: rebuildFailedPrimary, unavailable: true},
		{name: "postgres: primary partitioned from both standbys under writes, fenced, the most advanced standby promoted",
			prepare: streamThroughLinks, inject: partitionPrimary, failedOver: func(*testing.T) {}, heal: healPartition, unavailable: true},
		{name: "redis: primary killed (SIGKILL), Sentinel fails over", inject: killRedisPrimary, failedOver: sentinelNamesNewPrimary,
			heal: restartRedisPrimary, observe: findCacheAnswersAgain},
	}
	for i, f := range faults {
		t.Run(f.name, func(t *testing.T) { exerciseCluster(t, 50+i, f) })
	}
}

// exerciseCluster runs one cluster fault under the load and checks what
// the registry did, as exercise does.
func exerciseCluster(t *testing.T, i int, f clusterFault) {
	if f.prepare != nil {
		f.prepare(t)
	}
	c := newClient(t)
	l := newLoad(c, tag(i))
	stopLoad := l.run(3, 25*time.Millisecond)
	time.Sleep(2 * time.Second) // the load reaches its stride before the fault

	at := time.Now()
	f.inject(t)
	// The registry is probed from the fault's start, beside the wait for
	// the cluster's failover: a registry that never stopped answering
	// (Redis is optional) recovers at once.
	var (
		wg                 sync.WaitGroup
		recovered          bool
		recoveredAfter, od time.Duration
	)
	wg.Go(func() { recovered = waitRecovered(t, c, l.tag); recoveredAfter = time.Since(at) })
	if f.observe != nil {
		wg.Go(func() { od = f.observe(t, at) })
	}
	f.failedOver(t)
	cr := clusterRow{fault: f.name, failover: time.Since(at)}
	wg.Wait()
	cr.recovered = recoveredAfter
	cr.eventsBack = eventsFlowingSince(t, at)
	if f.observe != nil {
		cr.observed = "the find cache answered lookups again after " + od.Round(10*time.Millisecond).String()
	}
	f.heal(t)
	time.Sleep(time.Second) // some of the load after the heal too
	calls := stopLoad()
	if !recovered {
		t.Error("the registry did not recover (a create, read, find and upload all answered) within 90 s of the fault")
	}
	cr.writeGap = longestWriteGap(calls)
	for _, c := range calls {
		if c.create && !c.ok() {
			cr.refused++
		}
	}

	r := row{fault: f.name, calls: len(calls), statuses: byStatus(calls), recovered: recovered}
	for _, c := range calls {
		if c.status != 0 {
			r.slowest = max(r.slowest, c.took)
		}
	}
	checkAnswers(t, fault{unavailable: f.unavailable}, calls)
	acked, retried := retryKeyed(t, c, calls)
	r.retried = retried
	r.lost = checkReadable(t, c, acked)
	r.duplicates = checkCopies(t, c, calls, acked)
	r.halfWritten = checkDocuments(t, l.tag, calls, acked)
	checkOrganizations(t, l.tag, calls, acked)
	events := checkEvents(t)
	r.eventsLost, r.eventsOutOfOrder = events.lost+events.duplicated, events.outOfOrder
	record(r)
	clusterReport = append(clusterReport, cr)
}

// longestWriteGap is the longest time between two acknowledged creates of
// the load (each counted from when it was sent).
func longestWriteGap(calls []call) time.Duration {
	var times []time.Time
	for _, c := range calls {
		if c.create && c.ok() {
			times = append(times, c.at)
		}
	}
	slices.SortFunc(times, func(a, b time.Time) int { return a.Compare(b) })
	var gap time.Duration
	for i := 1; i < len(times); i++ {
		gap = max(gap, times[i].Sub(times[i-1]))
	}
	return gap
}

// eventsFlowingSince waits (90 s at most) until an event the parties
// service recorded after since is published, and returns when that was,
// from since: how long the events waited for the stream to take them.
func eventsFlowingSince(t *testing.T, since time.Time) time.Duration {
	t.Helper()
	deadline := time.Now().Add(90 * time.Second)
	for {
		var published *time.Time
		err := admin(t).QueryRow(t.Context(), `SELECT min(published_at) FROM parties.outbox_published
			WHERE time > $1`, since).Scan(&published)
		if err == nil && published != nil {
			return published.Sub(since)
		}
		if time.Now().After(deadline) {
			t.Errorf("no event recorded after the fault was published within 90 s (%v)", err)
			return 0
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func printClusterReport() {
	if len(clusterReport) == 0 {
		return
	}
	w := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(w, "\ncluster fault\tnew primary or leader after\tlongest time without an acked write\tcreates refused\trecovered after\tevents published again after")
	for _, r := range clusterReport {
		fmt.Fprintf(w, "%s\t%s\t%s\t%d\t%s\t%s\n", r.fault, r.failover.Round(10*time.Millisecond), r.writeGap.Round(10*time.Millisecond),
			r.refused, r.recovered.Round(10*time.Millisecond), r.eventsBack.Round(10*time.Millisecond))
	}
	w.Flush()
	for _, r := range clusterReport {
		if r.observed != "" {
			fmt.Printf("%s: %s\n", r.fault, r.observed)
		}
	}
	fmt.Println("(times from the fault's start; recovered: a create, read, find, upload, asset type, asset and action on it all answered 2xx, probed from the start)")
}

// NATS: the node leading the stream is lost.

var killedNats *devinfra.Nats

func jetStream(t *testing.T) (jetstream.JetStream, func()) {
	t.Helper()
	nc, err := nats.Connect(stack.NATS.URL, nats.UserInfo(stack.NATS.User, stack.NATS.Password), nats.Timeout(5*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	js, err := jetstream.New(nc)
	if err != nil {
		nc.Close()
		t.Fatal(err)
	}
	return js, nc.Close
}

func streamLeader(t *testing.T) string {
	t.Helper()
	js, closeJS := jetStream(t)
	defer closeJS()
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	s, err := js.Stream(ctx, outbox.StreamName)
	if err != nil {
		return ""
	}
	info, err := s.Info(ctx)
	if err != nil || info.Cluster == nil {
		return ""
	}
	return info.Cluster.Leader
}

func killStreamLeader(t *testing.T) {
	leader := streamLeader(t)
	for i, n := range stack.NatsCluster.Nodes {
		if "registry-node-"+strconv.Itoa(i+1) == leader {
			killedNats = n
		}
	}
	if killedNats == nil {
		t.Fatalf("the stream's leader %q is none of the cluster's nodes", leader)
	}
	t.Logf("killing %s, the stream's leader", leader)
	must(t, killedNats.Kill())
}

func streamHasLeader(t *testing.T) {
	deadline := time.Now().Add(60 * time.Second)
	for {
		if l := streamLeader(t); l != "" && l != "registry-node-"+killedNode() {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("the stream has no new leader 60 s after its leader was lost")
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func killedNode() string {
	for i, n := range stack.NatsCluster.Nodes {
		if n == killedNats {
			return strconv.Itoa(i + 1)
		}
	}
	return ""
}

// restartNatsNode starts the lost server again and waits until it is a
// current follower of the stream again: the stream has its three copies.
func restartNatsNode(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	must(t, killedNats.Restart(ctx))
	for {
		if streamWhole(t) {
			return
		}
		if ctx.Err() != nil {
			t.Fatal("the restarted server did not catch up with the stream within a minute")
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// streamWhole reports whether the stream has a leader and two current
// followers.
func streamWhole(t *testing.T) bool {
	t.Helper()
	js, closeJS := jetStream(t)
	defer closeJS()
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	s, err := js.Stream(ctx, outbox.StreamName)
	if err != nil {
		return false
	}
	info, err := s.Info(ctx)
	if err != nil || info.Cluster == nil || info.Cluster.Leader == "" || len(info.Cluster.Replicas) != 2 {
		return false
	}
	for _, r := range info.Cluster.Replicas {
		if !r.Current || r.Offline {
			return false
		}
	}
	return true
}

// PostgreSQL: the primary is lost, the synchronous standby promoted.

func killPrimaryAndPromote(t *testing.T) {
	must(t, stack.Postgres.Kill())
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	must(t, stack.PostgresStandby.Promote(ctx))
}

// rebuildFailedPrimary makes the lost primary a synchronous standby of
// the promoted one, as an operator restores the cluster's redundancy.
func rebuildFailedPrimary(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	failed, promoted := stack.Postgres, stack.PostgresStandby
	must(t, failed.Follow(ctx, promoted, devstack.FailedPrimaryName))
	// The second standby followed the lost primary: it streams from the
	// promoted one once rebuilt from it.
	must(t, stack.PostgresSecondStandby.Follow(ctx, promoted, devstack.SecondStandbyName))
	must(t, promoted.SetSynchronousQuorum(ctx, true, devstack.FailedPrimaryName, devstack.SecondStandbyName))
	stack.Postgres, stack.PostgresStandby = promoted, failed
}

// A standby of the quorum is lost: the primary's commits wait for the
// other (ANY 1), so no write is refused or held; the lost one is
// restarted and catches up.
func killSecondStandby(t *testing.T) { must(t, stack.PostgresSecondStandby.Kill()) }

func restartSecondStandby(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	must(t, stack.PostgresSecondStandby.Restart(ctx))
}

// rebuildSecondStandby replaces a standby's data with a new base backup
// of the primary (pg_basebackup) while the load writes, as an operator
// rebuilds a standby whose disk was lost.
func rebuildSecondStandby(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	must(t, stack.PostgresSecondStandby.Follow(ctx, stack.Postgres, devstack.SecondStandbyName))
}

// Redis: the primary is lost; Sentinel promotes the replica.

var lostRedisPrimary string

func killRedisPrimary(t *testing.T) {
	lostRedisPrimary = stack.Redis.Addr
	must(t, stack.Redis.Kill())
}

func sentinelNamesNewPrimary(t *testing.T) {
	deadline := time.Now().Add(60 * time.Second)
	for {
		if p, err := stack.Sentinels[0].Primary(t.Context()); err == nil && p != lostRedisPrimary {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("Sentinel names no new primary 60 s after the old one was lost")
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// restartRedisPrimary starts the lost server again, empty; Sentinel makes
// it a replica of the new primary.
func restartRedisPrimary(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	must(t, stack.Redis.Restart(ctx))
	stack.Redis, stack.RedisReplica = stack.RedisReplica, stack.Redis
}

// findCacheAnswersAgain waits until the parties service's find cache has
// a lookup answered by Redis (a hit or a miss, not an error or a bypass)
// that it counted after since (60 s at most).
func findCacheAnswersAgain(t *testing.T, since time.Time) time.Duration {
	answered := func() float64 {
		url := stack.MetricsURLs["parties"]
		return metricSum(t, url, "find_cache_requests_total", `result="hit"`) + metricSum(t, url, "find_cache_requests_total", `result="miss"`)
	}
	before := answered()
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		if answered() > before {
			return time.Since(since)
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Error("the find cache answered no lookup within 60 s of the failover")
	return 0
}
