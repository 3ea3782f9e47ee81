package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"path/filepath"
	"strconv"
	"time"

	registry "github.com/assetregistry/registry/sdk"
)

// The import's documents: each row's file uploaded under the row's key,
// then linked to the row's action in batches.

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
