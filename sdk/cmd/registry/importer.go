package main

import (
	"context"
	"crypto/sha256"
	"encoding/csv"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"

	"github.com/peterbourgon/ff/v3/ffcli"
	"github.com/schollz/progressbar/v3"

	registry "github.com/assetregistry/registry/sdk"
)

var errRowsFailed = errors.New("some rows failed")

type importOptions struct {
	format, journal, errorsFile string
	dryRun, quiet               bool
	workers                     int
}

func (a *app) importCommand() *ffcli.Command {
	var o importOptions
	return a.command("import", "import FILE [-dry-run] [-workers N] [-journal PATH] [-errors PATH]",
		"record rows of the flow (organization, person, link, asset type, asset, action, document, action document) from CSV or NDJSON", 1, 1,
		func(fs *flag.FlagSet) {
			fs.StringVar(&o.format, "format", "", "csv or ndjson (default: from the file's extension)")
			fs.BoolVar(&o.dryRun, "dry-run", false, "check every row without writing anything")
			fs.IntVar(&o.workers, "workers", 16, "rows in flight at once")
			fs.StringVar(&o.journal, "journal", "", "the file recording finished rows (default: FILE.journal)")
			fs.StringVar(&o.errorsFile, "errors", "", "write the per-row error report (CSV: row,field,problem) here")
			fs.BoolVar(&o.quiet, "quiet", false, "no progress bar")
		},
		func(ctx context.Context, args []string) error { return a.runImport(ctx, args[0], o) })
}

// importer records rows; the parts rows share (organizations, people,
// links, asset types) are found or created once per run.
type importer struct {
	c       *registry.Client
	keyBase string // Idempotency-Keys: keyBase + row + step
	baseDir string
	orgs    onceMap[string, string]
	people  onceMap[string, string]
	links   onceMap[string, string]
	types   onceMap[string, string]
}

func (a *app) runImport(ctx context.Context, path string, o importOptions) error {
	format, err := formatOf(path, o.format)
	if err != nil {
		return err
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return usageError{oneLine(err)}
	}
	total := 0
	if err := readRows(abs, format, func(row) bool { total++; return true }); err != nil {
		return err
	}
	report, err := newReport(a.stderr, o.errorsFile)
	if err != nil {
		return err
	}
	baseDir := filepath.Dir(abs)
	if o.dryRun {
		failed := 0
		err := readRows(abs, format, func(r row) bool {
			errs := validate(r, baseDir)
			if r.err != nil {
				errs = []rowError{*r.err}
			}
			report.add(errs...)
			if len(errs) > 0 {
				failed++
			}
			return true
		})
		if err != nil {
			return err
		}
		fmt.Fprintf(a.stderr, "dry run: %d rows checked, %d with problems; nothing written\n", total, failed)
		return report.finish(failed)
	}
	c, err := a.settings.client()
	if err != nil {
		return err
	}
	// One call before the rows: a wrong secret or an unreachable registry
	// is one message, not one per row.
	for _, err := range c.ListOrganizations(ctx, registry.Filter{"limit": "1"}) {
		if err != nil {
			return err
		}
		break
	}
	if o.journal == "" {
		o.journal = abs + ".journal"
	}
	j, err := openJournal(o.journal, abs)
	if err != nil {
		return err
	}
	sum := sha256.Sum256([]byte(abs))
	im := &importer{c: c, keyBase: "import-" + hex.EncodeToString(sum[:8]) + "-", baseDir: baseDir}
	var bar *progressbar.ProgressBar
	if !o.quiet {
		bar = progressbar.NewOptions(total, progressbar.OptionSetWriter(a.stderr), progressbar.OptionSetDescription("importing"),
			progressbar.OptionShowCount(), progressbar.OptionShowIts(), progressbar.OptionSetItsString("rows"),
			progressbar.OptionSetPredictTime(true), progressbar.OptionThrottle(200_000_000), progressbar.OptionClearOnFinish())
	}
	type result struct {
		n    int
		errs []rowError
	}
	jobs := make(chan row, o.workers*2)
	results := make(chan result, o.workers*2)
	var wg sync.WaitGroup
	for range max(o.workers, 1) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for r := range jobs {
				errs := validate(r, baseDir)
				if r.err != nil {
					errs = []rowError{*r.err}
				}
				if len(errs) == 0 {
					errs = im.record(ctx, r)
				}
				results <- result{r.n, errs}
			}
		}()
	}
	skipped := 0
	readErr := make(chan error, 1)
	go func() {
		defer close(jobs)
		readErr <- readRows(abs, format, func(r row) bool {
			if j.isDone(r.n) {
				skipped++
				return true
			}
			select {
			case jobs <- r:
				return true
			case <-ctx.Done():
				return false
			}
		})
	}()
	go func() { wg.Wait(); close(results) }()
	if bar != nil {
		_ = bar.Add(0)
	}
	done, failed := 0, 0
	var journalErr error
	for res := range results {
		switch {
		case len(res.errs) > 0:
			failed++
			report.add(res.errs...)
		case ctx.Err() == nil:
			if err := j.record(res.n); err != nil && journalErr == nil {
				journalErr = err
			}
			done++
		}
		if bar != nil {
			_ = bar.Add(1)
		}
	}
	if bar != nil {
		_ = bar.Finish()
	}
	if err := j.close(); err != nil && journalErr == nil {
		journalErr = err
	}
	if err := <-readErr; err != nil {
		return err
	}
	if journalErr != nil {
		return fmt.Errorf("the journal %s: %w", o.journal, journalErr)
	}
	if ctx.Err() != nil {
		fmt.Fprintf(a.stderr, "stopped: %d rows recorded now, %d earlier; run the same command again to go on\n", done, skipped+0)
		return usageError{"stopped before the end"}
	}
	fmt.Fprintf(a.stderr, "%d rows recorded, %d already done earlier (journal %s), %d failed\n", done, skipped, o.journal, failed)
	return report.finish(failed)
}

