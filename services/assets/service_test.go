package assets

import (
	"context"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/assetregistry/registry/pkg/apperr"
	"github.com/assetregistry/registry/pkg/model"
	"github.com/assetregistry/registry/pkg/refs"
	"github.com/assetregistry/registry/services/assets/assettypes"
	"github.com/assetregistry/registry/tools/testkit"
	"github.com/assetregistry/registry/tools/testkit/servicetest"
)

func TestMain(m *testing.M) { os.Exit(testkit.Main(m)) }

type fixture struct {
	svc      Service
	types    assettypes.Service
	store    *Store
	registry *refs.Registry
	// people and documents play the parties and documents services: a
	// person or a document exists when the test adds it there.
	people, documents *servicetest.StandIn
	ctx               context.Context
	by                model.Caller // the caller of creates
	g                 model.Guard  // what changes and deletes obey: no route's rule
}

// newFixture is the service as production wires it, over a fresh schema of
// the real PostgreSQL and a private key space of the real Redis, with its
// peers played by stand-ins over HTTP.
func newFixture(t testing.TB, redisURL string) fixture {
	t.Helper()
	kit, finds := servicetest.StoreWithFinds(t, Spec(), redisURL)
	peers, standIns := servicetest.StandInClients(t, "assets")
	registry := refs.New("assets", kit, peers)
	types := assettypes.NewStore(kit, registry, AssetsOfType)
	st := NewStore(kit, registry)
	return fixture{svc: WithFindCache(NewService(st, types, registry), finds), types: assettypes.WithFindCache(assettypes.NewService(types, registry), finds),
		store: st, registry: registry,
		people: standIns["parties"], documents: standIns["documents"], ctx: t.Context(),
		by: servicetest.Caller("test-client"), g: servicetest.Guard("test-client")}
}

// person makes a person exist at the parties stand-in.
func (f fixture) person() uuid.UUID {
	id := uuid.New()
	f.people.Add("person", id, nil)
	return id
}

// document makes a document exist at the documents stand-in.
func (f fixture) document(contentType string) uuid.UUID {
	id := uuid.New()
	f.documents.Add("document", id, refs.Attrs{"content_type": contentType, "document_type": "manual", "filename": "f",
		"size": "3", "sha256": strings.Repeat("a", 64), "created_at": time.Now().UTC().Format(time.RFC3339Nano), "created_by": "c",
		"sniffed_type": contentType})
	return id
}

func (f fixture) assetType(t *testing.T, brand, model string, version *string) assettypes.AssetTypeDetail {
	t.Helper()
	return servicetest.Must[assettypes.AssetTypeDetail](t)(f.types.CreateAssetType(f.ctx, f.by, assettypes.AssetTypeInput{Brand: brand, Model: model, Version: version}))
}

func (f fixture) asset(t *testing.T, typeID uuid.UUID, serial string) Asset {
	t.Helper()
	return servicetest.Must[Asset](t)(f.svc.CreateAsset(f.ctx, f.by, AssetInput{SerialNumber: serial, AssetTypeID: model.ID(typeID)}))
}

var wantKind = servicetest.WantKind

func wantField(t *testing.T, err error, field string) {
	t.Helper()
	e := wantKind(t, err, apperr.KindInvalid)
	for _, f := range e.Fields {
		if f.Field == field {
			return
		}
	}
	t.Fatalf("fields = %v, want %s", e.Fields, field)
}

