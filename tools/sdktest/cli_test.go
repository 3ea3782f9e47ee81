package sdktest

import (
	"bytes"
	"context"
	"encoding/csv"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/assetregistry/registry/pkg/catalog"
	registry "github.com/assetregistry/registry/sdk"
)

// cli runs the registry command with the suite's credentials in the
// environment (and no env file), in dir.
func cli(t *testing.T, dir string, env []string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	cmd := exec.Command(cliBin, args...)
	cmd.Dir = dir
	cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + dir}, credentialsEnv()...)
	cmd.Env = append(cmd.Env, env...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		code = exit.ExitCode()
	case err != nil:
		t.Fatal(err)
	}
	return out.String(), errOut.String(), code
}

func credentialsEnv() []string {
	c := suite.Creds
	return []string{"REGISTRY_URL=" + c.RegistryURL, "AUTH_URL=" + c.AuthURL, "RESOURCE=" + c.Resource,
		"CLIENT_ID=" + c.ClientID, "CLIENT_SECRET=" + c.ClientSecret}
}

// writeRows writes n import rows as CSV: a few organizations and people
// shared by many rows, a new asset per row, an action per row tagged with
// source_system (and no source_reference, so only Idempotency-Keys keep a
// replay from recording an action twice), and a report file on a quarter.
func writeRows(t *testing.T, dir, tag string, n int) string {
	t.Helper()
	return writeRowsWith(t, dir, tag, n, nil)
}