// record writes one row's parts in the flow's order; a part that fails
// stops the row (what follows depends on it).
func (im *importer) record(ctx context.Context, r row) []rowError {
	key := func(step string) registry.CallOption {
		return registry.IdempotencyKey(im.keyBase + strconv.Itoa(r.n) + "-" + step)
	}
	fail := func(prefix string, err error) []rowError { return problemErrors(r.n, prefix, err) }

	var orgID, personID string
	var err error
	if r.get("organization_registration_number") != "" {
		in := registry.OrganizationInput{Name: r.get("organization_name"), RegistrationNumber: r.get("organization_registration_number"),
			OrganizationType: r.get("organization_type"), Country: strings.ToLower(r.get("organization_country"))}
		orgID, err = im.orgs.do(strings.ToLower(in.RegistrationNumber+"\x00"+in.Country), func() (string, error) {
			o, _, err := im.c.FindOrCreateOrganization(ctx, in, key("organization"))
			if err != nil {
				return "", err
			}
			return o.ID, nil
		})
		if err != nil {
			return fail("organization_", err)
		}
	}
	if r.get("person_first_name") != "" {
		in := registry.PersonInput{FirstName: r.get("person_first_name"), LastName: r.get("person_last_name"), DateOfBirth: r.get("person_date_of_birth")}
		personID, err = im.people.do(strings.ToLower(in.FirstName+"\x00"+in.LastName+"\x00"+in.DateOfBirth), func() (string, error) {
			p, _, err := im.c.FindPerson(ctx, in, true)
			if err != nil {
				return "", err
			}
			return p.ID, nil
		})
		if err != nil {
			return fail("person_", err)
		}
	}
	if orgID != "" && personID != "" {
		relation := r.get("relation_type")
		if relation == "" {
			relation = "employee"
		}
		if _, err := im.links.do(personID+orgID+relation, func() (string, error) {
			_, err := im.c.LinkPerson(ctx, personID, orgID, relation)
			return "", err
		}); err != nil {
			return fail("", err)
		}
	}
	typeIn := registry.AssetTypeInput{Brand: r.get("asset_type_brand"), Model: r.get("asset_type_model"), ModelVersion: r.get("asset_type_version")}
	typeID, err := im.types.do(strings.ToLower(typeIn.Brand+"\x00"+typeIn.Model+"\x00"+typeIn.ModelVersion), func() (string, error) {
		t, _, err := im.c.FindOrCreateAssetType(ctx, typeIn, key("asset_type"))
		if err != nil {
			return "", err
		}
		return t.ID, nil
	})
	if err != nil {
		return fail("asset_type_", err)
	}
	asset, err := im.asset(ctx, r, typeIn, typeID, key("asset"))
	if err != nil {
		return fail("asset_", err)
	}
	action, err := im.action(ctx, r, asset.ID, personID, orgID, key("action"))
	if err != nil {
		return fail("", err)
	}
	file := r.get("document_file")
	if file == "" {
		return nil
	}
	sourceSystem := r.get("source_system")
	if sourceSystem == "" {
		sourceSystem = "registry-cli"
	}
	sourceRef := r.get("document_source_reference")
	if sourceRef == "" {
		sourceRef = filepath.Base(file)
	}
	for _, ad := range action.ActionDocuments {
		if ad.SourceSystem == sourceSystem && ad.SourceReference == sourceRef {
			return nil // recorded by an earlier import of the same action
		}
	}
	docType := r.get("document_type")
	if docType == "" {
		docType = "expert_control_report"
	}
	doc, err := im.c.UploadFile(ctx, docType, documentPath(im.baseDir, file), key("document"))
	if err != nil {
		return fail("document_", err)
	}
	if _, err := im.c.CreateActionDocument(ctx, action.ID, registry.ActionDocumentInput{DocumentID: doc.ID,
		SourceSystem: sourceSystem, SourceReference: sourceRef}, key("action_document")); err != nil && !registry.IsConflict(err) {
		return fail("document_", err)
	}
	return nil
}

