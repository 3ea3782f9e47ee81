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
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/peterbourgon/ff/v3/ffcli"
	"github.com/schollz/progressbar/v3"

	registry "github.com/assetregistry/registry/sdk"
)

var errRowsFailed = errors.New("some rows failed")

type importOptions struct {
	format, journal, errorsFile, documents string
	dryRun, quiet                          bool
	workers, batch, batches                int
}

func (a *app) importCommand() *ffcli.Command {
	var o importOptions
	return a.command("import", "import FILE [-dry-run] [-documents DIR] [-batch N] [-batches N] [-workers N] [-journal PATH] [-errors PATH]",
		"record rows of the flow (organization, person, link, asset type, asset, action, document, action document) from CSV or NDJSON", 1, 1,
		func(fs *flag.FlagSet) {
			fs.StringVar(&o.format, "format", "", "csv or ndjson (default: from the file's extension)")
			fs.BoolVar(&o.dryRun, "dry-run", false, "check every row without writing anything")
			fs.StringVar(&o.documents, "documents", "", "the folder document_file names files in (default: the import file's); nothing outside it is uploaded")
			fs.IntVar(&o.batch, "batch", 250, "rows per batch of assets and of actions (1 to 1000); a resumed import keeps its journal's")
			fs.IntVar(&o.batches, "batches", 4, "batches in flight at once")
			fs.IntVar(&o.workers, "workers", 32, "other calls in flight at once (documents, and the first look-up of each organization, person, link and asset type)")
			fs.StringVar(&o.journal, "journal", "", "the file recording what is written (default: FILE.journal)")
			fs.StringVar(&o.errorsFile, "errors", "", "write the per-row error report (CSV: row,field,problem) here")
			fs.BoolVar(&o.quiet, "quiet", false, "no progress bar")
		},
		func(ctx context.Context, args []string) error { return a.runImport(ctx, args[0], o) })
}

// importer records rows in batches of fixed row ranges: per batch, the
// parts rows share (organizations, people, links, asset types: found or
// created once per run), then one POST /assets/batch and one POST
// /actions/batch, then each row's document; see journal for how a stopped
// run resumes.
type importer struct {
	c       *registry.Client
	keyBase string // Idempotency-Keys: keyBase + row + step, or keyBase + batch step + range + rows
	folder  *documentsFolder
	j       *journal
	report  *report
	calls   chan struct{} // bounds the per-row calls in flight
	docs    chan docJob
	toLink  chan link      // uploaded documents waiting to be linked to their actions
	advance func(rows int) // the progress bar

	orgs, people, links, types onceMap[string, string]
	knownAssets                assetMemo
	recorded, failed           atomic.Int64
	journalErr                 atomic.Pointer[error]
}

// batch is the rows of one range still to write: rows to send, and rows
// whose action an earlier run recorded and whose document is still to come.
type batch struct {
	first   int // the range's first row number
	rows    []row
	waiting []docJob
}

// pending is a row of a batch on its way through the steps.
type pending struct {
	r                       row
	errs                    []rowError
	orgID, personID, typeID string
	assetID                 string
	action                  *registry.Action // found by its source (with its action documents when it has a document)
	actionID                string
}

// docJob is a row whose action is recorded and whose document is not.
type docJob struct {
	r        row
	actionID string
	existing []registry.ActionDocument // known when the action was found, not created
}

// link is a row's uploaded document, to be linked to the row's action.
type link struct {
	n    int // the row
	item registry.ActionDocumentLink
}