func TestAssetTypeLifecycle(t *testing.T) {
	t.Parallel()
	f := newFixture(t, testkit.RedisURL(t))
	created := servicetest.Must[assettypes.AssetTypeDetail](t)(f.types.CreateAssetType(f.ctx, f.by, assettypes.AssetTypeInput{Brand: " Liftmaster ", Model: "LM-200",
		Version: new("2"), EmissionClass: new(" ")}))
	if created.ID.Version() != 7 || created.Brand != "Liftmaster" || created.EmissionClass != nil || created.CreatedBy != "test-client" ||
		created.Documents == nil || created.Thumbnail != nil || created.ExternalIDs == nil {
		t.Fatalf("created = %+v", created)
	}
	got := servicetest.Must[assettypes.AssetTypeDetail](t)(f.types.GetAssetType(f.ctx, created.ID))
	if !got.CreatedAt.Equal(created.CreatedAt) || *got.Version != "2" {
		t.Errorf("get = %+v", got)
	}

	// Identity is case-insensitive, and no version is a version of its own.
	_, err := f.types.CreateAssetType(f.ctx, f.by, assettypes.AssetTypeInput{Brand: "LIFTMASTER", Model: "lm-200", Version: new("2")})
	if e := wantKind(t, err, apperr.KindConflict); e.Extensions["existing_id"] != created.ID.String() {
		t.Errorf("duplicate: existing_id = %v", e.Extensions["existing_id"])
	}
	unversioned := f.assetType(t, "Liftmaster", "LM-200", nil)
	_, err = f.types.CreateAssetType(f.ctx, f.by, assettypes.AssetTypeInput{Brand: "liftmaster", Model: "LM-200"})
	if e := wantKind(t, err, apperr.KindConflict); e.Extensions["existing_id"] != unversioned.ID.String() {
		t.Errorf("duplicate without version: existing_id = %v", e.Extensions["existing_id"])
	}
	f.assetType(t, "Liftmaster", "LM-200", new("3"))

	updated := servicetest.Must[assettypes.AssetTypeDetail](t)(f.types.UpdateAssetType(f.ctx, f.g, created.ID, assettypes.AssetTypePatch{
		EmissionClass: servicetest.Set("Stage V")}))
	if *updated.EmissionClass != "Stage V" || !updated.UpdatedAt.After(created.UpdatedAt) {
		t.Errorf("updated = %+v", updated)
	}
	unchanged := servicetest.Must[assettypes.AssetTypeDetail](t)(f.types.UpdateAssetType(f.ctx, f.g, created.ID, assettypes.AssetTypePatch{Brand: servicetest.Set("Liftmaster")}))
	if !unchanged.UpdatedAt.Equal(updated.UpdatedAt) {
		t.Error("a patch that changes nothing must not touch updated_at")
	}
	// Moving onto another type's identity is a duplicate.
	_, err = f.types.UpdateAssetType(f.ctx, f.g, created.ID, assettypes.AssetTypePatch{Version: servicetest.Set("3")})
	wantKind(t, err, apperr.KindConflict)
	_, err = f.types.UpdateAssetType(f.ctx, f.g, created.ID, assettypes.AssetTypePatch{Version: servicetest.Null[string]()})
	if e := wantKind(t, err, apperr.KindConflict); e.Extensions["existing_id"] != unversioned.ID.String() {
		t.Errorf("existing_id = %v", e.Extensions["existing_id"])
	}

	if err := f.types.DeleteAssetType(f.ctx, f.g, created.ID); err != nil {
		t.Fatal(err)
	}
	_, getErr := f.types.GetAssetType(f.ctx, created.ID)
	_, updateErr := f.types.UpdateAssetType(f.ctx, f.g, created.ID, assettypes.AssetTypePatch{})
	for _, err := range []error{getErr, updateErr, f.types.DeleteAssetType(f.ctx, f.g, created.ID)} {
		wantKind(t, err, apperr.KindNotFound)
	}
}

