package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/assetregistry/registry/pkg/store"
	"github.com/assetregistry/registry/services/events"
	"github.com/assetregistry/registry/services/events/feed"
	"github.com/assetregistry/registry/services/events/tlog"
)

// The transparency log's rows: an inclusion proof in a log of
// ten million leaves, and an asset's passport with 100 actions.
const (
	// DefaultLogLeaves is the size of the log the proof row reads.
	DefaultLogLeaves = 10_000_000
	// QuickLogLeaves is the quick run's: seeding and warming ten million
	// leaves took about a minute of make test, for rows whose figures a
	// quick run does not keep.
	QuickLogLeaves = 100_000
	// InclusionRowName measures the events service's store: a proof of a
	// random leaf in a log of Options.LogLeaves leaves, seeded straight into a
	// schema of its own (its tiles, as the consumer would have written
	// them), read from PostgreSQL and hashed.
	InclusionRowName = "log: inclusion proof, 10 million leaves · store"
	// PassportName is an asset's passport with PassportActions actions.
	PassportName    = "GET /assets/{id}/passport, 100 actions"
	PassportActions = 100
)

// logSeed is the seeded log, made once per run (about a minute).
var logSeed struct {
	once sync.Once
	st   seeded
	pool *store.Pool // the schema's, for the store without the log (UnloggedStoreRow)
	err  error
}

// seeded is the feed's store over the seeded log and the log's store it
// appends through, as the events service wires them.
type seeded struct {
	*feed.Store
	*logStore
}

type logStore = tlog.Store

func seededLog(ctx context.Context, e *Env) (seeded, error) {
	logSeed.once.Do(func() {
		pool, err := store.OpenAndMigrateSets(ctx, store.Config{URL: e.Stack.DatabaseURL, Schema: "bench_log", MaxConns: 32}, nil,
			store.Migrations(events.Spec().Migrations)...)
		if err != nil {
			logSeed.err = fmt.Errorf("the log's schema: %w", err)
			return
		}
		log := tlog.NewStore(store.New(pool, nil))
		st := seeded{feed.NewStore(store.New(pool, nil), log), log}
		if size, _, err := st.LogState(ctx); err != nil || size != e.LogLeaves {
			for _, sql := range []string{`TRUNCATE log_tiles16, events`, `UPDATE log_state SET size = 0, root = NULL`} {
				if _, err := pool.Exec(ctx, sql); err != nil {
					logSeed.err = err
					return
				}
			}
			if err := seedLog(ctx, pool, log, e.LogLeaves, func(i uint64) []byte { return strconv.AppendUint([]byte(`{"leaf":`), i, 10) }); err != nil {
				logSeed.err = err
				return
			}
		}
		// The row measures a running events service, whose store keeps
		// the tiles above the leaves once a proof has read them (every
		// one of a log this size fits): proofs of one leaf in each of
		// them, 1,024 at a time, as after the service's first 40,000
		// proofs. Cold, a proof reads two tiles, not one, and the first
		// round measured mostly that.
		for first := uint64(0); first < e.LogLeaves; first += warmStride * warmBatch {
			var leaves []uint64
			for leaf := first; leaf < min(first+warmStride*warmBatch, e.LogLeaves); leaf += warmStride {
				leaves = append(leaves, leaf)
			}
			if _, err := st.InclusionProofs(ctx, leaves, e.LogLeaves); err != nil {
				logSeed.err = fmt.Errorf("the log's kept tiles: %w", err)
				return
			}
		}
		logSeed.st, logSeed.pool = st, pool
	})
	return logSeed.st, logSeed.err
}

// warmStride is the leaves under one kept tile (16 × 16: a tile of the
// level above the leaves' tiles); warmBatch the proofs a warming read
// asks at once.
const (
	warmStride = 256
	warmBatch  = 1024
)

// InclusionRow is the proof of a random leaf against the whole log.
var InclusionRow = Row{Name: InclusionRowName, Via: "direct",
	Before: func(ctx context.Context, e *Env) error { _, err := seededLog(ctx, e); return err },
	Op: func(e *Env) (Op, error) {
		return Op{Do: func(ctx context.Context, w *Worker) error {
			st, err := seededLog(ctx, e)
			if err != nil {
				return err
			}
			_, err = st.InclusionProof(ctx, w.Rand.Uint64N(e.LogLeaves), e.LogLeaves)
			return err
		}}, nil
	}}

// passportAsset is the asset the passport rows read, made once per run.
var passportAsset struct {
	once sync.Once
	id   string
	err  error
}

// PassportCall reads the passport of an asset with PassportActions
// actions (one batch), once the log has signed them all. A passport
// takes 100 to 400 ms on this machine: QUICK=1's 300 ms window could end
// before the first answer and count none, so the row has a second.
var PassportCall = Call{Name: PassportName, Service: "events", Limit: RefGet, MinWindow: time.Second,
	Before: func(ctx context.Context, e *Env, _ string) error {
		passportAsset.once.Do(func() { passportAsset.id, passportAsset.err = makePassportAsset(ctx, e) })
		return passportAsset.err
	},
	Request: func(*Env, *Worker) Request {
		return Request{Method: "GET", Path: "/assets/" + passportAsset.id + "/passport", Want: 200}
	}}

