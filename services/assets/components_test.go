package assets

import (
	"sync"
	"testing"

	"github.com/google/uuid"

	"github.com/assetregistry/registry/pkg/apperr"
	"github.com/assetregistry/registry/pkg/model"
	"github.com/assetregistry/registry/tools/testkit"
	"github.com/assetregistry/registry/tools/testkit/servicetest"
)

func (f fixture) component(t *testing.T, typeID uuid.UUID, serial string, parent uuid.UUID) Asset {
	t.Helper()
	return servicetest.Must[Asset](t)(f.svc.CreateAsset(f.ctx, f.by, AssetInput{SerialNumber: serial, AssetTypeID: model.ID(typeID),
		ParentAssetID: model.OptionalID(&parent)}))
}

// A parent must exist and must not be the asset or one of its components;
// the list by parent names the components; an asset that has components
// cannot be deleted.
func TestComponents(t *testing.T) {
	t.Parallel()
	f := newFixture(t, testkit.RedisURL(t))
	typ := f.assetType(t, "Liftmaster", "LM-300", nil)
	crane := f.asset(t, typ.ID, "CRANE")
	hoist := f.component(t, typ.ID, "HOIST", crane.ID)
	hook := f.component(t, typ.ID, "HOOK", hoist.ID)
	if hoist.ParentAssetID == nil || *hoist.ParentAssetID != crane.ID {
		t.Fatalf("created component = %+v", hoist)
	}

	_, err := f.svc.CreateAsset(f.ctx, f.by, AssetInput{SerialNumber: "X", AssetTypeID: model.ID(typ.ID), ParentAssetID: model.OptionalID(new(uuid.New()))})
	wantField(t, err, "parent_asset_id")
	for name, parent := range map[string]uuid.UUID{"itself": crane.ID, "its component": hoist.ID, "a component's component": hook.ID} {
		_, err := f.svc.UpdateAsset(f.ctx, f.g, crane.ID, AssetPatch{ParentAssetID: servicetest.Set(model.ID(parent))})
		if e := wantKind(t, err, apperr.KindInvalid); len(e.Fields) != 1 || e.Fields[0].Field != "parent_asset_id" {
			t.Errorf("%s as parent: %+v", name, e.Fields)
		}
	}
	_, err = f.svc.UpdateAsset(f.ctx, f.g, hook.ID, AssetPatch{ParentAssetID: servicetest.Set(model.ID(uuid.New()))})
	wantField(t, err, "parent_asset_id")

	list := servicetest.Must[model.Paged[Asset]](t)(f.svc.ListAssets(f.ctx, model.Caller{}, AssetFilter{ParentAssetID: &crane.ID}, model.Page{Limit: 10}))
	if len(list.Items) != 1 || list.Items[0].ID != hoist.ID {
		t.Errorf("components of the crane: %+v", list.Items)
	}

	err = f.svc.DeleteAsset(f.ctx, f.g, hoist.ID)
	if e := wantKind(t, err, apperr.KindConflict); e.Detail == "" {
		t.Errorf("delete with a component: %+v", e)
	}
	// The hook moves up to the crane, then out; the hoist can go then.
	moved := servicetest.Must[Asset](t)(f.svc.UpdateAsset(f.ctx, f.g, hook.ID, AssetPatch{ParentAssetID: servicetest.Set(model.ID(crane.ID))}))
	if *moved.ParentAssetID != crane.ID {
		t.Errorf("moved = %+v", moved)
	}
	removed := servicetest.Must[Asset](t)(f.svc.UpdateAsset(f.ctx, f.g, hook.ID, AssetPatch{ParentAssetID: servicetest.Null[model.UUID]()}))
	if removed.ParentAssetID != nil {
		t.Errorf("removed = %+v", removed)
	}
	if err := f.svc.DeleteAsset(f.ctx, f.g, hoist.ID); err != nil {
		t.Fatal(err)
	}
}

// Two moves that would close a cycle together never both pass. With Y a
// component of Z and W one of X, "X under Y" and "Z under W" each look
// fine alone and lock different rows, but together make X, Y, Z, W a
// cycle: the parent moves take turns, so the second sees the first.
func TestConcurrentMovesMakeNoCycle(t *testing.T) {
	t.Parallel()
	f := newFixture(t, testkit.RedisURL(t))
	typ := f.assetType(t, "Liftmaster", "LM-400", nil)
	for round := range 15 {
		name := func(s string) string { return s + "-" + string(rune('a'+round)) }
		x, z := f.asset(t, typ.ID, name("X")), f.asset(t, typ.ID, name("Z"))
		y, w := f.component(t, typ.ID, name("Y"), z.ID), f.component(t, typ.ID, name("W"), x.ID)
		start := make(chan struct{})
		errs := make([]error, 2)
		var wg sync.WaitGroup
		for i, move := range [][2]uuid.UUID{{x.ID, y.ID}, {z.ID, w.ID}} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				_, errs[i] = f.svc.UpdateAsset(f.ctx, f.g, move[0], AssetPatch{ParentAssetID: servicetest.Set(model.ID(move[1]))})
			}()
		}
		close(start)
		wg.Wait()
		passed := 0
		for _, err := range errs {
			if err == nil {
				passed++
				continue
			}
			wantField(t, err, "parent_asset_id")
		}
		if passed != 1 {
			t.Fatalf("round %d: %d of the two moves that close a cycle passed (%v)", round, passed, errs)
		}
	}
}

// A component installed or removed shows in the parent's history: an
// asset_component event whose subject id is the parent's; the component's
// own asset.updated carries parent_asset_id.
func TestComponentEvents(t *testing.T) {
	s := servicetest.StartParallel(t, Spec())
	typ := s.Call(201, "POST", "/asset_types", s.RW, liftmaster).JSON()["id"].(string)
	parent := s.Call(201, "POST", "/assets", s.RW, map[string]any{"asset_type_id": typ, "serial_number": "P"}).JSON()["id"].(string)
	child := s.Call(201, "POST", "/assets", s.RW, map[string]any{"asset_type_id": typ, "serial_number": "C"}).JSON()["id"].(string)
	s.Events(t) // what came before
	s.Call(200, "PATCH", "/assets/"+child, s.RW, map[string]any{"parent_asset_id": parent})
	s.WantEvents(t, "rw-client",
		servicetest.Event{Type: "asset_component.created", ID: parent, Data: s.GET("/assets/" + child)},
		servicetest.Event{Type: "asset.updated", ID: child, Data: s.GET("/assets/" + child), Changes: []string{"parent_asset_id", "updated_at"}})
	if list := s.Call(200, "GET", "/assets?parent_asset_id="+parent, s.RO, nil).List(); len(list) != 1 || list[0]["id"] != child {
		t.Errorf("components of the parent: %v", list)
	}
	s.Call(409, "DELETE", "/assets/"+parent, s.RW, nil)
	s.WantEvents(t, "rw-client")
	gone := s.GET("/assets/" + child)
	s.Call(204, "DELETE", "/assets/"+child, s.RW, nil)
	s.WantEvents(t, "rw-client",
		servicetest.Event{Type: "asset_component.deleted", ID: parent, Data: gone},
		servicetest.Event{Type: "asset.deleted", ID: child, Data: gone})
}
