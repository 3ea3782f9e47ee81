//go:build faults

package faults

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"

	"github.com/assetregistry/registry/pkg/catalog"
	registry "github.com/assetregistry/registry/sdk"
	"github.com/assetregistry/registry/tools/devinfra"
	"github.com/assetregistry/registry/tools/devstack"
	"github.com/assetregistry/registry/tools/testkit"
)

// The restore drill (make restore-drill): what production's Barman Cloud
// backups (charts/registry, datastores.postgres.backup) promise, done on
// loopback with the same tools on the registry itself.
//
// The registry's PostgreSQL archives its WAL into an object store of its
// own (a second MinIO, the backups bucket) with barman-cloud-wal-archive
// and gets a base backup there with barman-cloud-backup, while the fault
// suite's load writes through the gateway to all five services. Halfway
// the drill notes a target time (and the log's checkpoint then); later
// the server is killed (SIGKILL, as if its disks were gone) and the
// registry's processes stop. barman-cloud-restore and
// barman-cloud-wal-restore then make a fresh PostgreSQL of the archive at
// the target time, and the registry is started again on it, as an
// operator brings it back on a cluster bootstrapped from the backup. The
// restored registry must answer every create acknowledged before the
// target (read back through the gateway) and every read answered before
// it (sent again), and hold nothing begun after it; its log's latest
// checkpoint must verify and be consistent with the one taken before the
// target, and the events service's audit must find nothing. The times
// are printed, not asserted: the RTO (from the first restore command to
// the registry answering), the database's share of it, and the RPO the
// archive allowed at the loss.

// restoreDrill runs TestRestoreDrill alone, on a registry whose database
// archives its WAL.
var restoreDrill = flag.Bool("restore", false, "run the restore drill on a registry whose PostgreSQL archives to MinIO with Barman Cloud (TestRestoreDrill)")

// archiveTimeout bounds how long a written WAL segment waits before it is
// archived, and so what losing every instance may lose.
const archiveTimeout = 5 * time.Second

// backupBucket and backupServer are where the archive goes: the bucket
// and Barman's server name (the path inside it).
const (
	backupBucket = "backups"
	backupServer = "registry"
)

// drillRun is what the drill set up beside the stack.
var drillRun struct {
	dir      string
	suite    *devstack.Suite
	primary  *devinfra.Postgres
	s3       string   // the backup store's URL
	env      []string // the backup store's credentials, for the Barman tools
	restored []func() error
	report   []string
}

func runRestore(m *testing.M) int {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	fail := func(err error) int { fmt.Fprintln(os.Stderr, "restore drill:", err); return 1 }
	if _, err := exec.LookPath("barman-cloud-backup"); err != nil {
		return fail(errors.New("barman-cloud-backup is not on PATH: install Debian's barman-cli-cloud (make restore-drill does, as root)"))
	}
	dir, err := devinfra.MkdirTemp("restore-drill-")
	if err != nil {
		return fail(err)
	}
	defer devinfra.RemoveDir(dir)
	drillRun.dir = dir

	store, err := devinfra.StartMinio(ctx, devinfra.MinioOptions{DataDir: filepath.Join(dir, "backups")})
	if err != nil {
		return fail(err)
	}
	defer store.Stop()
	mc, err := minio.New(store.Endpoint, &minio.Options{Creds: credentials.NewStaticV4(store.AccessKey, store.SecretKey, "")})
	if err != nil {
		return fail(err)
	}
	if err := mc.MakeBucket(ctx, backupBucket, minio.MakeBucketOptions{Region: store.Region}); err != nil {
		return fail(err)
	}
	// The Barman tools find the store's credentials in a file only the
	// server's user reads; the archive and restore commands name it.
	awsFile := filepath.Join(dir, "backups.aws")
	content := fmt.Sprintf("[default]\naws_access_key_id = %s\naws_secret_access_key = %s\n", store.AccessKey, store.SecretKey)
	if err := os.WriteFile(awsFile, []byte(content), 0o600); err != nil {
		return fail(err)
	}
	if err := toPostgresUser(awsFile); err != nil {
		return fail(err)
	}
	drillRun.s3 = store.URL
	region := store.Region
	if region == "" {
		region = "us-east-1"
	}
	drillRun.env = []string{"AWS_SHARED_CREDENTIALS_FILE=" + awsFile, "AWS_DEFAULT_REGION=" + region}
	archive := strings.Join(drillRun.env, " ") + " barman-cloud-wal-archive --endpoint-url " + store.URL +
		" --gzip s3://" + backupBucket + " " + backupServer + " %p"
	primary, err := devinfra.StartPostgres(ctx, devinfra.PostgresOptions{
		DataDir: filepath.Join(dir, "postgres"),
		Settings: []string{"archive_mode=on", "archive_timeout=" + strconv.Itoa(int(archiveTimeout.Seconds())) + "s",
			"archive_command=" + archive},
	})
	if err != nil {
		return fail(err)
	}
	defer primary.Stop()
	drillRun.primary = primary

	suite, stop, err := devstack.StartSuite(ctx, "restore-drill", devstack.Options{
		PostgresURL: primary.URL, Database: "registry", Env: stackEnv(),
	})
	if err != nil {
		return fail(err)
	}
	defer func() {
		for i := len(drillRun.restored) - 1; i >= 0; i-- {
			if err := drillRun.restored[i](); err != nil {
				fmt.Fprintln(os.Stderr, "restore drill: stop the restored registry:", err)
			}
		}
		if err := stop(); err != nil {
			fmt.Fprintln(os.Stderr, "restore drill: stop stack:", err)
		}
	}()
	stack, creds, drillRun.suite = suite.Stack, suite.Creds, suite
	code := m.Run()
	for _, line := range drillRun.report {
		fmt.Println(line)
	}
	return code
}