func makePassportAsset(ctx context.Context, e *Env) (string, error) {
	body, _ := json.Marshal(map[string]string{"serial_number": "PASSPORT-" + strconv.FormatInt(time.Now().UnixNano(), 36), "asset_type_id": e.AssetTypeID})
	raw, err := e.send(ctx, e.Stack.RegistryURL, Request{Method: "POST", Path: "/assets", Body: body, Want: 201})
	if err != nil {
		return "", err
	}
	var asset struct {
		ID string `json:"id"`
	}
	if err := json.Unmarshal(raw, &asset); err != nil {
		return "", err
	}
	items := make([]map[string]any, PassportActions)
	for i := range items {
		items[i] = map[string]any{"asset_id": asset.ID, "action_type": "expert_control", "performed_at": "2025-03-14", "status_ok": true,
			"person_id": e.PersonIDs[i%len(e.PersonIDs)], "organization_id": e.Orgs[i%len(e.Orgs)]}
	}
	body, _ = json.Marshal(map[string]any{"items": items})
	if _, err := e.send(ctx, e.Stack.RegistryURL, Request{Method: "POST", Path: "/actions/batch", Body: body, Want: 200}); err != nil {
		return "", err
	}
	// The asset, its type and the actions, each one event, all in a
	// signed checkpoint (one is signed within seconds).
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(500 * time.Millisecond) {
		raw, err := e.send(ctx, e.Stack.RegistryURL, Request{Method: "GET", Path: "/assets/" + asset.ID + "/passport", Want: 200})
		var p struct {
			Actions []json.RawMessage `json:"actions"`
		}
		if err == nil && json.Unmarshal(raw, &p) == nil && len(p.Actions) == PassportActions {
			return asset.ID, nil
		}
	}
	return "", fmt.Errorf("the passport of %s does not hold its %d actions within a minute", asset.ID, PassportActions)
}

// The log's share of storing events: a batch of storeBatch events stored
// (the consumer's transaction: the events, their leaves, the tiles), and
// the log's part of it alone (the same number of leaves appended: hashes,
// tiles, state). Both go to the seeded log's schema, so the tree is deep.
const (
	StoreRowName  = "events: 256 events stored with their leaves · store"
	AppendRowName = "log: 256 leaves appended · store"
	storeBatch    = 256
)

// benchBatches numbers the store rows' batches across the whole run.
var benchBatches atomic.Uint64

// benchBatch is a batch of storeBatch events as the consumer receives
// them: their bytes (written out, as a producer's outbox holds them; NATS
// hands the consumer bytes), parsed as the consumer parses them. Every
// batch of the run has ids of its own: the consumer leaves out an event it
// stored before (a redelivery), so ids repeated from an earlier round or
// row measured a store that inserted nothing. A worker's number and calls
// start again in every row and round, so they cannot make the ids.
func benchBatch(w *Worker) []feed.Incoming {
	n := benchBatches.Add(1)
	batch := make([]feed.Incoming, storeBatch)
	now := time.Now().UTC().Format(time.RFC3339Nano)
	for i := range batch {
		id := fmt.Sprintf("%08x-0000-7000-8000-%012x", w.ID, n<<9|uint64(i))
		raw := fmt.Appendf(nil, `{"id":%q,"type":"organization.updated","time":%q,"subject":{"kind":"organization","id":%q},`+
			`"actor":"bench","request_id":%q,"data":{"id":%q,"name":"Bench AS","country":"no"},"changes":{"name":["A","B"]}}`,
			id, now, id, w.Tag, id)
		batch[i], _ = feed.Parse(raw)
		batch[i].StreamSeq = n*storeBatch + uint64(i) + 1
	}
	return batch
}

// benchConsumer is the consumer (and the stream) whose position the store
// rows record with each batch, in the batch's transaction, as the events
// deployable's consumer does.
const benchConsumer = "bench"

// The log's cost in the store itself: the consumer's transaction with the
// log left out, as it was before the log (migration 003), in the same
// schema. StoreRow ÷ this row is what the log takes from the feed's store
// rate, where AppendRow charges the log a transaction of its own.
const UnloggedStoreRowName = "events: 256 events stored, the log left out · store"

// unloggedInsert is the events' insert of StoreFromStream without the leaf
// numbers (the column stays NULL): no log state read, no leaf hashes, no
// tree, no tiles. It is made from the consumer's insert, so that it
// follows it when that changes.
var unloggedInsert = withoutLeaves(feed.InsertEvents)

// leafParts are what withoutLeaves takes out of the consumer's insert, each
// found exactly once: the leaf column, its number, and its return.
var leafParts = []struct{ from, to string }{
	{"(seq, leaf, id,", "(seq, id,"},
	{"(SELECT size FROM log_state) + row_number() OVER (ORDER BY t.n) - 1, ", ""},
	{"RETURNING id::text, leaf", "RETURNING id::text"},
}

