package actions

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/assetregistry/registry/pkg/outbox"
	"github.com/assetregistry/registry/pkg/refs"
	"github.com/assetregistry/registry/pkg/servicekit"
	"github.com/assetregistry/registry/pkg/store"
	"github.com/assetregistry/registry/services/actions/compliance"
	"github.com/assetregistry/registry/services/actions/compliance/projection"
	"github.com/assetregistry/registry/tools/testkit"
	"github.com/assetregistry/registry/tools/testkit/servicetest"
)

// assetHistory is the events of a few assets' lives, oldest first, and
// the rows known_assets must hold after them, whatever order they come in
// and however often.
func assetHistory() (events []outbox.Event, want []string) {
	typeA, typeB := uuid.Must(uuid.NewV7()), uuid.Must(uuid.NewV7())
	kept, moved, gone, late := uuid.Must(uuid.NewV7()), uuid.Must(uuid.NewV7()), uuid.Must(uuid.NewV7()), uuid.Must(uuid.NewV7())
	event := func(asset uuid.UUID, op string, assetType uuid.UUID) outbox.Event {
		data, _ := json.Marshal(map[string]any{"id": asset, "asset_type_id": assetType, "serial_number": "SN"})
		return outbox.Event{ID: uuid.Must(uuid.NewV7()).String(), Type: outbox.KindAsset + "." + op, Time: time.Now().UTC(),
			Subject: outbox.EventSubject{Kind: outbox.KindAsset, ID: asset.String()}, Actor: "rw-client", Data: data}
	}
	events = []outbox.Event{
		event(kept, outbox.OpCreated, typeA),
		event(moved, outbox.OpCreated, typeA),
		event(gone, outbox.OpCreated, typeA),
		event(moved, outbox.OpUpdated, typeB),
		event(kept, outbox.OpUpdated, typeA), // a change of something else
		event(gone, outbox.OpDeleted, typeA),
		event(late, outbox.OpCreated, typeB),
		event(moved, outbox.OpUpdated, typeA),
	}
	want = []string{
		fmt.Sprintf("%s %s live", kept, typeA), fmt.Sprintf("%s %s live", moved, typeA),
		fmt.Sprintf("%s deleted", gone), fmt.Sprintf("%s %s live", late, typeB),
	}
	slices.Sort(want)
	return events, want
}

// knownAssets is known_assets as sorted text.
func knownAssets(t *testing.T, w world) []string {
	out := texts(t, w, `SELECT asset_id::text || CASE WHEN deleted THEN ' deleted' ELSE ' ' || asset_type_id::text || ' live' END
		FROM known_assets`)
	slices.Sort(out)
	return out
}

// texts are the rows of a query of one text column.
func texts(t *testing.T, w world, query string) []string {
	t.Helper()
	return textRows(t, w.Built.Store.Pool, query)
}