// asset finds the row's asset or creates it, in one call when brand and
// model name one asset type. Without a version they also match the
// model's versioned types (a 409 listing candidates); then the asset is
// looked up in the type the row resolved to, and created there.
func (im *importer) asset(ctx context.Context, r row, t registry.AssetTypeInput, typeID string, key registry.CallOption) (*registry.Asset, error) {
	serial := r.get("asset_serial_number")
	a, _, err := im.c.FindAsset(ctx, registry.AssetQuery{SerialNumber: serial, Brand: t.Brand, Model: t.Model, ModelVersion: t.ModelVersion}, true, key)
	var p *registry.Problem
	if !errors.As(err, &p) || p.Status != 409 || len(p.Candidates) == 0 {
		return a, err
	}
	for found, err := range im.c.ListAssets(ctx, registry.Filter{"asset_type_id": typeID, "serial_number": serial, "limit": "1"}) {
		if err != nil {
			return nil, err
		}
		return &found, nil
	}
	in := registry.AssetInput{SerialNumber: serial, AssetTypeID: typeID}
	if y, err := strconv.Atoi(r.get("asset_production_year")); err == nil {
		in.ProductionYear = y
	}
	a, err = im.c.CreateAsset(ctx, in, key)
	if errors.As(err, &p) && p.ExistingID != "" {
		return im.c.GetAsset(ctx, p.ExistingID)
	}
	return a, err
}

// action finds the action a row names by its source (source_system and
// source_reference, when both are given) or creates it.
func (im *importer) action(ctx context.Context, r row, assetID, personID, orgID string, key registry.CallOption) (*registry.Action, error) {
	sys, ref := r.get("source_system"), r.get("source_reference")
	if sys != "" && ref != "" {
		for a, err := range im.c.ListActions(ctx, registry.Filter{"source_system": sys, "source_reference": ref, "limit": "1"}) {
			if err != nil {
				return nil, err
			}
			if r.get("document_file") == "" {
				return &a, nil
			}
			return im.c.GetAction(ctx, a.ID) // with its action documents
		}
	}
	in := registry.ActionInput{AssetID: assetID, PersonID: personID, OrganizationID: orgID,
		ActionType: r.get("action_type"), PerformedAt: r.get("performed_at"), ActionSubtype: r.get("action_subtype"),
		Reference: r.get("reference"), Status: r.get("status"), StatusValidThrough: r.get("status_valid_through"),
		SourceSystem: sys, SourceReference: ref,
		PerformedByPerson: r.get("performed_by_person"), PerformedByOrganization: r.get("performed_by_organization"),
		StatusOK: optBool(r.get("status_ok")), StatusUseOK: optBool(r.get("status_use_ok")), StatusFinalized: optBool(r.get("status_finalized"))}
	for col, dst := range map[string]*map[string]any{"data": &in.Data, "meta_data": &in.MetaData} {
		if v := r.get(col); v != "" {
			_ = json.Unmarshal([]byte(v), dst) // validate checked it
		}
	}
	return im.c.CreateAction(ctx, in, key)
}