// toPostgresUser gives path to the user PostgreSQL runs as (postgres,
// when the drill runs as root).
func toPostgresUser(path string) error {
	if os.Geteuid() != 0 {
		return nil
	}
	u, err := user.Lookup("postgres")
	if err != nil {
		return err
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	return os.Chown(path, uid, gid)
}

// barman runs a Barman Cloud command as PostgreSQL's user, with the
// backup store's credentials (and env), and returns its standard output.
func barman(ctx context.Context, env []string, name string, args ...string) ([]byte, error) {
	argv := append([]string{name}, args...)
	if os.Geteuid() == 0 {
		argv = append([]string{"runuser", "-u", "postgres", "--"}, argv...)
	}
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Env = append(append(os.Environ(), drillRun.env...), env...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("%s: %w: %s", name, err, stderr.String())
	}
	return out, nil
}

func drillSeconds() time.Duration {
	if s, err := strconv.Atoi(os.Getenv("DRILL_SECONDS")); err == nil && s > 0 {
		return time.Duration(s) * time.Second
	}
	return 15 * time.Second
}

func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	return strings.Join(strings.Fields(string(b))[:3], " ")
}

func TestRestoreDrill(t *testing.T) {
	if !*restoreDrill {
		t.Skip("needs -restore: make restore-drill")
	}
	ctx := t.Context()
	primary, half := drillRun.primary, drillSeconds()
	loadAtStart := loadAverage()
	c := newClient(t)
	l := newLoad(c, tag(90))
	stopLoad := l.run(loadClients, loadPause())
	time.Sleep(3 * time.Second) // every schema has rows before the base backup

	began := time.Now()
	_, err := barman(ctx, []string{"PGPASSWORD=" + primary.Password}, "barman-cloud-backup", "--endpoint-url", drillRun.s3,
		"--gzip", "--immediate-checkpoint", "-h", "127.0.0.1", "-p", strconv.Itoa(primary.Port), "-U", primary.User,
		"s3://"+backupBucket, backupServer)
	if err != nil {
		stopLoad()
		t.Fatal(err)
	}
	backupTook := time.Since(began)

	wal := watchWAL(t, stack.DatabaseURL)
	time.Sleep(half)
	before := latestCheckpoint(t)
	target := time.Now()
	time.Sleep(half)
	calls := stopLoad()
	stoppedAt := time.Now()
	// The archive lags the writes by what barman-cloud-wal-archive takes
	// a segment; what it had not taken when the writes stopped is what
	// losing every instance then would have lost. The drill lets it catch
	// up (the target must be in it) before the loss.
	caughtUp := wal.waitArchived(t, 3*time.Minute)
	samples := wal.stop()
	rpoAtStop, rpoWorst := archiveLag(samples, stoppedAt), time.Duration(0)
	for _, m := range samples {
		if !m.at.After(stoppedAt) {
			rpoWorst = max(rpoWorst, archiveLag(samples, m.at))
		}
	}
	atLoss := latestCheckpoint(t)
	var failedArchives int
	must(t, admin(t).QueryRow(ctx, `SELECT failed_count FROM pg_stat_archiver`).Scan(&failedArchives))
	// The loss: the server and its disks are gone; only the archive is left.
	must(t, primary.Kill())
	must(t, stack.Stop())

	began = time.Now()
	restored := restoreAt(t, target)
	dbBack := time.Since(began)
	// The registry comes back at its address (the gateway's, which is
	// the tokens' audience, and the identity provider's, their issuer).
	st, err := devstack.Start(ctx, devstack.Options{Dir: drillRun.suite.Dir, BinDir: drillRun.suite.Bin,
		PostgresURL: restored.URL, Database: "registry", Env: stackEnv(),
		Ports: devstack.Ports{catalog.Gateway.Name: portOf(t, stack.RegistryURL), catalog.IdentityProvider.Name: portOf(t, stack.AuthURL)}})
	if err != nil {
		t.Fatal(err)
	}
	drillRun.restored = append(drillRun.restored, st.Stop)
	cr, err := st.EnsureClients(ctx, filepath.Join(drillRun.suite.Dir, "registry.env"))
	if err != nil {
		t.Fatal(err)
	}
	stack, creds = st, cr
	rc := newClient(t)
	if !waitRecovered(t, rc, tag(91)) {
		t.Fatal("the restored registry does not answer a create, read, find and upload within 90 s")
	}
	rto := time.Since(began)

	// Every create acknowledged before the target, read back; every read
	// answered before it, sent again; nothing begun after it.
	var acked, later, reads []call
	for _, cl := range calls {
		switch done := cl.at.Add(cl.took); {
		case !cl.ok():
		case cl.create && done.Before(target):
			acked = append(acked, cl)
		case cl.create && cl.at.After(target):
			later = append(later, cl)
		case (cl.op == "read" || cl.op == "find") && done.Before(target):
			reads = append(reads, cl)
		}
	}
	lost := checkReadable(t, rc, acked)
	unread := 0
	for _, r := range reads {
		if got := rc.do(ctx, r.request); got.status != r.status {
			unread++
			t.Errorf("%s %s (%s) answered %d before the target, %d restored (%v)", r.method, r.path, r.op, r.status, got.status, got.err)
		}
	}
	kept := 0
	for _, cl := range later {
		if got := rc.do(ctx, request{method: "GET", path: itemPath(cl)}); got.status != 404 {
			kept++
			t.Errorf("%s %s (%s), begun after the target, reads %d restored", cl.method, cl.path, cl.id, got.status)
		}
	}

	// The log: its latest checkpoint verifies and extends the one taken
	// before the target; the events service's audit finds nothing.
	after := latestCheckpoint(t)
	if after.TreeSize < before.TreeSize {
		t.Errorf("the restored log has %d leaves, fewer than the %d signed before the target", after.TreeSize, before.TreeSize)
	} else if err := consistent(t, before, after); err != nil {
		t.Errorf("the restored log is not consistent with the checkpoint signed before the target: %v", err)
	}
	audit, err := auditLog(ctx)
	if err != nil {
		t.Errorf("events audit of the restored log: %v\n%s", err, audit)
	}
	fork := "consistent with it"
	if err := consistent(t, atLoss, after); err != nil {
		fork = "NOT consistent with it (" + err.Error() + ")"
	}

	drillRun.report = append(drillRun.report,
		"",
		fmt.Sprintf("restore drill: %d calls through the gateway to all five services (%d creates acknowledged, %d before the target), %s either side of the target", len(calls), countCreates(calls), len(acked), half),
		fmt.Sprintf("  base backup (barman-cloud-backup, under the load):   %s", backupTook.Round(100*time.Millisecond)),
		fmt.Sprintf("  restored to %s (recovery_target_time):", target.UTC().Format("15:04:05.000")),
		fmt.Sprintf("    acknowledged creates missing: %d of %d; reads answered before it and not again: %d of %d; creates begun after it present: %d of %d",
			lost, len(acked), unread, len(reads), kept, len(later)),
		fmt.Sprintf("    log: %d leaves restored, checkpoint of %d leaves before the target verified and consistent; events audit: %s", after.TreeSize, before.TreeSize, strings.TrimSpace(firstLine(audit))),
		fmt.Sprintf("    the checkpoint signed at the loss (%d leaves) is %s", atLoss.TreeSize, fork),
		fmt.Sprintf("  RTO: %s to the registry answering again (PostgreSQL restored, replayed and promoted after %s)", rto.Round(100*time.Millisecond), dbBack.Round(100*time.Millisecond)),
		fmt.Sprintf("  RPO: the archive held the WAL of every write but those of the last %s when the writes stopped, %s at worst during them (archive_timeout %s; %d failed archive attempts; it caught up %s after the writes stopped)",
			rpoAtStop.Round(100*time.Millisecond), rpoWorst.Round(100*time.Millisecond), archiveTimeout, failedArchives, caughtUp.Round(100*time.Millisecond)),
		fmt.Sprintf("  load average %s at the start, %s at the end", loadAtStart, loadAverage()))
}