// textRows are the rows of a query of one text column on db.
func textRows(t *testing.T, db *store.Pool, query string, args ...any) []string {
	t.Helper()
	rows, err := db.Query(context.Background(), query, args...)
	if err != nil {
		t.Fatal(err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// Replayed in any order, and twice, the events give the same rows.
func TestProjectionOrderAndReplay(t *testing.T) {
	t.Parallel()
	events, want := assetHistory()
	orders := map[string][]outbox.Event{
		"in order":      events,
		"reversed":      reversed(events),
		"twice":         append(slices.Clone(events), events...),
		"shuffled":      shuffled(events, 1),
		"shuffled, x2":  append(shuffled(events, 2), shuffled(events, 3)...),
		"creates last":  append(slices.Clone(events[3:]), events[:3]...),
		"deletes first": append([]outbox.Event{events[5]}, append(slices.Clone(events[:5]), events[6:]...)...),
	}
	for name, order := range orders {
		t.Run(name, func(t *testing.T) {
			w := newWorld(t)
			p := projection.New(projection.NewStore(w.Built.Store))
			for _, e := range order {
				ev, ok, err := projection.AssetEventOf(e)
				if err != nil || !ok {
					t.Fatalf("%s: %v %v", e.Type, ok, err)
				}
				if err := p.ApplyAsset(context.Background(), ev); err != nil {
					t.Fatal(err)
				}
			}
			if got := knownAssets(t, w); !slices.Equal(got, want) {
				t.Errorf("rows:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
			}
		})
	}
}

func reversed(events []outbox.Event) []outbox.Event {
	out := slices.Clone(events)
	slices.Reverse(out)
	return out
}

func shuffled(events []outbox.Event, seed uint64) []outbox.Event {
	out := slices.Clone(events)
	r := rand.New(rand.NewPCG(seed, 7))
	r.Shuffle(len(out), func(i, j int) { out[i], out[j] = out[j], out[i] })
	return out
}

// The service follows the asset events of a real JetStream stream: events
// published out of order and twice (the second time as new messages, as
// after a relay's crash outside the deduplication window) end in the same
// rows, and GET /compliance shows the assets.
func TestProjectionFollowsStream(t *testing.T) {
	t.Parallel()
	stream := testkit.NATS(t)
	events, want := assetHistory()
	w := world{Service: servicetest.Start(t, Spec(), func(c *servicekit.Config) {
		c.Events = outbox.Config{URL: stream.URL, User: stream.User, Password: stream.Password,
			Stream: stream.Stream, SubjectPrefix: stream.SubjectPrefix}
	})}
	nc := stream.Connect(t)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	// The service's relay creates the stream too; whoever comes first.
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: stream.Stream, Subjects: []string{stream.SubjectPrefix + ".>"}}); err != nil &&
		!errors.Is(err, jetstream.ErrStreamNameAlreadyInUse) {
		t.Fatal(err)
	}
	publish := func(e outbox.Event, msgID string) {
		body, _ := json.Marshal(e)
		msg := nats.NewMsg(stream.SubjectPrefix + "." + e.Subject.Kind + "." + e.Subject.ID)
		msg.Data = body
		if msgID != "" {
			msg.Header.Set(jetstream.MsgIDHeader, msgID)
		}
		if _, err := js.PublishMsg(ctx, msg); err != nil {
			t.Fatal(err)
		}
	}
	// Another kind's event on the same stream is not the projection's.
	publish(outbox.Event{ID: uuid.Must(uuid.NewV7()).String(), Type: "person.created", Subject: outbox.EventSubject{Kind: "person", ID: uuid.NewString()}}, "")
	for _, e := range shuffled(events, 4) {
		publish(e, e.ID)
	}
	for _, e := range reversed(events) {
		publish(e, "")
	}
	deadline := time.Now().Add(10 * time.Second)
	for got := knownAssets(t, w); !slices.Equal(got, want); got = knownAssets(t, w) {
		if time.Now().After(deadline) {
			t.Fatalf("after 10 s the rows are\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
		time.Sleep(50 * time.Millisecond)
	}
	if rows := w.Call(200, "GET", "/compliance?action_type=repair", w.RO, nil).List(); len(rows) != 3 {
		t.Errorf("compliance rows of the three live assets: %v", rows)
	}
}

// A rebuild from the assets service's listing and the actions table gives
// the rows the live model has, and drops what the listing does not have.
func TestProjectionRebuild(t *testing.T) {
	w := newComplianceWorld(t)
	w.StandIn("assets").Remove("asset", uuid.MustParse(w.world.asset)) // not in the projection
	var assets []string
	for range 5 {
		id := w.asset(t)
		assets = append(assets, id)
		w.StandIn("assets").Add("asset", uuid.MustParse(id), refs.Attrs{"asset_type_id": w.assetType.String()})
	}
	for i, asset := range assets[:4] {
		for j, actionType := range ActionTypes[:i+1] {
			w.Call(201, "POST", "/actions", w.RW, map[string]any{"asset_id": asset, "action_type": actionType,
				"performed_at": fmt.Sprintf("2025-0%d-0%d", i+1, j+1), "status_ok": j != 2, "status_finalized": true,
				"status_valid_through": fmt.Sprintf("%d-01-01", 2024+i+j)})
		}
	}
	w.applyAsset(t, uuid.MustParse(assets[4]), w.assetType, outbox.OpDeleted)
	w.StandIn("assets").Remove("asset", uuid.MustParse(assets[4]))
	live := w.rows(t, "", 0)
	latest := latestRows(t, w)
	if len(live) != 16 || len(latest) != 10 {
		t.Fatalf("live model: %d rows, %d latest actions", len(live), len(latest))
	}

	// Rows the rebuild must drop: an asset the assets service does not
	// have (its delete event lost), and a latest action of nothing.
	stray := uuid.Must(uuid.NewV7())
	if _, err := w.Built.Store.Pool.Exec(context.Background(), `INSERT INTO known_assets (asset_id, asset_type_id, event_id) VALUES ($1, $2, $3)`,
		stray, w.assetType, compliance.UUIDAt(time.Now().Add(-time.Hour))); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Built.Store.Pool.Exec(context.Background(), `UPDATE latest_actions SET class = 'failed' WHERE true`); err != nil {
		t.Fatal(err)
	}

	registry := refs.New("actions", w.Built.Store, w.Built.Deps.Peers)
	report, err := projection.New(projection.NewStore(w.Built.Store)).Rebuild(context.Background(), ListAssetsOf(registry))
	if err != nil {
		t.Fatal(err)
	}
	if report.Assets != 4 || report.Latest != 10 {
		t.Errorf("report: %+v", report)
	}
	if got := w.rows(t, "", 0); fmt.Sprint(got) != fmt.Sprint(live) {
		t.Errorf("rebuilt:\n%v\nlive:\n%v", got, live)
	}
	if got := latestRows(t, w); !slices.Equal(got, latest) {
		t.Errorf("latest actions rebuilt:\n%v\nlive:\n%v", got, latest)
	}
	// An event older than the rebuild's floor changes nothing: the
	// listing has it already.
	if err := projection.New(projection.NewStore(w.Built.Store)).ApplyAsset(context.Background(), projection.AssetEvent{
		ID: compliance.UUIDAt(time.Now().Add(-2 * projection.RebuildMargin)), AssetID: uuid.MustParse(assets[0]), AssetTypeID: uuid.New(), Op: outbox.OpUpdated,
	}); err != nil {
		t.Fatal(err)
	}
	if got := w.rows(t, "", 0); fmt.Sprint(got) != fmt.Sprint(live) {
		t.Errorf("an event older than the floor changed the rows:\n%v", got)
	}
}

// latestRows is latest_actions as sorted text.
func latestRows(t *testing.T, w complianceWorld) []string {
	return texts(t, w.world, `SELECT concat_ws(' ', asset_id, action_type, action_id, performed_at,
		status_ok, status_use_ok, valid_through, class) FROM latest_actions ORDER BY 1`)
}

// The rebuild goes through more assets than one batch holds and comes to
// what one statement over every action makes: each pair's latest
// finalized action, and no row of a pair without one (before, between and
// after the batches' assets).
func TestRebuildLatestInBatchesMatchesOneStatement(t *testing.T) {
	w := newComplianceWorld(t)
	ctx := t.Context()
	pool := w.Built.Store.Pool
	// Ids are UUIDv7 of now, as the service makes them (actions are
	// partitioned by their time).
	if _, err := pool.Exec(ctx, `INSERT INTO actions (id, asset_id, action_type, performed_at, status_ok, status_use_ok,
			status_finalized, status_valid_through, created_by, updated_by)
		SELECT (lpad(to_hex((extract(epoch FROM now()) * 1000)::bigint), 12, '0') || '7' || substr(md5(n::text), 1, 3) || '8' || substr(md5(n::text), 4, 15))::uuid,
			asset, ($2::text[])[1 + (n % 3)], date '2024-01-01' + (n % 400), n % 7 <> 0, n % 5 <> 0,
			n % 11 <> 0, CASE WHEN n % 4 = 0 THEN NULL ELSE date '2026-01-01' + (n % 900) END, 'test', 'test'
		FROM (SELECT n, ('00000000-0000-7000-8000-' || lpad(to_hex(n % $1), 12, '0'))::uuid AS asset FROM generate_series(1, $1 * 3) n) s`,
		2*compliance.RebuildBatch+37, ActionTypes[:3]); err != nil {
		t.Fatal(err)
	}
	// Rows of nothing: before every asset, between two, after the last.
	for _, asset := range []string{"00000000-0000-0000-0000-000000000001", "00000000-0000-7000-8000-0000000001f4", "ffffffff-ffff-7fff-bfff-ffffffffffff"} {
		if _, err := pool.Exec(ctx, `INSERT INTO latest_actions (asset_id, action_type, action_id, performed_at, class)
			VALUES ($1, 'zz-nothing', gen_random_uuid(), '2020-01-01', 'failed') ON CONFLICT DO NOTHING`, asset); err != nil {
			t.Fatal(err)
		}
	}
	st := compliance.NewStore(w.Built.Store)
	n, err := st.RebuildLatest(ctx)
	if err != nil {
		t.Fatal(err)
	}
	batched := latestRows(t, w)
	if _, err := pool.Exec(ctx, `DELETE FROM latest_actions; `+compliance.RebuildLatestSQL); err != nil {
		t.Fatal(err)
	}
	whole := latestRows(t, w)
	if len(whole) < 3*compliance.RebuildBatch || int64(len(whole)) != n {
		t.Errorf("the rebuild wrote %d rows; one statement %d (want over %d: several batches)", n, len(whole), 3*compliance.RebuildBatch)
	}
	if !slices.Equal(batched, whole) {
		t.Errorf("the batched rebuild differs from one statement: %d rows against %d", len(batched), len(whole))
	}
}