// writeRowsWith is writeRows with a reference column: reference(i) for
// row i+1.
func writeRowsWith(t *testing.T, dir, tag string, n int, reference func(i int) string) string {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, "report.txt"), bytes.Repeat([]byte("inspection report\n"), 200), 0o644); err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	w := csv.NewWriter(&b)
	_ = w.Write([]string{"organization_name", "organization_registration_number", "organization_type", "organization_country",
		"person_first_name", "person_last_name", "asset_type_brand", "asset_type_model", "asset_serial_number",
		"action_type", "performed_at", "status_ok", "source_system", "document_file", "reference"})
	for i := range n {
		doc := ""
		if i%4 == 0 {
			doc = "report.txt"
		}
		ref := ""
		if reference != nil {
			ref = reference(i)
		}
		_ = w.Write([]string{"Org " + tag, fmt.Sprintf("%s-%d", tag, i%5), "private", "no",
			"Kari", fmt.Sprintf("Nordmann%s%d", tag, i%7), "Brand" + tag, "M1", fmt.Sprintf("%s-SN-%04d", tag, i),
			"expert_control", "2025-03-14", "true", tag, doc, ref})
	}
	w.Flush()
	path := filepath.Join(dir, "rows.csv")
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// writeSourcedRows is writeRows with each action's sync key:
// source_system tag and source_reference r<row>.
func writeSourcedRows(t *testing.T, dir, tag string, n int) string {
	t.Helper()
	path := writeRowsWith(t, dir, tag, n, nil)
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	records, err := csv.NewReader(bytes.NewReader(raw)).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	w := csv.NewWriter(&b)
	for i, r := range records {
		ref := "source_reference"
		if i > 0 {
			ref = fmt.Sprintf("r%04d", i)
		}
		_ = w.Write(append(r, ref))
	}
	w.Flush()
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// expireIdempotencyKeys forgets every Idempotency-Key the registry holds
// for client, as 24 hours would. Keys are scoped to their client, so the
// other tests' keys (and their requests in flight) stay.
func expireIdempotencyKeys(t *testing.T, client string) {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, suite.DatabaseURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var forgotten int64
	for _, s := range catalog.Services {
		if s.NeedsStore(catalog.Postgres) {
			tag, err := conn.Exec(ctx, "DELETE FROM "+pgx.Identifier{s.Name, "idempotency_keys"}.Sanitize()+" WHERE client = $1", client)
			if err != nil {
				t.Fatal(err)
			}
			forgotten += tag.RowsAffected()
		}
	}
	// None forgotten: the keys are not the client's, and nothing expired.
	if forgotten == 0 {
		t.Fatalf("no Idempotency-Key of %s to forget", client)
	}
}

// The sync key: an import run again a month later, when every
// Idempotency-Key of the first run has expired and its journal is gone,
// records nothing twice, each row's action found by its (source_system,
// source_reference). The first run dies at the worst moment, in the middle
// of a batch (its actions recorded, its journal line not written), and the
// runs after it cut the rows into other batches. The import runs as a
// client of its own, so that only its keys expire.
func TestImportAgainAfterKeysExpired(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	tag := fmt.Sprintf("month%d", time.Now().UnixNano()%1e9)
	const rows = 60
	path := writeSourcedRows(t, dir, tag, rows)
	cr := suite.Creds
	importer := []string{"CLIENT_ID=" + cr.OtherClientID, "CLIENT_SECRET=" + cr.OtherClientSecret}
	_, stderr, code := cli(t, dir, append(importer, "REGISTRY_IMPORT_FAILPOINT=answered"), "import", "-quiet", "-batch", "20", "-batches", "2", path)
	if code != -1 {
		t.Fatalf("the first import was not killed: exit %d, %s", code, stderr)
	}
	for run, batch := range []string{"7", "50"} {
		expireIdempotencyKeys(t, cr.OtherClientID)
		if err := os.Remove(path + ".journal"); err != nil {
			t.Fatal(err)
		}
		if _, stderr, code := cli(t, dir, importer, "import", "-quiet", "-batch", batch, path); code != 0 {
			t.Fatalf("import %d after the keys expired: exit %d, %s", run+2, code, stderr)
		}
		countActions(t, tag, rows)
	}
}

// countActions checks the registry: n actions tagged tag, one per asset,
// and one action document on each row that had a file.
func countActions(t *testing.T, tag string, n int) {
	t.Helper()
	countActionsDocs(t, tag, n, (n+3)/4)
}

func countActionsDocs(t *testing.T, tag string, n, docs int) {
	t.Helper()
	ctx := context.Background()
	c := newClient(t, http.DefaultTransport)
	perAsset := map[string]int{}
	withDocs := 0
	for a, err := range c.ListActions(ctx, registry.Filter{"source_system": tag, "limit": "1000"}) {
		if err != nil {
			t.Fatal(err)
		}
		perAsset[a.AssetID]++
		if perAsset[a.AssetID] > 1 {
			t.Errorf("asset %s has %d actions: a row was recorded twice", a.AssetID, perAsset[a.AssetID])
		}
		full, err := c.GetAction(ctx, a.ID)
		if err != nil {
			t.Fatal(err)
		}
		if len(full.ActionDocuments) > 1 {
			t.Errorf("action %s has %d action documents, want at most 1", a.ID, len(full.ActionDocuments))
		}
		withDocs += len(full.ActionDocuments)
	}
	if len(perAsset) != n {
		t.Errorf("%d assets with a %s action, want %d", len(perAsset), tag, n)
	}
	if withDocs != docs {
		t.Errorf("%d action documents, want %d", withDocs, docs)
	}
}

// An import killed (SIGKILL) at random moments and started again until it
// ends records every row exactly once.
func TestImportKilledAndResumed(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	tag := fmt.Sprintf("kill%d", time.Now().UnixNano()%1e9)
	const rows = 240
	path := writeRows(t, dir, tag, rows)
	kills := 0
	for attempt := 0; ; attempt++ {
		if attempt > 40 {
			t.Fatal("the import did not finish in 40 runs")
		}
		// Small batches, so that a kill finds batches and documents under way.
		cmd := exec.Command(cliBin, "import", "-quiet", "-workers", "8", "-batch", "20", path)
		cmd.Dir = dir
		cmd.Env = append([]string{"PATH=" + os.Getenv("PATH")}, credentialsEnv()...)
		var errOut bytes.Buffer
		cmd.Stderr = &errOut
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		var err error
		if kills < 4 {
			select {
			case err = <-done:
			// A whole run takes under a second here: kill well within it.
			case <-time.After(time.Duration(30+rand.IntN(300)) * time.Millisecond):
				_ = cmd.Process.Signal(syscall.SIGKILL)
				<-done
				kills++
				continue
			}
		} else {
			err = <-done
		}
		if err != nil {
			t.Fatalf("import run %d: %v: %s", attempt, err, errOut.String())
		}
		break
	}
	if kills == 0 {
		t.Log("the import finished before the first kill; nothing was resumed")
	}
	t.Logf("%d kills", kills)
	countActions(t, tag, rows)
	_, stderr, code := cli(t, dir, nil, "import", "-quiet", path)
	if code != 0 || !strings.Contains(stderr, fmt.Sprintf("0 rows recorded, %d already done", rows)) {
		t.Errorf("a run after the end: exit %d, %s", code, stderr)
	}
}

// An import killed where a crash is worst, in the middle of a batch (its
// actions recorded, its journal line not yet written, or written half),
// and started again records every row once: the batch is sent again with
// the same rows and Idempotency-Key, and the registry replays its answer.
func TestImportKilledMidBatch(t *testing.T) {
	t.Parallel()
	for _, point := range []string{"answered", "torn"} {
		t.Run(point, func(t *testing.T) {
			dir := t.TempDir()
			tag := fmt.Sprintf("mid%s%d", point, time.Now().UnixNano()%1e9)
			const rows = 90
			path := writeRows(t, dir, tag, rows)
			_, stderr, code := cli(t, dir, []string{"REGISTRY_IMPORT_FAILPOINT=" + point}, "import", "-quiet", "-batch", "20", "-batches", "2", path)
			if code != -1 {
				t.Fatalf("the import with failpoint %s was not killed: exit %d, %s", point, code, stderr)
			}
			journal, err := os.ReadFile(path + ".journal")
			if err != nil {
				t.Fatal(err)
			}
			if point == "torn" && strings.HasSuffix(string(journal), "\n") {
				t.Fatalf("the journal ends with a whole line; the failpoint did not tear it:\n%s", journal)
			}
			// A different -batch on the resumed run: the journal's size holds.
			_, stderr, code = cli(t, dir, nil, "import", "-quiet", "-batch", "7", path)
			if code != 0 {
				t.Fatalf("the resumed import: exit %d, %s", code, stderr)
			}
			countActions(t, tag, rows)
		})
	}
}

// A batch with one row the registry refuses (a reference longer than it
// takes, which the command does not check itself): that row is reported
// with its row number and field, the others land, and a run again tries
// only that row.
func TestImportBadRowInBatch(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	tag := fmt.Sprintf("badrow%d", time.Now().UnixNano()%1e9)
	const rows, bad = 30, 7
	path := writeRowsWith(t, dir, tag, rows, func(i int) string {
		if i+1 == bad {
			return strings.Repeat("r", 500)
		}
		return ""
	})
	errorsFile := filepath.Join(dir, "problems.csv")
	_, stderr, code := cli(t, dir, nil, "import", "-quiet", "-batch", "10", "-errors", errorsFile, path)
	if code != 1 {
		t.Errorf("exit %d, want 1 (a row failed); stderr:\n%s", code, stderr)
	}
	if !strings.Contains(stderr, fmt.Sprintf("row %d: reference:", bad)) || !strings.Contains(stderr, fmt.Sprintf("%d rows recorded, 0 already done", rows-1)) {
		t.Errorf("stderr does not name row %d's reference or the count:\n%s", bad, stderr)
	}
	report, err := os.ReadFile(errorsFile)
	if err != nil {
		t.Fatal(err)
	}
	if lines := strings.Split(strings.TrimSpace(string(report)), "\n"); len(lines) != 2 || !strings.HasPrefix(lines[1], fmt.Sprintf("%d,reference,", bad)) {
		t.Errorf("the error report:\n%s", report)
	}
	countActionsDocs(t, tag, rows-1, (rows+3)/4) // row 7 has no document (every fourth from row 1 has)
	_, stderr, code = cli(t, dir, nil, "import", "-quiet", "-batch", "10", path)
	if code != 1 || !strings.Contains(stderr, fmt.Sprintf("0 rows recorded, %d already done", rows-1)) || !strings.Contains(stderr, fmt.Sprintf("row %d: reference:", bad)) {
		t.Errorf("a run again: exit %d, %s", code, stderr)
	}
	countActionsDocs(t, tag, rows-1, (rows+3)/4)
}

// What export writes as rows imports again: into the same registry every
// part is found (actions by source_system and source_reference), nothing
// is created twice, and the rows exported again are the same. Values that
// a spreadsheet would run as formulas are exported marked as text and
// imported as they were: the second action's source_reference starts with
// =, so an import that kept the mark would not find it and record it again.
func TestExportImportRoundTrip(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	tag := fmt.Sprintf("trip%d", time.Now().UnixNano()%1e9)
	var b strings.Builder
	b.WriteString(`{"organization_name":"Trip AS","organization_registration_number":"` + tag + `","organization_type":"private","organization_country":"no","person_first_name":"Ola","person_last_name":"` + tag + `","relation_type":"inspector","asset_type_brand":"B` + tag + `","asset_type_model":"M","asset_serial_number":"S1","action_type":"maintenance","performed_at":"2025-01-02","status_ok":true,"source_system":"` + tag + `","source_reference":"r1","reference":"@SUM(A1:A2)","data":{"k":1}}` + "\n")
	b.WriteString(`{"asset_type_brand":"B` + tag + `","asset_type_model":"M","asset_type_version":"2","asset_serial_number":"S2","action_type":"repair","performed_at":"2025-01-03","source_system":"` + tag + `","source_reference":"=HYPERLINK(\"https://evil.example\")","status":"-1+2"}` + "\n")
	in := filepath.Join(dir, "in.ndjson")
	if err := os.WriteFile(in, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, stderr, code := cli(t, dir, nil, "import", "-quiet", in); code != 0 {
		t.Fatalf("import: %d %s", code, stderr)
	}
	export := func(name string) string {
		out, stderr, code := cli(t, dir, nil, "export", "rows", "-format", "csv", "-filter", "source_system="+tag, "-o", name)
		if code != 0 {
			t.Fatalf("export: %d %s %s", code, out, stderr)
		}
		raw, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		return string(raw)
	}
	first := export("first.csv")
	if strings.Count(first, "\n") != 3 || !strings.Contains(first, "inspector") || !strings.Contains(first, `"{""k"":1}"`) ||
		!strings.Contains(first, `"'=HYPERLINK(""https://evil.example"")"`) || !strings.Contains(first, ",'@SUM(A1:A2),") ||
		!strings.Contains(first, ",'-1+2,") {
		t.Errorf("exported rows:\n%s", first)
	}
	if _, stderr, code := cli(t, dir, nil, "import", "-quiet", filepath.Join(dir, "first.csv")); code != 0 {
		t.Fatalf("import of the export: %d %s", code, stderr)
	}
	if second := export("second.csv"); second != first {
		t.Errorf("the rows changed by a round trip:\n%s\nthen\n%s", first, second)
	}
	n := 0
	for _, err := range newClient(t, http.DefaultTransport).ListActions(context.Background(), registry.Filter{"source_system": tag}) {
		if err != nil {
			t.Fatal(err)
		}
		n++
	}
	if n != 2 {
		t.Errorf("%d actions after the round trip, want 2", n)
	}
}

// Bad input is one line naming the row or the setting; never a stack
// trace; exit 2 for settings and usage, 1 for rows that failed.
func TestCLIBadInput(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	header := "asset_type_brand,asset_type_model,asset_serial_number,action_type,performed_at\n"
	good := write("good.csv", header+"B,M,S,expert_control,2025-01-01\n")
	for _, tc := range []struct {
		name  string
		env   []string
		args  []string
		code  int
		lines int // lines of stderr; 0: any
		want  string
	}{
		{"missing file", nil, []string{"import", "-quiet", filepath.Join(dir, "nope.csv")}, 2, 1, "no such file"},
		{"unknown column", nil, []string{"import", "-quiet", write("col.csv", "asset_serial_number,colour\nS,red\n")}, 2, 1, `unknown column "colour"`},
		{"malformed line", nil, []string{"import", "-dry-run", write("bad.csv", header+"B,M,S,expert_control,2025-01-01\n\"B,M\n")}, 1, 0, "row 2: malformed CSV"},
		{"field problems", nil, []string{"import", "-dry-run", write("fields.csv", header+"B,M,S,inspection,2025-02-30\n")}, 1, 0, "row 1: action_type: must be one of"},
		{"not a date", nil, []string{"import", "-dry-run", write("date.csv", header+"B,M,S,repair,2025-02-30\n")}, 1, 0, "row 1: performed_at: not a date"},
		{"dry run of good rows", nil, []string{"import", "-dry-run", good}, 0, 0, "1 rows checked, 0 with problems"},
		{"a document outside the import's folder", nil, []string{"import", "-dry-run", write("abs.csv", header[:len(header)-1]+",document_file\nB,M,S,repair,2025-01-01,"+good+"\n")},
			1, 0, "row 1: document_file: \"" + good + "\" is an absolute path"},
		{"a document above the import's folder", nil, []string{"import", "-dry-run", write("up.csv", header[:len(header)-1]+",document_file\nB,M,S,repair,2025-01-01,../x.pdf\n")},
			1, 0, "row 1: document_file: \"../x.pdf\" leaves the documents folder"},
		{"wrong secret", []string{"CLIENT_SECRET=wrong"}, []string{"import", "-quiet", good}, 1, 1, "refused CLIENT_ID/CLIENT_SECRET"},
		// Two tries, not the default eight: the message is the same, without half a minute of waiting.
		{"unreachable registry", []string{"REGISTRY_URL=http://127.0.0.1:1", "ATTEMPTS=2"}, []string{"organizations", "list"}, 1, 1, "cannot reach the registry at REGISTRY_URL http://127.0.0.1:1"},
		{"no attempts", []string{"ATTEMPTS=0"}, []string{"organizations", "list"}, 2, 1, "-attempts 0: must be at least 1"},
		{"no registry URL", []string{"REGISTRY_URL="}, []string{"organizations", "list"}, 2, 1, "REGISTRY_URL"},
		{"bad output", nil, []string{"organizations", "list", "-output", "xml"}, 2, 1, `-output "xml"`},
		{"unknown command", nil, []string{"teleport"}, 2, 0, ""},
		{"not found", nil, []string{"assets", "get", "01890000-0000-7000-8000-000000000000"}, 1, 1, "404"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, stderr, code := cli(t, dir, tc.env, tc.args...)
			if code != tc.code {
				t.Errorf("exit %d, want %d; stderr:\n%s", code, tc.code, stderr)
			}
			if !strings.Contains(stderr, tc.want) {
				t.Errorf("stderr %q does not say %q", stderr, tc.want)
			}
			if lines := strings.Count(strings.TrimRight(stderr, "\n"), "\n") + 1; tc.lines > 0 && lines != tc.lines {
				t.Errorf("%d lines on stderr, want %d:\n%s", lines, tc.lines, stderr)
			}
			if strings.Contains(stderr, "goroutine ") || strings.Contains(stderr, "panic") {
				t.Errorf("a stack trace:\n%s", stderr)
			}
		})
	}
}

// Every collection lists as a table and as JSON.
func TestCLIOutputs(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for _, col := range []string{"organizations", "people", "asset_types", "assets", "actions"} {
		out, stderr, code := cli(t, dir, nil, col, "list", "-limit", "3", "-output", "table")
		if code != 0 || !strings.HasPrefix(out, "ID") {
			t.Errorf("%s list -output table: %d %q %s", col, code, out, stderr)
		}
		out, _, code = cli(t, dir, nil, col, "list", "-limit", "3")
		if code != 0 || !strings.HasPrefix(out, "[") {
			t.Errorf("%s list: %d %q", col, code, out)
		}
	}
}