// withoutLeaves is insert with leafParts taken out; it panics (when the
// bench's package loads, so its tests fail) when one of them is not in it
// exactly once: the consumer's insert changed, and the row without the log
// must be made again.
func withoutLeaves(insert string) string {
	for _, p := range leafParts {
		if n := strings.Count(insert, p.from); n != 1 {
			panic(fmt.Sprintf("the consumer's insert holds %q %d times: say how the bench leaves its leaves out", p.from, n))
		}
		insert = strings.Replace(insert, p.from, p.to, 1)
	}
	return insert
}

// UnloggedStoreRow stores StoreRow's batch without the log: the stream
// position, the feed's lock and the insert in one round trip, the commit
// in a second.
var UnloggedStoreRow = Row{Name: UnloggedStoreRowName, Via: "direct",
	Before: analyzedLog, Clients: 1,
	Op: func(e *Env) (Op, error) {
		return Op{Do: func(ctx context.Context, w *Worker) error {
			if _, err := seededLog(ctx, e); err != nil {
				return err
			}
			columns := make([][]string, 5)
			var position uint64
			for _, in := range benchBatch(w) {
				for c, v := range []string{in.Event.ID, in.Event.Type, in.Event.Subject.Kind, in.Event.Subject.ID, string(in.Raw)} {
					columns[c] = append(columns[c], v)
				}
				position = max(position, in.StreamSeq)
			}
			return store.InTx(ctx, logSeed.pool, "store events without the log", func(tx pgx.Tx) error {
				b := &pgx.Batch{}
				b.Queue(feed.RecordPosition, benchConsumer, benchConsumer, int64(position))
				b.Queue(tlog.LockFeed)
				// The events' assets and parties: none (the consumer's cost of
				// them is measured by the row with the log).
				b.Queue(unloggedInsert, columns[0], columns[1], columns[2], columns[3], columns[4], []*string(nil), []*string(nil))
				results := tx.SendBatch(ctx, b)
				defer results.Close()
				for range 2 {
					if _, err := results.Exec(); err != nil {
						return err
					}
				}
				rows, err := results.Query()
				if err != nil {
					return err
				}
				var id string
				if _, err := pgx.ForEachRow(rows, []any{&id}, func() error { return nil }); err != nil {
					return err
				}
				return results.Close()
			})
		}}, nil
	}}

// analyzedLog is the seeded log with fresh statistics of its feed, which
// the store rows grow by hundreds of thousands of events a round. Without
// them the planner had the feed's statistics of the seed (empty) until
// autovacuum's analyze came, in the middle of some round or other: the
// store without the log, run after the one with it, went at 4 batches a
// second in round 1 and 239 to 319 afterwards; analyzed first, 182 to 187
// in round 1. A feed in production has statistics of its size.
func analyzedLog(ctx context.Context, e *Env) error {
	if _, err := seededLog(ctx, e); err != nil {
		return err
	}
	_, err := logSeed.pool.Exec(ctx, `ANALYZE events`)
	return err
}

// StoreRow stores a batch as the consumer does (StoreFromStream, the
// stream's position recorded with it): one batch at a time, from one
// client. The consumer is one writer (the leader), so more clients
// measured something the feed never does: their transactions queued on the
// feed's lock.
var StoreRow = Row{Name: StoreRowName, Via: "direct",
	Before: analyzedLog, Paired: UnloggedStoreRowName, Clients: 1,
	Op: func(e *Env) (Op, error) {
		return Op{Do: func(ctx context.Context, w *Worker) error {
			st, err := seededLog(ctx, e)
			if err != nil {
				return err
			}
			_, err = st.StoreFromStream(ctx, &feed.StreamPosition{Consumer: benchConsumer, Stream: benchConsumer}, benchBatch(w))
			return err
		}}, nil
	}}

// appendBatch is what AppendRow appends: the bytes of storeBatch events
// like StoreRow's, made once. What the bytes say does not change what
// appending them costs (their hashes, the tiles, the state), and making
// and parsing events in the bench's process, the producers' and the
// consumer's work, is no part of the log's: it took two thirds of the
// row's client CPU, beside PostgreSQL on the same two cores.
var appendBatch = sync.OnceValue(func() [][]byte {
	var entries [][]byte
	for _, in := range benchBatch(&Worker{Tag: "append"}) {
		entries = append(entries, in.Raw)
	}
	return entries
})

// AppendRow appends as many leaves, the log's part of StoreRow: the leaf
// hashes of the events' bytes, the tiles and the state, in a transaction
// under the feed's lock. A figure of the log alone, in no goal: it pays a
// transaction (lock, commit) the log shares with the events in the store.
var AppendRow = Row{Name: AppendRowName, Via: "direct",
	Before: func(ctx context.Context, e *Env) error { _, err := seededLog(ctx, e); return err },
	Op: func(e *Env) (Op, error) {
		return Op{Do: func(ctx context.Context, w *Worker) error {
			st, err := seededLog(ctx, e)
			if err != nil {
				return err
			}
			return st.AppendEntries(ctx, appendBatch())
		}}, nil
	}}
