package actiontypes_test

import (
	"os"
	"strings"
	"testing"

	"github.com/assetregistry/registry/pkg/apperr"
	"github.com/assetregistry/registry/services/actions"
	"github.com/assetregistry/registry/services/actions/actiontypes"
	"github.com/assetregistry/registry/tools/testkit"
	"github.com/assetregistry/registry/tools/testkit/servicetest"
)

func TestMain(m *testing.M) { os.Exit(testkit.Main(m)) }

func TestNames(t *testing.T) {
	for name, ok := range map[string]bool{
		"load_test": true, "ab": true, "a1_": true, strings.Repeat("a", 64): true,
		"a": false, "": false, "Load_test": false, "1st": false, "_x": false, "load-test": false, "load test": false,
		strings.Repeat("a", 65): false,
	} {
		_, err := actiontypes.ActionTypeInput{Name: name}.Normalize()
		if (err == nil) != ok {
			t.Errorf("%q: err = %v, want ok = %v", name, err, ok)
		}
	}
}

// A type one replica adds is usable on the next call on every other: a
// name a catalog has not seen is looked up again, not refused from memory.
func TestCatalogSeesTypesOtherReplicasAdd(t *testing.T) {
	kit := servicetest.Store(t, actions.Spec())
	ctx := t.Context()
	replicaA, replicaB := actiontypes.NewCatalog(actiontypes.NewStore(kit)), actiontypes.NewCatalog(actiontypes.NewStore(kit))
	for _, builtin := range actiontypes.Builtin {
		if err := replicaA.Check(ctx, "action_type", builtin); err != nil {
			t.Errorf("%s: %v", builtin, err)
		}
	}
	servicetest.WantFields(t, replicaA.Check(ctx, "action_type", "load_test"), "action_type")
	svc := actiontypes.NewService(actiontypes.NewStore(kit))
	if _, err := svc.CreateActionType(ctx, servicetest.Caller("admin"), actiontypes.ActionTypeInput{Name: "load_test"}); err != nil {
		t.Fatal(err)
	}
	for name, c := range map[string]*actiontypes.Catalog{"A": replicaA, "B": replicaB} {
		if err := c.Check(ctx, "action_type", "load_test"); err != nil {
			t.Errorf("replica %s after the add: %v", name, err)
		}
	}
	_, err := svc.CreateActionType(ctx, servicetest.Caller("admin"), actiontypes.ActionTypeInput{Name: "repair"})
	servicetest.WantKind(t, err, apperr.KindConflict)
	names, err := replicaB.Names(ctx)
	if err != nil || strings.Join(names, ",") != "expert_control,load_test,maintenance,pre_use_inspection,repair" {
		t.Errorf("names %v (%v)", names, err)
	}
}