func TestListAndFindAssetTypes(t *testing.T) {
	t.Parallel()
	f := newFixture(t, testkit.RedisURL(t))
	var ids []uuid.UUID
	for i, spec := range []struct {
		brand, model string
		version      *string
	}{{"Liftmaster", "LM-200", nil}, {"Liftmaster", "LM-200", new("2")}, {"Liftmaster", "LM-300", nil}, {"Hoistco", "LM-200", nil}, {"LIFTMASTER", "lm-200", new("3")}} {
		in := assettypes.AssetTypeInput{Brand: spec.brand, Model: spec.model, Version: spec.version,
			ExternalIDs: []assettypes.ExternalID{{SourceSystem: "erp", ExternalID: strconv.Itoa(i)}}}
		ids = append(ids, servicetest.Must[assettypes.AssetTypeDetail](t)(f.types.CreateAssetType(f.ctx, f.by, in)).ID)
	}
	list := func(filter assettypes.AssetTypeFilter, page model.Page) model.Paged[assettypes.AssetType] {
		t.Helper()
		return servicetest.Must[model.Paged[assettypes.AssetType]](t)(f.types.ListAssetTypes(f.ctx, filter, page))
	}
	all := list(assettypes.AssetTypeFilter{}, model.Page{Limit: 100})
	if len(all.Items) != 5 || all.Items[0].ID != ids[0] || all.Items[4].ID != ids[4] || len(all.Items[2].ExternalIDs) != 1 {
		t.Fatalf("all = %+v", all.Items)
	}
	page := list(assettypes.AssetTypeFilter{Brand: new("liftMASTER"), Model: new("lm-200")}, model.Page{Limit: 2})
	if len(page.Items) != 2 || page.Items[1].ID != ids[1] || page.Next != ids[1] {
		t.Fatalf("page 1 = %+v", page)
	}
	page = list(assettypes.AssetTypeFilter{Brand: new("liftMASTER"), Model: new("lm-200")}, model.Page{Limit: 2, After: page.Next})
	if len(page.Items) != 1 || page.Items[0].ID != ids[4] || page.Next != uuid.Nil {
		t.Fatalf("page 2 = %+v", page)
	}
	if got := list(assettypes.AssetTypeFilter{Version: new("2")}, model.Page{Limit: 10}); len(got.Items) != 1 || got.Items[0].ID != ids[1] {
		t.Errorf("by version: %+v", got.Items)
	}
	byExternal := list(assettypes.AssetTypeFilter{External: assettypes.ExternalFilter{SourceSystem: new("erp"), ExternalID: new("3")}}, model.Page{Limit: 10})
	if len(byExternal.Items) != 1 || byExternal.Items[0].ID != ids[3] {
		t.Errorf("by external id: %+v", byExternal.Items)
	}
	if got := list(assettypes.AssetTypeFilter{External: assettypes.ExternalFilter{SourceSystem: new("ERP")}}, model.Page{Limit: 10}); len(got.Items) != 0 {
		t.Errorf("external ids compare exactly: %+v", got.Items)
	}

	found := servicetest.Must[[]assettypes.AssetType](t)(f.types.FindAssetTypes(f.ctx, assettypes.BrandAndModel{Brand: "liftmaster", Model: "LM-200"}))
	if len(found) != 3 || found[0].ID != ids[0] || found[2].ID != ids[4] {
		t.Errorf("every version: %+v", found)
	}
	found = servicetest.Must[[]assettypes.AssetType](t)(f.types.FindAssetTypes(f.ctx, assettypes.BrandAndModel{Brand: "liftmaster", Model: "LM-200", Version: new("3")}))
	if len(found) != 1 || found[0].ID != ids[4] {
		t.Errorf("one version: %+v", found)
	}
	found = servicetest.Must[[]assettypes.AssetType](t)(f.types.FindAssetTypes(f.ctx, assettypes.BrandAndModel{Brand: "Nobody", Model: "LM-200"}))
	if found == nil || len(found) != 0 {
		t.Errorf("no match must be an empty list: %#v", found)
	}
	_, err := f.types.FindAssetTypes(f.ctx, assettypes.BrandAndModel{Brand: "Liftmaster"})
	wantField(t, err, "model")
}

func TestExternalIDs(t *testing.T) {
	t.Parallel()
	f := newFixture(t, testkit.RedisURL(t))
	erp1 := []assettypes.ExternalID{{SourceSystem: "erp", ExternalID: "1"}}
	first := servicetest.Must[assettypes.AssetTypeDetail](t)(f.types.CreateAssetType(f.ctx, f.by, assettypes.AssetTypeInput{Brand: "A", Model: "1", ExternalIDs: erp1}))
	_, err := f.types.CreateAssetType(f.ctx, f.by, assettypes.AssetTypeInput{Brand: "A", Model: "2", ExternalIDs: []assettypes.ExternalID{{SourceSystem: "crm", ExternalID: "7"}, erp1[0]}})
	if e := wantKind(t, err, apperr.KindConflict); e.Extensions["existing_id"] != first.ID.String() {
		t.Errorf("external id held by another asset type: %v", e.Extensions)
	}
	// Nothing of the refused create stays, its other pair included.
	second := servicetest.Must[assettypes.AssetTypeDetail](t)(f.types.CreateAssetType(f.ctx, f.by, assettypes.AssetTypeInput{Brand: "A", Model: "2",
		ExternalIDs: []assettypes.ExternalID{{SourceSystem: "crm", ExternalID: "7"}}}))
	// Pairs are unique per kind: an asset may carry the type's pair.
	a := servicetest.Must[Asset](t)(f.svc.CreateAsset(f.ctx, f.by, AssetInput{SerialNumber: "S", AssetTypeID: model.ID(first.ID), ExternalIDs: erp1}))
	if len(a.ExternalIDs) != 1 || a.ExternalIDs[0] != erp1[0] {
		t.Fatalf("asset external_ids = %+v", a.ExternalIDs)
	}
	_, err = f.svc.CreateAsset(f.ctx, f.by, AssetInput{SerialNumber: "T", AssetTypeID: model.ID(first.ID), ExternalIDs: erp1})
	if e := wantKind(t, err, apperr.KindConflict); e.Extensions["existing_id"] != a.ID.String() {
		t.Errorf("external id held by another asset: %v", e.Extensions)
	}

	// A patch replaces the list, in the order given; a freed pair can be taken.
	replaced := servicetest.Must[assettypes.AssetTypeDetail](t)(f.types.UpdateAssetType(f.ctx, f.g, first.ID, assettypes.AssetTypePatch{ExternalIDs: model.PatchField[[]assettypes.ExternalID]{Set: true,
		Value: []assettypes.ExternalID{{SourceSystem: "sap", ExternalID: "9"}, {SourceSystem: "erp", ExternalID: "2"}}}}))
	if len(replaced.ExternalIDs) != 2 || replaced.ExternalIDs[0].SourceSystem != "sap" || replaced.ExternalIDs[1].ExternalID != "2" {
		t.Fatalf("replaced = %+v", replaced.ExternalIDs)
	}
	taken := servicetest.Must[assettypes.AssetTypeDetail](t)(f.types.UpdateAssetType(f.ctx, f.g, second.ID, assettypes.AssetTypePatch{ExternalIDs: servicetest.Set(erp1)}))
	if len(taken.ExternalIDs) != 1 || taken.ExternalIDs[0] != erp1[0] {
		t.Errorf("taken = %+v", taken.ExternalIDs)
	}
	_, err = f.types.UpdateAssetType(f.ctx, f.g, first.ID, assettypes.AssetTypePatch{ExternalIDs: servicetest.Set(erp1)})
	if e := wantKind(t, err, apperr.KindConflict); e.Extensions["existing_id"] != second.ID.String() {
		t.Errorf("patch onto a held pair: %v", e.Extensions)
	}
	cleared := servicetest.Must[assettypes.AssetTypeDetail](t)(f.types.UpdateAssetType(f.ctx, f.g, first.ID, assettypes.AssetTypePatch{ExternalIDs: servicetest.Null[[]assettypes.ExternalID]()}))
	if cleared.ExternalIDs == nil || len(cleared.ExternalIDs) != 0 {
		t.Errorf("cleared = %#v", cleared.ExternalIDs)
	}
}