func portOf(t *testing.T, raw string) int {
	u, err := url.Parse(raw)
	must(t, err)
	port, err := strconv.Atoi(u.Port())
	must(t, err)
	return port
}

func countCreates(calls []call) int {
	n := 0
	for _, c := range calls {
		if c.create && c.ok() {
			n++
		}
	}
	return n
}

func firstLine(s string) string { line, _, _ := strings.Cut(s, "\n"); return line }

// walWatch samples how far the server has written its WAL and how far it
// has archived it, while the load writes.
type walWatch struct {
	done    chan struct{}
	stopped chan []walSample
	url     string
}

// walSample is one look: the WAL written (an LSN, as bytes) and the end of
// the newest segment archived.
type walSample struct {
	at                time.Time
	written, archived int64
}

func watchWAL(t *testing.T, url string) *walWatch {
	w := &walWatch{done: make(chan struct{}), stopped: make(chan []walSample, 1), url: url}
	conn, err := pgx.Connect(t.Context(), url)
	must(t, err)
	go func() {
		defer conn.Close(context.Background())
		var samples []walSample
		for {
			if m, err := sampleWAL(context.Background(), conn); err == nil {
				samples = append(samples, m)
			}
			select {
			case <-w.done:
				w.stopped <- samples
				return
			case <-time.After(200 * time.Millisecond):
			}
		}
	}()
	return w
}