func optBool(s string) *bool {
	if s == "" {
		return nil
	}
	b, _ := strconv.ParseBool(s)
	return &b
}

// problemErrors names the row's columns in a registry problem's field
// errors (a person's first_name is the row's person_first_name).
func problemErrors(n int, prefix string, err error) []rowError {
	var p *registry.Problem
	if errors.As(err, &p) && len(p.Errors) > 0 {
		var out []rowError
		for _, fe := range p.Errors {
			field := fe.Field
			if prefix != "" && !strings.HasPrefix(field, prefix) {
				field = prefix + field
			}
			out = append(out, rowError{Row: n, Field: field, Problem: fe.Message})
		}
		return out
	}
	return []rowError{{Row: n, Field: strings.TrimSuffix(prefix, "_"), Problem: oneLine(err)}}
}

// onceMap finds or creates each shared part once: the first row to need it
// calls the registry, the others wait for its answer. A failure is not
// kept, so a later row tries again.
type onceMap[K comparable, V any] struct {
	mu sync.Mutex
	m  map[K]*onceEntry[V]
}

type onceEntry[V any] struct {
	done chan struct{}
	v    V
	err  error
}

func (o *onceMap[K, V]) do(k K, f func() (V, error)) (V, error) {
	o.mu.Lock()
	if o.m == nil {
		o.m = map[K]*onceEntry[V]{}
	}
	e, ok := o.m[k]
	if !ok {
		e = &onceEntry[V]{done: make(chan struct{})}
		o.m[k] = e
		o.mu.Unlock()
		e.v, e.err = f()
		if e.err != nil {
			o.mu.Lock()
			delete(o.m, k)
			o.mu.Unlock()
		}
		close(e.done)
		return e.v, e.err
	}
	o.mu.Unlock()
	<-e.done
	return e.v, e.err
}

// report is the per-row error report: every problem to the -errors file
// (CSV), the first twenty to stderr.
type report struct {
	stderr  interface{ Write([]byte) (int, error) }
	file    *os.File
	csv     *csv.Writer
	printed int
	mu      sync.Mutex
	path    string
}

func newReport(stderr interface{ Write([]byte) (int, error) }, path string) (*report, error) {
	r := &report{stderr: stderr, path: path}
	if path != "" {
		f, err := os.Create(path)
		if err != nil {
			return nil, usageError{"-errors: " + oneLine(err)}
		}
		r.file, r.csv = f, csv.NewWriter(f)
		_ = r.csv.Write([]string{"row", "field", "problem"})
	}
	return r, nil
}

func (r *report) add(errs ...rowError) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, e := range errs {
		if r.csv != nil {
			_ = r.csv.Write([]string{strconv.Itoa(e.Row), e.Field, e.Problem})
		}
		if r.printed < 20 {
			fmt.Fprintln(r.stderr, e.String())
		} else if r.printed == 20 {
			fmt.Fprintln(r.stderr, "... more problems", map[bool]string{true: "in " + r.path, false: "(give -errors FILE for all)"}[r.path != ""])
		}
		r.printed++
	}
}

func (r *report) finish(failed int) error {
	if r.csv != nil {
		r.csv.Flush()
		if err := r.csv.Error(); err != nil {
			return err
		}
		if err := r.file.Close(); err != nil {
			return err
		}
	}
	if failed > 0 {
		return errRowsFailed
	}
	return nil
}