func TestDocumentsAndThumbnail(t *testing.T) {
	t.Parallel()
	f := newFixture(t, testkit.RedisURL(t))
	at := f.assetType(t, "Liftmaster", "LM-200", nil)
	manual, photo := f.document("application/pdf"), f.document("image/png")

	_, _, err := f.types.AttachDocument(f.ctx, f.g, at.ID, assettypes.DocumentRef{DocumentID: model.ID(uuid.New())})
	wantField(t, err, "document_id")
	_, _, err = f.types.AttachDocument(f.ctx, f.g, at.ID, assettypes.DocumentRef{})
	wantField(t, err, "document_id")
	_, _, err = f.types.AttachDocument(f.ctx, f.g, uuid.New(), assettypes.DocumentRef{DocumentID: model.ID(manual)})
	wantKind(t, err, apperr.KindNotFound)

	got, created, err := f.types.AttachDocument(f.ctx, f.g, at.ID, assettypes.DocumentRef{DocumentID: model.ID(manual)})
	if err != nil || !created || len(got.Documents) != 1 || got.Documents[0].ID != manual || got.Documents[0].ContentType != "application/pdf" ||
		got.Documents[0].Size != 3 || !got.UpdatedAt.After(at.UpdatedAt) {
		t.Fatalf("attach: %+v created=%v err=%v", got, created, err)
	}
	again, created, err := f.types.AttachDocument(f.ctx, f.g, at.ID, assettypes.DocumentRef{DocumentID: model.ID(manual)})
	if err != nil || created || len(again.Documents) != 1 || !again.UpdatedAt.Equal(got.UpdatedAt) {
		t.Fatalf("attach again: %+v created=%v err=%v", again, created, err)
	}
	servicetest.Must[assettypes.AssetTypeDetail](t)(func() (assettypes.AssetTypeDetail, error) {
		d, _, err := f.types.AttachDocument(f.ctx, f.g, at.ID, assettypes.DocumentRef{DocumentID: model.ID(photo)})
		return d, err
	}())

	_, err = f.types.SetThumbnail(f.ctx, f.g, at.ID, assettypes.DocumentRef{DocumentID: model.ID(manual)})
	wantField(t, err, "document_id")
	_, err = f.types.SetThumbnail(f.ctx, f.g, at.ID, assettypes.DocumentRef{DocumentID: model.ID(uuid.New())})
	wantField(t, err, "document_id")
	withThumb := servicetest.Must[assettypes.AssetTypeDetail](t)(f.types.SetThumbnail(f.ctx, f.g, at.ID, assettypes.DocumentRef{DocumentID: model.ID(photo)}))
	if withThumb.Thumbnail == nil || withThumb.Thumbnail.ID != photo || *withThumb.ThumbnailDocumentID != photo {
		t.Fatalf("thumbnail = %+v", withThumb.Thumbnail)
	}
	_, err = f.types.UpdateAssetType(f.ctx, f.g, at.ID, assettypes.AssetTypePatch{ThumbnailDocumentID: servicetest.Set(model.ID(manual))})
	wantField(t, err, "thumbnail_document_id")

	// What points at a document, as its owner asks before deleting it.
	referrers := servicetest.Must[[]refs.Ref](t)(f.registry.Referrers(f.ctx, "document", photo, true))
	if len(referrers) != 2 || referrers[0].Kind != "asset_type" || referrers[0].ID != at.ID ||
		!strings.Contains(referrers[0].Label+referrers[1].Label, "thumbnail") || !strings.Contains(referrers[0].Label, "Liftmaster LM-200") {
		t.Errorf("referrers of the photo = %+v", referrers)
	}

	noThumb := servicetest.Must[assettypes.AssetTypeDetail](t)(f.types.UpdateAssetType(f.ctx, f.g, at.ID, assettypes.AssetTypePatch{ThumbnailDocumentID: servicetest.Null[model.UUID]()}))
	if noThumb.Thumbnail != nil || noThumb.ThumbnailDocumentID != nil {
		t.Errorf("thumbnail after null = %+v", noThumb.Thumbnail)
	}
	if err := f.types.DetachDocument(f.ctx, f.g, at.ID, photo); err != nil {
		t.Fatal(err)
	}
	wantKind(t, f.types.DetachDocument(f.ctx, f.g, at.ID, photo), apperr.KindNotFound)
	wantKind(t, f.types.DetachDocument(f.ctx, f.g, uuid.New(), manual), apperr.KindNotFound)
	if refs := servicetest.Must[[]refs.Ref](t)(f.registry.Referrers(f.ctx, "document", photo, true)); len(refs) != 0 {
		t.Errorf("the detached photo is still referenced: %+v", refs)
	}

	// A thumbnail given at create is checked the same way.
	_, err = f.types.CreateAssetType(f.ctx, f.by, assettypes.AssetTypeInput{Brand: "B", Model: "M", ThumbnailDocumentID: model.OptionalID(&manual)})
	wantField(t, err, "thumbnail_document_id")
	withPhoto := servicetest.Must[assettypes.AssetTypeDetail](t)(f.types.CreateAssetType(f.ctx, f.by, assettypes.AssetTypeInput{Brand: "B", Model: "M", ThumbnailDocumentID: model.OptionalID(&photo)}))
	if withPhoto.Thumbnail == nil || withPhoto.Thumbnail.ContentType != "image/png" {
		t.Errorf("created with thumbnail: %+v", withPhoto.Thumbnail)
	}
	// Deleting the type takes its attachments and thumbnail choice along.
	if err := f.types.DeleteAssetType(f.ctx, f.g, at.ID); err != nil {
		t.Fatal(err)
	}
	if refs := servicetest.Must[[]refs.Ref](t)(f.registry.Referrers(f.ctx, "document", manual, true)); len(refs) != 0 {
		t.Errorf("attachments survived their type: %+v", refs)
	}
}

