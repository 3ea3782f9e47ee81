package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"sync"

	registry "github.com/assetregistry/registry/sdk"
)

// The import's writes of a row's parts (organization, person, link, asset
// type, each once per run), its asset and its action, in batches.

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
