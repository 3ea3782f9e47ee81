package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"

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
	// actionTypes are the names the registry lists (GET /action_types).
	actionTypes []string
	j           *journal
	report      *report
	calls       chan struct{} // bounds the per-row calls in flight
	docs        chan docJob
	toLink      chan link      // uploaded documents waiting to be linked to their actions
	advance     func(rows int) // the progress bar

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
			errs := validate(r, docs, builtinActionTypes)
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
	actionTypes, err := listedActionTypes(ctx, c)
	if err != nil {
		return err
	}
	im := &importer{c: c, keyBase: "import-" + hex.EncodeToString(sum[:8]) + "-", folder: docs, actionTypes: actionTypes, j: j, report: report,
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
		errs := validate(r, im.folder, im.actionTypes)
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

// listedActionTypes are the action types the registry lists; a registry
// without GET /action_types (404) has the four.
func listedActionTypes(ctx context.Context, c *registry.Client) ([]string, error) {
	var names []string
	for t, err := range c.ListActionTypes(ctx) {
		var p *registry.Problem
		if errors.As(err, &p) && p.Status == http.StatusNotFound {
			return builtinActionTypes, nil
		}
		if err != nil {
			return nil, err
		}
		names = append(names, t.Name)
	}
	return names, nil
}