func TestAssetLifecycle(t *testing.T) {
	t.Parallel()
	f := newFixture(t, testkit.RedisURL(t))
	lift := f.assetType(t, "Liftmaster", "LM-200", nil)
	hoist := f.assetType(t, "Hoistco", "H1", nil)
	person := f.person()

	_, err := f.svc.CreateAsset(f.ctx, f.by, AssetInput{SerialNumber: "SN-1", AssetTypeID: model.ID(uuid.New())})
	wantField(t, err, "asset_type_id")
	_, err = f.svc.CreateAsset(f.ctx, f.by, AssetInput{SerialNumber: "SN-1", AssetTypeID: model.ID(lift.ID), ResponsiblePersonID: model.OptionalID(new(uuid.New()))})
	wantField(t, err, "responsible_person_id")

	a := servicetest.Must[Asset](t)(f.svc.CreateAsset(f.ctx, f.by, AssetInput{SerialNumber: " SN-1 ", AssetTypeID: model.ID(lift.ID), ProductionYear: new(2021),
		Status: new("in service"), ResponsiblePersonID: model.OptionalID(&person)}))
	if a.SerialNumber != "SN-1" || *a.ResponsiblePersonID != person || *a.ProductionYear != 2021 || a.ExternalIDs == nil {
		t.Fatalf("created = %+v", a)
	}
	_, err = f.svc.CreateAsset(f.ctx, f.by, AssetInput{SerialNumber: "SN-1", AssetTypeID: model.ID(lift.ID)})
	if e := wantKind(t, err, apperr.KindConflict); e.Extensions["existing_id"] != a.ID.String() {
		t.Errorf("duplicate: %v", e.Extensions)
	}
	other := f.asset(t, hoist.ID, "SN-1") // the same serial number in another type

	// What points at a person, as parties asks before deleting them.
	referrers := servicetest.Must[[]refs.Ref](t)(f.registry.Referrers(f.ctx, "person", person, true))
	if len(referrers) != 1 || referrers[0].Kind != "asset" || referrers[0].ID != a.ID || referrers[0].Label != "serial number SN-1" {
		t.Errorf("referrers of the person = %+v", referrers)
	}

	_, err = f.svc.UpdateAsset(f.ctx, f.g, a.ID, AssetPatch{ResponsiblePersonID: servicetest.Set(model.ID(uuid.New()))})
	wantField(t, err, "responsible_person_id")
	_, err = f.svc.UpdateAsset(f.ctx, f.g, a.ID, AssetPatch{AssetTypeID: servicetest.Set(model.ID(uuid.New()))})
	wantField(t, err, "asset_type_id")
	_, err = f.svc.UpdateAsset(f.ctx, f.g, other.ID, AssetPatch{AssetTypeID: servicetest.Set(model.ID(lift.ID))})
	if e := wantKind(t, err, apperr.KindConflict); e.Extensions["existing_id"] != a.ID.String() {
		t.Errorf("moving onto a held serial number: %v", e.Extensions)
	}
	// The person check is made against the parties service only when the
	// person changes: an unchanged one is referenced already.
	f.people.Remove("person", person)
	updated := servicetest.Must[Asset](t)(f.svc.UpdateAsset(f.ctx, f.g, a.ID, AssetPatch{Status: servicetest.Set("retired")}))
	if *updated.Status != "retired" || *updated.ResponsiblePersonID != person || !updated.UpdatedAt.After(a.UpdatedAt) {
		t.Errorf("updated = %+v", updated)
	}
	cleared := servicetest.Must[Asset](t)(f.svc.UpdateAsset(f.ctx, f.g, a.ID, AssetPatch{ResponsiblePersonID: servicetest.Null[model.UUID](),
		ProductionYear: servicetest.Null[int]()}))
	if cleared.ResponsiblePersonID != nil || cleared.ProductionYear != nil {
		t.Errorf("cleared = %+v", cleared)
	}

	list := servicetest.Must[model.Paged[Asset]](t)(f.svc.ListAssets(f.ctx, f.by, AssetFilter{SerialNumber: new("SN-1")}, model.Page{Limit: 10}))
	if len(list.Items) != 2 || list.Items[0].ID != a.ID {
		t.Errorf("by serial number: %+v", list.Items)
	}
	list = servicetest.Must[model.Paged[Asset]](t)(f.svc.ListAssets(f.ctx, f.by, AssetFilter{AssetTypeID: &hoist.ID}, model.Page{Limit: 10}))
	if len(list.Items) != 1 || list.Items[0].ID != other.ID {
		t.Errorf("by type: %+v", list.Items)
	}

	if err := f.svc.DeleteAsset(f.ctx, f.g, a.ID); err != nil {
		t.Fatal(err)
	}
	_, err = f.svc.GetAsset(f.ctx, f.by, a.ID)
	wantKind(t, err, apperr.KindNotFound)
	wantKind(t, f.svc.DeleteAsset(f.ctx, f.g, a.ID), apperr.KindNotFound)
}