func (a *app) runImport(ctx context.Context, path string, o importOptions) error {
	format, err := formatOf(path, o.format)
	if err != nil {
		return err
	}
	if o.batch < 1 || o.batch > registry.MaxBatch {
		return usageError{fmt.Sprintf("-batch %d: must be 1 to %d", o.batch, registry.MaxBatch)}
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
	if o.documents == "" {
		o.documents = filepath.Dir(abs)
	}
	docs, err := openDocumentsFolder(o.documents)
	if err != nil {
		return err
	}
	defer docs.Close()
	if o.dryRun {
		failed := 0
		err := readRows(abs, format, func(r row) bool {
			errs := validate(r, docs)
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
	j, err := openJournal(o.journal, abs, o.batch)
	if err != nil {
		return err
	}
	workers := max(o.workers, 1)
	sum := sha256.Sum256([]byte(abs))
	im := &importer{c: c, keyBase: "import-" + hex.EncodeToString(sum[:8]) + "-", folder: docs, j: j, report: report,
		calls: make(chan struct{}, workers), docs: make(chan docJob, workers*2), toLink: make(chan link, linkBatch), advance: func(int) {}}
	var bar *progressbar.ProgressBar
	if !o.quiet {
		bar = progressbar.NewOptions(total, progressbar.OptionSetWriter(a.stderr), progressbar.OptionSetDescription("importing"),
			progressbar.OptionShowCount(), progressbar.OptionShowIts(), progressbar.OptionSetItsString("rows"),
			progressbar.OptionSetPredictTime(true), progressbar.OptionThrottle(200_000_000), progressbar.OptionClearOnFinish())
		_ = bar.Add(0)
		im.advance = func(n int) { _ = bar.Add(n) }
	}

	batches := make(chan batch, max(o.batches, 1))
	var skipped int
	readErr := make(chan error, 1)
	go func() {
		defer close(batches)
		readErr <- im.readBatches(ctx, abs, format, j.size, batches, &skipped)
	}()
	var batchWorkers, docWorkers sync.WaitGroup
	for range max(o.batches, 1) {
		batchWorkers.Go(func() {
			for b := range batches {
				im.runBatch(ctx, b)
			}
		})
	}
	for range workers {
		docWorkers.Go(func() {
			for d := range im.docs {
				im.document(ctx, d)
			}
		})
	}
	var linker sync.WaitGroup
	linker.Go(func() { im.linkAll(ctx) })
	batchWorkers.Wait()
	close(im.docs)
	docWorkers.Wait()
	close(im.toLink)
	linker.Wait()
	if bar != nil {
		_ = bar.Finish()
	}
	journalErr := j.close()
	if p := im.journalErr.Load(); p != nil {
		journalErr = *p
	}
	if err := <-readErr; err != nil {
		return err
	}
	if journalErr != nil {
		return fmt.Errorf("the journal %s: %w", o.journal, journalErr)
	}
	done, failed := im.recorded.Load(), im.failed.Load()
	if ctx.Err() != nil {
		fmt.Fprintf(a.stderr, "stopped: %d rows recorded now, %d earlier; run the same command again to go on\n", done, skipped)
		return usageError{"stopped before the end"}
	}
	fmt.Fprintf(a.stderr, "%d rows recorded, %d already done earlier (journal %s), %d failed\n", done, skipped, o.journal, failed)
	return report.finish(int(failed))
}

// readBatches cuts the file into the journal's fixed ranges of rows and
// hands on what is left of each: finished rows are skipped, rows waiting
// for their document go straight to that step.
func (im *importer) readBatches(ctx context.Context, path, format string, size int, out chan<- batch, skipped *int) error {
	var cur batch
	flush := func() bool {
		if len(cur.rows) == 0 && len(cur.waiting) == 0 {
			return true
		}
		select {
		case out <- cur:
			cur = batch{}
			return true
		case <-ctx.Done():
			return false
		}
	}
	err := readRows(path, format, func(r row) bool {
		if first := (r.n-1)/size*size + 1; first != cur.first {
			if !flush() {
				return false
			}
			cur.first = first
		}
		switch state, actionID := im.j.state(r.n); state {
		case rowFinished:
			*skipped++
			im.advance(1)
		case rowWaiting:
			cur.waiting = append(cur.waiting, docJob{r: r, actionID: actionID})
		default:
			cur.rows = append(cur.rows, r)
		}
		return true
	})
	if err != nil {
		return err
	}
	flush()
	return nil
}

// runBatch takes a batch's rows through the steps. A row's own problem
// (a 4xx of one of its parts or of its batch item) fails that row; any
// other failure (the registry unavailable after the retries, the network)
// fails what is left of the batch, whose rows are then not in the journal:
// the next run sends the same rows with the same keys.
func (im *importer) runBatch(ctx context.Context, b batch) {
	for _, d := range b.waiting {
		im.docs <- d
	}
	rows := make([]*pending, 0, len(b.rows))
	for _, r := range b.rows {
		errs := validate(r, im.folder)
		if r.err != nil {
			errs = []rowError{*r.err}
		}
		if len(errs) > 0 {
			im.fail(errs...)
			continue
		}
		rows = append(rows, &pending{r: r})
	}
	err := im.each(ctx, rows, im.parts)
	if err == nil {
		err = im.each(ctx, rows, im.findAction)
	}
	if err == nil {
		err = im.assets(ctx, b.first, rows)
	}
	if err == nil {
		err = im.actions(ctx, b.first, rows)
	}
	if err != nil {
		if ctx.Err() != nil {
			return // stopped: the next run does these rows
		}
		for _, p := range rows {
			if len(p.errs) == 0 {
				p.errs = []rowError{{Row: p.r.n, Problem: "its batch (rows from " + strconv.Itoa(b.first) + ") failed: " + oneLine(err)}}
			}
		}
	}
	var finished []int
	waiting := map[int]string{}
	var docs []docJob
	for _, p := range rows {
		switch {
		case len(p.errs) > 0:
			im.fail(p.errs...)
		case p.r.get("document_file") == "":
			finished = append(finished, p.r.n)
		default:
			d := docJob{r: p.r, actionID: p.actionID}
			if p.action != nil {
				d.existing = p.action.ActionDocuments
				if d.attached() {
					finished = append(finished, p.r.n)
					continue
				}
			}
			waiting[p.r.n] = p.actionID
			docs = append(docs, d)
		}
	}
	if failpoint == "answered" && b.first > 1 {
		die()
	}
	if err := im.j.batchDone(b.first, finished, waiting); err != nil {
		im.journalErr.CompareAndSwap(nil, &err)
		return
	}
	im.recorded.Add(int64(len(finished)))
	im.advance(len(finished))
	for _, d := range docs {
		im.docs <- d
	}
}

func (im *importer) fail(errs ...rowError) {
	im.report.add(errs...)
	im.failed.Add(1)
	im.advance(1)
}

// each runs step on every row not yet failed, at most -workers calls at
// once; a row's own problem is in its errs, and the first other failure is
// returned. Most rows' parts are remembered, so step returns at once.
func (im *importer) each(ctx context.Context, rows []*pending, step func(context.Context, *pending) error) error {
	var wg sync.WaitGroup
	var first atomic.Pointer[error]
	for _, p := range rows {
		if len(p.errs) > 0 {
			continue
		}
		select {
		case im.calls <- struct{}{}:
		case <-ctx.Done():
			wg.Wait()
			return ctx.Err()
		}
		wg.Go(func() {
			defer func() { <-im.calls }()
			if err := step(ctx, p); err != nil {
				first.CompareAndSwap(nil, &err)
			}
		})
	}
	wg.Wait()
	if p := first.Load(); p != nil {
		return *p
	}
	return nil
}

// rowProblem says whether err is the row's own (a 4xx problem of the
// registry about what the row says) rather than the registry or the
// network failing.
func rowProblem(err error) bool {
	var p *registry.Problem
	return errors.As(err, &p) && p.Status >= 400 && p.Status < 500 &&
		p.Status != http.StatusTooManyRequests && p.Status != http.StatusRequestTimeout && p.Status != http.StatusUnauthorized
}

// failed puts a row's own problem in its errs; any other error is returned.
func (p *pending) failed(prefix string, err error) error {
	if err == nil {
		return nil
	}
	if !rowProblem(err) {
		return err
	}
	p.errs = problemErrors(p.r.n, prefix, err)
	return nil
}

// parts finds or creates a row's organization, person, link and asset
// type, each once per run.
func (im *importer) parts(ctx context.Context, p *pending) error {
	r := p.r
	key := func(step string) registry.CallOption {
		return registry.IdempotencyKey(im.keyBase + strconv.Itoa(r.n) + "-" + step)
	}
	var err error
	if r.get("organization_registration_number") != "" {
		in := registry.OrganizationInput{Name: r.get("organization_name"), RegistrationNumber: r.get("organization_registration_number"),
			OrganizationType: r.get("organization_type"), Country: strings.ToLower(r.get("organization_country"))}
		p.orgID, err = im.orgs.do(strings.ToLower(in.RegistrationNumber+"\x00"+in.Country), func() (string, error) {
			o, _, err := im.c.FindOrCreateOrganization(ctx, in, key("organization"))
			if err != nil {
				return "", err
			}
			return o.ID, nil
		})
		if err != nil {
			return p.failed("organization_", err)
		}
	}
	if r.get("person_first_name") != "" {
		in := registry.PersonInput{FirstName: r.get("person_first_name"), LastName: r.get("person_last_name"), DateOfBirth: r.get("person_date_of_birth")}
		p.personID, err = im.people.do(strings.ToLower(in.FirstName+"\x00"+in.LastName+"\x00"+in.DateOfBirth), func() (string, error) {
			person, _, err := im.c.FindPerson(ctx, in, true)
			if err != nil {
				return "", err
			}
			return person.ID, nil
		})
		if err != nil {
			return p.failed("person_", err)
		}
	}
	if p.orgID != "" && p.personID != "" {
		relation := r.get("relation_type")
		if relation == "" {
			relation = "employee"
		}
		if _, err := im.links.do(p.personID+p.orgID+relation, func() (string, error) {
			_, err := im.c.LinkPerson(ctx, p.personID, p.orgID, relation)
			return "", err
		}); err != nil {
			return p.failed("", err)
		}
	}
	typeIn := registry.AssetTypeInput{Brand: r.get("asset_type_brand"), Model: r.get("asset_type_model"), ModelVersion: r.get("asset_type_version")}
	p.typeID, err = im.types.do(strings.ToLower(typeIn.Brand+"\x00"+typeIn.Model+"\x00"+typeIn.ModelVersion), func() (string, error) {
		t, _, err := im.c.FindOrCreateAssetType(ctx, typeIn, key("asset_type"))
		if err != nil {
			return "", err
		}
		return t.ID, nil
	})
	return p.failed("asset_type_", err)
}

// findAction looks up the action a row names by its source (source_system
// and source_reference, when both are given): such a row is recorded once
// however often it is imported.
func (im *importer) findAction(ctx context.Context, p *pending) error {
	sys, ref := p.r.get("source_system"), p.r.get("source_reference")
	if sys == "" || ref == "" {
		return nil
	}
	for a, err := range im.c.ListActions(ctx, registry.Filter{"source_system": sys, "source_reference": ref, "limit": "1"}) {
		if err != nil {
			return p.failed("", err)
		}
		if p.r.get("document_file") == "" {
			p.action = &a
			return nil
		}
		full, err := im.c.GetAction(ctx, a.ID) // with its action documents
		if err != nil {
			return p.failed("", err)
		}
		p.action = full
		return nil
	}
	return nil
}

// assets finds or creates the batch's assets by serial number in the
// row's asset type.
func (im *importer) assets(ctx context.Context, first int, rows []*pending) error {
	var todo []*pending
	var items []registry.AssetInput
	for _, p := range rows {
		if len(p.errs) > 0 || p.action != nil {
			continue
		}
		if p.assetID = im.knownAssets.get(p.typeID, p.r.get("asset_serial_number")); p.assetID != "" {
			continue
		}
		in := registry.AssetInput{SerialNumber: p.r.get("asset_serial_number"), AssetTypeID: p.typeID}
		if y, err := strconv.Atoi(p.r.get("asset_production_year")); err == nil {
			in.ProductionYear = y
		}
		todo, items = append(todo, p), append(items, in)
	}
	return sendBatch(ctx, im, "assets", first, todo, items, im.c.CreateAssets, func(p *pending, res registry.BatchResult) {
		if err := res.Err(); err != nil {
			p.errs = problemErrors(p.r.n, "asset_", err)
			return
		}
		p.assetID = res.ID
		im.knownAssets.put(p.typeID, p.r.get("asset_serial_number"), res.ID)
	})
}

// assetMemo remembers the assets a run found or created, by asset type and
// serial number: rows of the same asset (its inspections over the years)
// are not sent again. It holds at most maxKnownAssets (some 10 MiB), and
// forgets them all when full: a forgotten asset is found again by its
// batch. Which rows a batch of assets carries thus depends on the order
// batches ran in, which is harmless: a batch of assets only finds or
// creates, so a batch under another key finds what an earlier one made.
type assetMemo struct {
	mu sync.Mutex
	m  map[string]string
}

const maxKnownAssets = 100_000

func (a *assetMemo) get(typeID, serial string) string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.m[typeID+"\x00"+serial]
}

func (a *assetMemo) put(typeID, serial, id string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.m == nil || len(a.m) >= maxKnownAssets {
		a.m = map[string]string{}
	}
	a.m[typeID+"\x00"+serial] = id
}

// actions records the batch's actions. The rows that name their source
// (source_system and source_reference) and were not found by it go in
// batches of their own, found or created by the pair on the registry's
// side (POST /actions/batch?find=true): a run after a crash, or a month
// later when every Idempotency-Key has expired, finds what an earlier run
// recorded even if the look-up before missed it, whatever rows the batch
// then carries. The other rows have no key but the batch's
// Idempotency-Key, so their batch must carry the same rows when sent
// again: found rows never are among them.
func (im *importer) actions(ctx context.Context, first int, rows []*pending) error {
	var todo, bySource []*pending
	var items, sourced []registry.ActionInput
	for _, p := range rows {
		switch {
		case len(p.errs) > 0:
		case p.action != nil:
			p.actionID = p.action.ID
		case p.r.get("source_system") != "" && p.r.get("source_reference") != "":
			bySource, sourced = append(bySource, p), append(sourced, actionInput(p))
		default:
			todo, items = append(todo, p), append(items, actionInput(p))
		}
	}
	var found []*pending // recorded by an earlier run after all
	err := sendBatch(ctx, im, "sourced-actions", first, bySource, sourced, im.c.FindOrCreateActions, func(p *pending, res registry.BatchResult) {
		if err := res.Err(); err != nil {
			p.errs = problemErrors(p.r.n, "", err)
			return
		}
		p.actionID = res.ID
		if res.Status == http.StatusOK && p.r.get("document_file") != "" {
			found = append(found, p)
		}
	})
	if err != nil {
		return err
	}
	// Their documents may be linked already: the document step asks.
	err = im.each(ctx, found, func(ctx context.Context, p *pending) error {
		full, err := im.c.GetAction(ctx, p.actionID)
		if err != nil {
			return p.failed("", err)
		}
		p.action = full
		return nil
	})
	if err != nil {
		return err
	}
	return sendBatch(ctx, im, "actions", first, todo, items, im.c.CreateActions, func(p *pending, res registry.BatchResult) {
		if err := res.Err(); err != nil {
			p.errs = problemErrors(p.r.n, "", err)
			return
		}
		p.actionID = res.ID
	})
}

func actionInput(p *pending) registry.ActionInput {
	r := p.r
	in := registry.ActionInput{AssetID: p.assetID, PersonID: p.personID, OrganizationID: p.orgID,
		ActionType: r.get("action_type"), PerformedAt: r.get("performed_at"), ActionSubtype: r.get("action_subtype"),
		Reference: r.get("reference"), Status: r.get("status"), StatusValidThrough: r.get("status_valid_through"),
		SourceSystem: r.get("source_system"), SourceReference: r.get("source_reference"),
		PerformedByPerson: r.get("performed_by_person"), PerformedByOrganization: r.get("performed_by_organization"),
		StatusOK: optBool(r.get("status_ok")), StatusUseOK: optBool(r.get("status_use_ok")), StatusFinalized: optBool(r.get("status_finalized"))}
	for col, dst := range map[string]*map[string]any{"data": &in.Data, "meta_data": &in.MetaData} {
		if v := r.get(col); v != "" {
			_ = json.Unmarshal([]byte(v), dst) // validate checked it
		}
	}
	return in
}

// maxBatchBytes keeps a batch's body under the registry's 1 MiB limit.
const maxBatchBytes = 900 << 10

// sendBatch sends items (the rows todo, in order) in as few batch calls as
// the registry's limits allow. The cut depends only on the items, and each
// call's Idempotency-Key on the step, the range and the row numbers it
// carries: the same rows sent again (after a crash before the journal
// recorded the answer) replay the stored answer; other rows of the range
// (those that failed before) make another key.
func sendBatch[In any](ctx context.Context, im *importer, step string, first int, todo []*pending, items []In,
	send func(context.Context, []In, ...registry.CallOption) ([]registry.BatchResult, error), apply func(*pending, registry.BatchResult)) error {
	for start := 0; start < len(items); {
		end, size := start, 0
		for end < len(items) && end-start < registry.MaxBatch {
			raw, err := json.Marshal(items[end])
			if err != nil {
				return err
			}
			if end > start && size+len(raw)+1 > maxBatchBytes {
				break
			}
			size += len(raw) + 1
			end++
		}
		h := sha256.New()
		for _, p := range todo[start:end] {
			h.Write(strconv.AppendInt(nil, int64(p.r.n), 10))
			h.Write([]byte{','})
		}
		key := im.keyBase + step + "-" + strconv.Itoa(first) + "-" + hex.EncodeToString(h.Sum(nil)[:8])
		results, err := send(ctx, items[start:end], registry.IdempotencyKey(key))
		if err != nil {
			return err
		}
		for i, res := range results {
			apply(todo[start+i], res)
		}
		start = end
	}
	return nil
}

// attached says whether the row's document is attached to its action
// already (an earlier import of the same action).
func (d docJob) attached() bool {
	sys, ref := d.source()
	for _, ad := range d.existing {
		if ad.SourceSystem == sys && ad.SourceReference == ref {
			return true
		}
	}
	return false
}

// source is the action document's source system and reference.
func (d docJob) source() (string, string) {
	sys := d.r.get("source_system")
	if sys == "" {
		sys = "registry-cli"
	}
	ref := d.r.get("document_source_reference")
	if ref == "" {
		ref = filepath.Base(d.r.get("document_file"))
	}
	return sys, ref
}

// document uploads a row's file under the row's key (a row done again
// replays the upload) and hands it to the linker.
func (im *importer) document(ctx context.Context, d docJob) {
	docType := d.r.get("document_type")
	if docType == "" {
		docType = "expert_control_report"
	}
	sys, ref := d.source()
	name := d.r.get("document_file")
	file, err := im.folder.open(name)
	if err != nil {
		im.fail(rowError{Row: d.r.n, Field: "document_file", Problem: err.Error()})
		return
	}
	doc, err := im.c.Upload(ctx, docType, filepath.Base(name), file,
		registry.IdempotencyKey(im.keyBase+strconv.Itoa(d.r.n)+"-document"))
	file.Close()
	switch {
	case err != nil && ctx.Err() != nil:
		return // stopped: the next run does this row
	case err != nil:
		im.fail(problemErrors(d.r.n, "document_", err)...)
		return
	}
	select {
	case im.toLink <- link{n: d.r.n, item: registry.ActionDocumentLink{ActionID: d.actionID,
		ActionDocumentInput: registry.ActionDocumentInput{DocumentID: doc.ID, SourceSystem: sys, SourceReference: ref}}}:
	case <-ctx.Done():
	}
}

// linkBatch bounds one call of links, and linkWait how long the linker
// gathers uploads for it once the first has come: the links of a busy
// import go by the dozen in one call, a quiet one's are not held long.
const (
	linkBatch = 100
	linkWait  = 100 * time.Millisecond
)

// linkAll links the uploaded documents to their actions, in batches, until
// the uploads end.
func (im *importer) linkAll(ctx context.Context) {
	for {
		first, ok := <-im.toLink
		if !ok {
			return
		}
		links := []link{first}
		deadline := time.After(linkWait)
	gather:
		for len(links) < linkBatch {
			select {
			case l, ok := <-im.toLink:
				if !ok {
					break gather
				}
				links = append(links, l)
			case <-deadline:
				break gather
			}
		}
		im.linkBatch(ctx, links)
	}
}

// linkBatch links one batch. Its key comes from the rows it carries, so a
// crash before the journal recorded them replays the stored answer; a row
// an earlier run linked already (a batch cut otherwise) answers 409, which
// is done too.
func (im *importer) linkBatch(ctx context.Context, links []link) {
	h := sha256.New()
	items := make([]registry.ActionDocumentLink, len(links))
	for i, l := range links {
		items[i] = l.item
		h.Write(strconv.AppendInt(nil, int64(l.n), 10))
		h.Write([]byte{','})
	}
	key := im.keyBase + "links-" + hex.EncodeToString(h.Sum(nil)[:8])
	results, err := im.c.CreateActionDocuments(ctx, items, registry.IdempotencyKey(key))
	if err != nil {
		if ctx.Err() != nil {
			return // stopped: the next run does these rows
		}
		for _, l := range links {
			im.fail(problemErrors(l.n, "document_", err)...)
		}
		return
	}
	for i, res := range results {
		n := links[i].n
		if err := res.Err(); err != nil && !registry.IsConflict(err) {
			im.fail(problemErrors(n, "document_", err)...)
			continue
		}
		if err := im.j.rowDone(n); err != nil {
			im.journalErr.CompareAndSwap(nil, &err)
			return
		}
		im.recorded.Add(1)
		im.advance(1)
	}
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
