package actions

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"

	"github.com/google/uuid"

	"github.com/assetregistry/registry/pkg/model"
	"github.com/assetregistry/registry/pkg/refs"
	"github.com/assetregistry/registry/pkg/servicekit"
	"github.com/assetregistry/registry/pkg/store"
	"github.com/assetregistry/registry/tools/testkit/servicetest"
)

// The first page of actions, as the bench's `GET /actions?limit=100, first
// page` rows and its store row read it: through the service's whole
// handler chain in process (BenchmarkHandlerListActions) and as the store
// alone reads and encodes it (BenchmarkStoreListActions), over 200 actions
// copied into the test schema as the bench seeds them. `go test -run '^$'
// -bench ListActions -benchmem ./services/actions/` shows CPU and
// allocations per page; -cpuprofile says where they go.

// seededActions is the service built in process over 200 seeded actions.
func seededActions(b *testing.B) (servicekit.Built, string) {
	b.Helper()
	built, token := servicetest.InProcess(b, Spec())
	ids := make([]uuid.UUID, 200) // in creation order, as the partitions of actions expect
	for i := range ids {
		ids[i] = store.NewID()
	}
	_, err := built.Store.Pool.Exec(b.Context(), `INSERT INTO actions (id, asset_id, action_type, performed_at, status_ok, source_system, created_by, updated_by)
		SELECT id, gen_random_uuid(), ($2::text[])[1 + i % 4], date '2016-01-01' + i::int, i % 2 = 0, 'bench-seed', 'bench', 'bench'
		FROM unnest($1::uuid[]) WITH ORDINALITY AS a(id, i)`, ids, ActionTypes)
	if err != nil {
		b.Fatal(err)
	}
	return built, "Bearer " + token
}

func BenchmarkHandlerListActions(b *testing.B) {
	built, token := seededActions(b)
	path := "/actions?limit=" + strconv.Itoa(model.DefaultLimit)
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		r := httptest.NewRequestWithContext(ctx, http.MethodGet, path, nil)
		r.Header["Authorization"] = []string{token}
		w := httptest.NewRecorder()
		built.Handler.ServeHTTP(w, r)
		if w.Code != http.StatusOK {
			b.Fatalf("GET %s: %d %s", path, w.Code, w.Body)
		}
	}
}

func BenchmarkStoreListActions(b *testing.B) {
	built, _ := seededActions(b)
	st := NewStore(built.Store, refs.New("actions", built.Store, nil))
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		page, err := st.ListActions(ctx, ActionFilter{}, model.Page{Limit: model.DefaultLimit})
		if err != nil || len(page.Items) != model.DefaultLimit {
			b.Fatalf("%d actions, %v", len(page.Items), err)
		}
		if err := model.EncodeJSON(io.Discard, page.Items); err != nil {
			b.Fatal(err)
		}
	}
}