// An asset type with assets cannot go: the foreign key refuses, and the
// 409 names the assets.
func TestDeleteAssetTypeWithAssets(t *testing.T) {
	t.Parallel()
	f := newFixture(t, testkit.RedisURL(t))
	at := f.assetType(t, "Liftmaster", "LM-200", nil)
	a := f.asset(t, at.ID, "SN-1")
	err := f.types.DeleteAssetType(f.ctx, f.g, at.ID)
	e := wantKind(t, err, apperr.KindConflict)
	listed, _ := e.Extensions["referenced_by"].([]map[string]any)
	if e.Code != "still-referenced" || !strings.Contains(e.Detail, a.ID.String()) || !strings.Contains(e.Detail, "SN-1") ||
		len(listed) != 1 || listed[0]["kind"] != "asset" {
		t.Fatalf("refusal = %+v", e)
	}
	// The refused delete left no mark: the type is still there and usable.
	f.asset(t, at.ID, "SN-2")
	for _, serial := range []string{"SN-1", "SN-2"} {
		found, _, err := f.svc.FindAsset(f.ctx, f.by, AssetQuery{SerialNumber: serial}, false)
		if err != nil {
			t.Fatal(err)
		}
		if err := f.svc.DeleteAsset(f.ctx, f.g, found.ID); err != nil {
			t.Fatal(err)
		}
	}
	if err := f.types.DeleteAssetType(f.ctx, f.g, at.ID); err != nil {
		t.Fatalf("delete without assets: %v", err)
	}
}