func (w *walWatch) stop() []walSample {
	close(w.done)
	return <-w.stopped
}

func sampleWAL(ctx context.Context, conn *pgx.Conn) (walSample, error) {
	var (
		written, segment int64
		last             string
	)
	err := conn.QueryRow(ctx, `SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), '0/0')::bigint,
		(SELECT setting::bigint FROM pg_settings WHERE name = 'wal_segment_size'),
		coalesce((SELECT last_archived_wal FROM pg_stat_archiver), '')`).Scan(&written, &segment, &last)
	return walSample{at: time.Now(), written: written, archived: segmentEnd(last, segment)}, err
}

// segmentEnd is the LSN (as bytes) where the WAL file named name ends:
// its name is the timeline, then the LSN's high 32 bits, then the
// segment's number within them. 0 for none, or for a history or backup
// file's name.
func segmentEnd(name string, segment int64) int64 {
	if len(name) != 24 || segment <= 0 {
		return 0
	}
	high, err1 := strconv.ParseInt(name[8:16], 16, 64)
	low, err2 := strconv.ParseInt(name[16:24], 16, 64)
	if err1 != nil || err2 != nil {
		return 0
	}
	return high<<32 + (low+1)*segment
}

// waitArchived waits until the archive holds all the WAL written when it
// was called, and returns how long that took.
func (w *walWatch) waitArchived(t *testing.T, limit time.Duration) time.Duration {
	began := time.Now()
	conn, err := pgx.Connect(t.Context(), w.url)
	must(t, err)
	defer conn.Close(context.Background())
	first, err := sampleWAL(t.Context(), conn)
	must(t, err)
	testkit.Eventually(t, "the archive holding the WAL written until the writes stopped", limit, func() bool {
		m, err := sampleWAL(t.Context(), conn)
		return err == nil && m.archived >= first.written
	})
	return time.Since(began)
}

// archiveLag is what the archive lacked at moment: the time since the
// first write whose WAL lay beyond the archive's end then (to the
// sampling's 200 ms).
func archiveLag(samples []walSample, moment time.Time) time.Duration {
	var end int64 = -1
	for _, m := range samples {
		if !m.at.After(moment) {
			end = m.archived
		}
	}
	if end < 0 {
		return 0
	}
	for _, m := range samples {
		if m.written > end {
			if m.at.After(moment) {
				return 0
			}
			return moment.Sub(m.at)
		}
	}
	return 0
}