func TestFindAsset(t *testing.T) {
	t.Parallel()
	f := newFixture(t, testkit.RedisURL(t))
	v1 := f.assetType(t, "Liftmaster", "LM-200", new("1"))
	v2 := f.assetType(t, "Liftmaster", "LM-200", new("2"))
	hoist := f.assetType(t, "Hoistco", "H1", nil)
	a1 := f.asset(t, v1.ID, "SN-1")
	f.asset(t, hoist.ID, "SN-1")
	find := func(q AssetQuery, create bool) (Asset, bool, error) { return f.svc.FindAsset(f.ctx, f.by, q, create) }

	got, created, err := find(AssetQuery{SerialNumber: "SN-1", Brand: new("liftmaster"), Model: new("lm-200")}, false)
	if err != nil || created || got.ID != a1.ID {
		t.Fatalf("by brand and model: %v %v %v", got.ID, created, err)
	}
	_, _, err = find(AssetQuery{SerialNumber: "SN-1"}, false)
	if e := wantKind(t, err, apperr.KindConflict); e.Code != "ambiguous-match" || len(e.Extensions["candidates"].([]any)) != 2 {
		t.Errorf("serial number in two types: %+v", e)
	}
	_, _, err = find(AssetQuery{SerialNumber: "SN-1"}, true)
	wantKind(t, err, apperr.KindConflict)
	_, _, err = find(AssetQuery{SerialNumber: "SN-9"}, false)
	wantKind(t, err, apperr.KindNotFound)
	_, _, err = find(AssetQuery{SerialNumber: "SN-1", Brand: new("Liftmaster"), Model: new("LM-200"), Version: new("2")}, false)
	wantKind(t, err, apperr.KindNotFound)

	// Creating needs a type: named, existing and only one.
	_, _, err = find(AssetQuery{SerialNumber: "SN-9"}, true)
	wantField(t, err, "brand")
	_, _, err = find(AssetQuery{SerialNumber: "SN-9", Brand: new("Nobody"), Model: new("LM-200")}, true)
	wantField(t, err, "model")
	_, _, err = find(AssetQuery{SerialNumber: "SN-9", Brand: new("Liftmaster"), Model: new("LM-200")}, true)
	if e := wantKind(t, err, apperr.KindConflict); e.Code != "ambiguous-match" {
		t.Errorf("two versions to create in: %+v", e)
	}
	made, created, err := find(AssetQuery{SerialNumber: "SN-9", Brand: new("LIFTMASTER"), Model: new("LM-200"), Version: new("2")}, true)
	if err != nil || !created || made.AssetTypeID != v2.ID {
		t.Fatalf("create: %+v %v %v", made, created, err)
	}
	again, created, err := find(AssetQuery{SerialNumber: "SN-9", Brand: new("Liftmaster"), Model: new("LM-200"), Version: new("2")}, true)
	if err != nil || created || again.ID != made.ID {
		t.Fatalf("again: %v %v %v", again.ID, created, err)
	}
}

func TestFindAssetCreatesExactlyOnce(t *testing.T) {
	t.Parallel()
	f := newFixture(t, testkit.RedisURL(t))
	at := f.assetType(t, "Liftmaster", "LM-200", nil)
	servicetest.CreatesOnce(t, 50, func(i int) (uuid.UUID, bool, error) {
		// Vary the spelling: the type's name ignores case and space.
		q := AssetQuery{SerialNumber: "SN-RACE", Brand: new("Liftmaster"), Model: new("LM-200")}
		if i%2 == 0 {
			q.Brand, q.Model = new(" LIFTMASTER"), new("lm-200 ")
		}
		a, created, err := f.svc.FindAsset(f.ctx, f.by, q, true)
		return a.ID, created, err
	})
	var count int
	if err := f.store.Pool.QueryRow(t.Context(), "SELECT count(*) FROM assets WHERE asset_type_id = $1", at.ID).Scan(&count); err != nil || count != 1 {
		t.Fatalf("asset rows = %d (%v), want 1", count, err)
	}
}

// The cache must never hide a write: each find below follows a write that
// changes its answer.
func TestFindsSeeEveryWrite(t *testing.T) {
	t.Parallel()
	f := newFixture(t, testkit.RedisURL(t))
	at := f.assetType(t, "Liftmaster", "LM-200", nil)
	a := f.asset(t, at.ID, "SN-1")
	byName := AssetQuery{SerialNumber: "SN-1", Brand: new("Liftmaster"), Model: new("LM-200")}
	find := func(q AssetQuery) (Asset, error) {
		got, _, err := f.svc.FindAsset(f.ctx, f.by, q, false)
		return got, err
	}
	types := func() []assettypes.AssetType {
		return servicetest.Must[[]assettypes.AssetType](t)(f.types.FindAssetTypes(f.ctx, assettypes.BrandAndModel{Brand: "Liftmaster", Model: "LM-200"}))
	}
	servicetest.Must[Asset](t)(find(byName)) // cached from here on
	servicetest.Must[Asset](t)(find(AssetQuery{SerialNumber: "SN-1"}))
	if got := types(); len(got) != 1 || got[0].EmissionClass != nil {
		t.Fatal(got)
	}

	servicetest.Must[Asset](t)(f.svc.UpdateAsset(f.ctx, f.g, a.ID, AssetPatch{Status: servicetest.Set("retired")}))
	if got := servicetest.Must[Asset](t)(find(byName)); got.Status == nil || *got.Status != "retired" {
		t.Fatalf("after an update, find says %+v", got.Status)
	}
	// Another type with the serial number makes the serial-only find ambiguous.
	hoist := f.assetType(t, "Hoistco", "H1", nil)
	f.asset(t, hoist.ID, "SN-1")
	_, err := find(AssetQuery{SerialNumber: "SN-1"})
	wantKind(t, err, apperr.KindConflict)
	// Renaming the type moves its assets to other criteria.
	servicetest.Must[assettypes.AssetTypeDetail](t)(f.types.UpdateAssetType(f.ctx, f.g, at.ID, assettypes.AssetTypePatch{Model: servicetest.Set("LM-201")}))
	_, err = find(byName)
	wantKind(t, err, apperr.KindNotFound)
	if got := types(); len(got) != 0 {
		t.Fatalf("the renamed type is still found by its old model: %+v", got)
	}
	renamed := AssetQuery{SerialNumber: "SN-1", Brand: new("Liftmaster"), Model: new("LM-201")}
	if got := servicetest.Must[Asset](t)(find(renamed)); got.ID != a.ID {
		t.Fatal(got.ID)
	}
	newType := f.assetType(t, "Liftmaster", "LM-200", new("2"))
	if got := types(); len(got) != 1 || got[0].ID != newType.ID {
		t.Fatalf("a new type is not found: %+v", got)
	}
	servicetest.Must[assettypes.AssetTypeDetail](t)(f.types.SetThumbnail(f.ctx, f.g, newType.ID, assettypes.DocumentRef{DocumentID: model.ID(f.document("image/jpeg"))}))
	if got := types(); got[0].ThumbnailDocumentID == nil {
		t.Fatal("the thumbnail is not seen by the type's finds")
	}
	if err := f.svc.DeleteAsset(f.ctx, f.g, a.ID); err != nil {
		t.Fatal(err)
	}
	_, err = find(renamed)
	wantKind(t, err, apperr.KindNotFound)
	if err := f.types.DeleteAssetType(f.ctx, f.g, newType.ID); err != nil {
		t.Fatal(err)
	}
	if got := types(); len(got) != 0 {
		t.Fatalf("a deleted type is still found: %+v", got)
	}
}

func TestFindsWorkWithoutRedis(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "redis://"+servicetest.Unreachable(t)+"/0")
	at := f.assetType(t, "Liftmaster", "LM-200", nil)
	a := f.asset(t, at.ID, "SN-1")
	for range 3 {
		got, _, err := f.svc.FindAsset(f.ctx, f.by, AssetQuery{SerialNumber: "SN-1", Brand: new("liftmaster"), Model: new("lm-200")}, false)
		if err != nil || got.ID != a.ID {
			t.Fatalf("find without Redis: %v, %v", got.ID, err)
		}
		if types, err := f.types.FindAssetTypes(f.ctx, assettypes.BrandAndModel{Brand: "Liftmaster", Model: "LM-200"}); err != nil || len(types) != 1 {
			t.Fatalf("types without Redis: %v, %v", types, err)
		}
	}
}