// restoreAt makes a fresh PostgreSQL from the latest base backup and the
// archived WAL up to target, promoted, as the postgres user.
func restoreAt(t *testing.T, target time.Time) *devinfra.Postgres {
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Minute)
	defer cancel()
	out, err := barman(ctx, nil, "barman-cloud-backup-list", "--endpoint-url", drillRun.s3, "--format", "json",
		"s3://"+backupBucket, backupServer)
	must(t, err)
	var list struct {
		Backups []struct {
			ID string `json:"backup_id"`
		} `json:"backups_list"`
	}
	if err := json.Unmarshal(out, &list); err != nil || len(list.Backups) == 0 {
		t.Fatalf("barman-cloud-backup-list: no backup (%v): %s", err, out)
	}
	data := filepath.Join(drillRun.dir, "restored")
	must(t, os.Mkdir(data, 0o700))
	must(t, toPostgresUser(data))
	_, err = barman(ctx, nil, "barman-cloud-restore", "--endpoint-url", drillRun.s3, "s3://"+backupBucket, backupServer,
		list.Backups[len(list.Backups)-1].ID, data)
	must(t, err)
	signal := filepath.Join(data, "recovery.signal")
	must(t, os.WriteFile(signal, nil, 0o600))
	must(t, toPostgresUser(signal))
	fetch := strings.Join(drillRun.env, " ") + " barman-cloud-wal-restore --endpoint-url " + drillRun.s3 +
		" s3://" + backupBucket + " " + backupServer + " %f %p"
	pg, err := devinfra.StartPostgres(ctx, devinfra.PostgresOptions{
		DataDir: data, CredentialsFile: drillRun.primary.CredentialsFile,
		Settings: []string{"restore_command=" + fetch, "recovery_target_time=" + target.UTC().Format("2006-01-02 15:04:05.000000+00"),
			"recovery_target_action=promote"},
	})
	must(t, err)
	drillRun.restored = append(drillRun.restored, pg.Stop)
	// Connections are refused until the replay is consistent, and may
	// be cut when the server ends recovery: each poll connects anew.
	deadline := time.Now().Add(5 * time.Minute)
	for {
		var recovering bool
		conn, err := pgx.Connect(ctx, pg.URL)
		if err == nil {
			err = conn.QueryRow(ctx, `SELECT pg_is_in_recovery()`).Scan(&recovering)
			conn.Close(context.Background())
		}
		if err == nil && !recovering {
			return pg
		}
		if time.Now().After(deadline) {
			log, _ := os.ReadFile(pg.LogFile)
			t.Fatalf("the restored server was not promoted within 5 minutes (%v); its log ends:\n%s", err, tail(string(log), 20))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// tail is the last n lines of s.
func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// logClient is an SDK client of the stack as it is now.
func logClient(t *testing.T) *registry.Client {
	t.Helper()
	c, err := registry.New(registry.Config{URL: creds.RegistryURL, AuthURL: creds.AuthURL, Resource: creds.Resource,
		ClientID: creds.ClientID, ClientSecret: creds.ClientSecret})
	must(t, err)
	return c
}

// latestCheckpoint is the log's newest checkpoint, verified with the keys
// the registry publishes (as registry checkpoint does).
func latestCheckpoint(t *testing.T) registry.Checkpoint {
	t.Helper()
	c := logClient(t)
	keys, err := c.LogKeys(t.Context())
	must(t, err)
	latest, err := c.LatestCheckpoint(t.Context())
	must(t, err)
	cp, err := registry.VerifyCheckpoint(latest.Note, keys.Keys...)
	must(t, err)
	return cp
}

// consistent proves the log of newer holds older's leaves unchanged.
func consistent(t *testing.T, older, newer registry.Checkpoint) error {
	if older.TreeSize > newer.TreeSize {
		return fmt.Errorf("%d leaves signed, %d now", older.TreeSize, newer.TreeSize)
	}
	if older.TreeSize == newer.TreeSize {
		if string(older.RootHash) != string(newer.RootHash) {
			return errors.New("same size, another root")
		}
		return nil
	}
	p, err := logClient(t).Consistency(t.Context(), older.TreeSize, newer.TreeSize)
	if err != nil {
		return err
	}
	return registry.VerifyConsistency(older, newer, *p)
}

// auditLog runs the events service's audit (events audit) with the
// running service's settings and returns what it printed.
func auditLog(ctx context.Context) (string, error) {
	running := stack.Processes["events"].Command()
	cmd := exec.CommandContext(ctx, running.Path, "audit")
	cmd.Env = running.Env
	out, err := cmd.CombinedOutput()
	return string(out), err
}
