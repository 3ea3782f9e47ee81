package refs

// The referrer's side of the protocol. Nothing of it that runs inside a
// write's transaction calls another service: a transaction held across a
// peer's answer would hold a connection of the pool and the targets'
// locks for as long as the peer takes, and a store is the code that speaks
// only SQL. The owners are asked by the service, with nothing held, and
// the store's transaction only confirms (docs/references.md, "References
// kept whole", gives the whole argument):
//
//   - Remembered answers. An owner's "it exists" is remembered in the
//     referrer's own schema (ref_targets, alive, with a version from one
//     sequence). The owner's delete always asks this service what points at
//     the target (Referrers with settle), and that question first marks the
//     row not alive, with a new version, in a committed transaction of its
//     own, before it takes the target's exclusive lock. A write that finds
//     the row alive after taking the target's shared lock needs no ask:
//     either the delete's mark came later, and then the delete's question
//     waits for the write's lock and sees the write (409), or the mark came
//     earlier and the write would have seen it.
//   - Asking before the transaction. Ask reads the rows (no transaction)
//     and asks the owners, each once for all it names; Confirm, in the
//     write's transaction, takes the locks and reads the rows again. An
//     answer got before the lock is trusted only when the row's version
//     did not change in between: a delete that could still succeed marked
//     the row after its owner stopped saying "exists", so after the
//     answer, and before its exclusive lock, so before a lock taken later
//     than it.
//   - Asking again, never under the lock. A target neither remembered nor
//     answered with its row unchanged makes Confirm answer ErrAskFirst: the
//     write's transaction is undone, and Checking asks the owners about the
//     targets it named, with nothing held, and runs the write again, a few
//     times at most (MaxAsks; then a 503 with Retry-After).

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/assetregistry/registry/pkg/apperr"
	"github.com/assetregistry/registry/pkg/catalog"
	"github.com/assetregistry/registry/pkg/model"
	"github.com/assetregistry/registry/pkg/store"
)

// Target is a reference a write is about to make: Field names it for the
// 422 when the target does not exist.
type Target struct {
	Field string
	Kind  string
	ID    uuid.UUID
}

// Key names a target: the same id asked as two kinds (a person's id given
// as an organization) exists only as the kind its owner has it as.
type Key struct {
	Kind string
	ID   uuid.UUID
}

func (t Target) key() Key { return Key{t.Kind, t.ID} }

// Ask is one kind's ids in a question to an owner.
type Ask struct {
	Kind string      `json:"kind"`
	IDs  []uuid.UUID `json:"ids"`
}

// ErrAskFirst is Confirm's answer when some target is neither remembered
// alive nor answered by its owner since its row last changed: the write
// should end its transaction, ask the owners with nothing held (Ask), then
// write again, as Checking does. The error Confirm returns is an *AskFirst
// naming the check's targets; it matches ErrAskFirst with errors.Is.
var ErrAskFirst = errors.New("refs: some targets must be asked about before the transaction")

// AskFirst is ErrAskFirst for the targets of one check: what Checking asks
// the owners about before it runs the write again.
type AskFirst struct{ Targets []Target }

func (e *AskFirst) Error() string        { return ErrAskFirst.Error() }
func (e *AskFirst) Is(target error) bool { return target == ErrAskFirst }

// Remembered is a check that trusts only what this service remembers:
// Confirm answers ErrAskFirst for any other target. It is the first try of
// a write whose targets are usually remembered: no read before the
// transaction, no ask.
func (r *Registry) Remembered(targets ...Target) *Checked {
	return &Checked{r: r, targets: targets}
}

// MaxAsks bounds how many times Checking asks the owners for one write.
// A write asks again only when a target's row changed between the ask and
// its transaction (a delete's question marked it meanwhile) or when the
// targets themselves changed (a patch that read a row another write had
// changed since): a target that keeps changing past this is a 503 with
// Retry-After (retryLater), with nothing written, and the client tries
// again.
const MaxAsks = 3

// retryLater is the answer of a write Checking gives up on: a 503 with
// Retry-After, since nothing was written and the same request will most
// likely go through a moment later. why ends the detail.
func retryLater(targets []Target, why string, cause error) error {
	fields := make([]string, 0, len(targets))
	for _, t := range targets {
		if !slices.Contains(fields, t.Field) {
			fields = append(fields, t.Field)
		}
	}
	return apperr.Wrap(apperr.KindUnavailable, "the references of this write ("+strings.Join(fields, ", ")+") "+why+"; nothing was written, retry later",
		cause).WithHeader("Retry-After", "1")
}

// Checking runs write, a transaction that confirms the references it
// makes with the check it is given (Checked.Of, then Confirm, Queue or
// ConfirmAll inside the transaction), so the service asks the owners and
// the store only writes. The first run trusts only what this service
// remembers: no read before the transaction, no ask. When a target is not
// remembered, the write answers ErrAskFirst and its transaction is undone;
// the owners are then asked about the targets it named, with nothing held,
// and write runs once more with their answers. A target whose row changed
// again meanwhile (or a patch whose targets changed with the row it read)
// is ErrAskFirst again: at most MaxAsks asks, then a 503 with Retry-After.
//
// Checking is called outside any transaction: the request's unit of work,
// when write's undone transaction was all it held, is let go before the
// owners are asked (store.LetGo); a transaction still held then (lasting
// writes of the same request) is answered a 503, never asked across, and
// askOwners refuses to ask inside one.
func (r *Registry) Checking(ctx context.Context, write func(*Checked) error) error {
	return r.CheckingFrom(ctx, r.Remembered(), write)
}

// CheckingFrom is Checking whose first run confirms first, a check the
// service made already: a batch asks about the targets of all its items
// at once (Ask) before its transaction. It asks at most MaxAsks times
// more.
func (r *Registry) CheckingFrom(ctx context.Context, first *Checked, write func(*Checked) error) error {
	checked := first
	for asks := 0; ; asks++ {
		err := write(checked)
		var again *AskFirst
		if !errors.As(err, &again) {
			return err
		}
		if asks == MaxAsks {
			return retryLater(again.Targets, "kept changing while they were checked",
				fmt.Errorf("refs: targets still changing after %d asks", MaxAsks))
		}
		if store.LetGo(ctx); store.Holding(ctx) {
			// A transaction of the request has lasting writes (a batch
			// written in rounds), which asking would hold across the
			// owners' answers: the request is undone and tried again.
			return retryLater(again.Targets, "must be checked again, which cannot be done inside the request's transaction",
				ErrAskInTransaction)
		}
		if checked, err = r.Ask(ctx, again.Targets...); err != nil {
			return err
		}
	}
}

// CheckingFor is Checking for a write that answers a value (a create
// answers what it created).
func CheckingFor[T any](ctx context.Context, r *Registry, write func(*Checked) (T, error)) (T, error) {
	var out T
	err := r.Checking(ctx, func(checked *Checked) error {
		var err error
		out, err = write(checked)
		return err
	})
	return out, err
}

// Checked is what Prepare learnt of a write's targets before its
// transaction, for Confirm to trust or ask again.
type Checked struct {
	r       *Registry
	targets []Target
	seen    map[Key]int64 // row versions read before the owners were asked (0: no row)
	answers map[Key]Attrs // the owners' answers: a key is there when its target exists
	asked   map[Key]bool
}

// Targets are the targets the check is about.
func (c *Checked) Targets() []Target { return c.targets }

// Of is the check of targets with what c learnt: the answers c got for
// some of them are trusted as Confirm trusts them, the others, unless
// remembered alive, are answered ErrAskFirst. A patch knows its targets
// only once its transaction has read the row: it confirms c.Of(those
// targets).
func (c *Checked) Of(targets ...Target) *Checked {
	of := *c
	of.targets = targets
	return &of
}

// Confirm is Registry.Confirm of c, inside the write's transaction.
func (c *Checked) Confirm(ctx context.Context, tx pgx.Tx) (map[uuid.UUID]Attrs, error) {
	return c.r.Confirm(ctx, tx, c)
}

// ConfirmAll is Registry.ConfirmAll of c, for a batch.
func (c *Checked) ConfirmAll(ctx context.Context, tx pgx.Tx) (Known, error) {
	return c.r.ConfirmAll(ctx, tx, c)
}

// ConfirmInto is a batch's Prepare (store.BatchWrite) that confirms all of
// c at once and leaves what exists in known, so that each item, written
// after it, asks Missing about its own targets only.
func (c *Checked) ConfirmInto(known *Known) func(context.Context, pgx.Tx, []model.ItemOutcome) error {
	return func(ctx context.Context, tx pgx.Tx, _ []model.ItemOutcome) (err error) {
		*known, err = c.ConfirmAll(ctx, tx)
		return err
	}
}

// Queue is Registry.QueueConfirm of c: its locks and read in batch, ahead
// of the write that relies on them.
// A nil c (references confirmed already) queues nothing.
func (c *Checked) Queue(batch *pgx.Batch) (*Confirmation, error) {
	if c == nil {
		return &Confirmation{c: &Checked{}}, nil
	}
	return c.r.QueueConfirm(batch, c)
}

// row is a target's ref_targets row as one read saw it.
type row struct {
	alive   bool
	attrs   Attrs
	version int64
}

// Prepare is the part of a check that needs no transaction: it reads what
// this service remembers of the targets and asks their owners, each once,
// about the rest. A target an owner says does not exist is a 422 here
// already. Confirm, inside the write's transaction, finishes the check.
// Nothing is held while the owners answer.
func (r *Registry) Prepare(ctx context.Context, targets ...Target) (*Checked, error) {
	c, err := r.Ask(ctx, targets...)
	if err != nil {
		return nil, err
	}
	return c, c.Missing(targets...)
}

// Missing is the 422 naming the fields of those of targets that Prepare or
// Ask was told do not exist.
func (c *Checked) Missing(targets ...Target) error {
	return missing(targets, func(k Key) bool { _, ok := c.answers[k]; return ok || !c.asked[k] })
}

// Ask is Prepare for a batch: a target that does not exist is no error
// here (Missing tells, per item), only an owner that cannot answer is.
func (r *Registry) Ask(ctx context.Context, targets ...Target) (*Checked, error) {
	c := &Checked{r: r, targets: targets, seen: map[Key]int64{}, answers: map[Key]Attrs{}, asked: map[Key]bool{}}
	if len(targets) == 0 {
		return c, nil
	}
	keys, err := r.keysOf(targets)
	if err != nil {
		return nil, err
	}
	rows, err := readRows(ctx, r.store.Pool, keys)
	if err != nil {
		return nil, err
	}
	var ask []Key
	for _, k := range keys {
		if rw, ok := rows[k]; ok && rw.alive {
			continue // Confirm finds it alive again, or asks
		}
		c.seen[k] = rows[k].version
		ask = append(ask, k)
	}
	if len(ask) == 0 {
		return c, nil
	}
	found, err := r.askOwners(ctx, ask)
	if err != nil {
		return nil, err
	}
	for _, k := range ask {
		c.asked[k] = true
		if attrs, ok := found[k]; ok {
			c.answers[k] = attrs
		}
	}
	return c, nil
}

// Confirm is the part of a check inside the write's transaction: it locks
// each target against a concurrent delete's question (shared, until the
// transaction ends) and then trusts, for each, what it remembers (alive)
// or Ask's answer when nothing changed since; for any other target it
// answers ErrAskFirst, and asks nobody. Targets that do not exist are a
// 422 naming their fields.
// It returns each target's attributes (as first told: only attributes that
// never change may be relied on, as a document's).
func (r *Registry) Confirm(ctx context.Context, tx pgx.Tx, c *Checked) (map[uuid.UUID]Attrs, error) {
	found, err := r.ConfirmAll(ctx, tx, c)
	if err != nil {
		return nil, err
	}
	attrs := make(map[uuid.UUID]Attrs, len(c.targets))
	for _, t := range c.targets {
		if a, ok := found[t.key()]; ok {
			attrs[t.ID] = a
		}
	}
	return attrs, found.Missing(c.targets...)
}

// Known are the targets a check found to exist, with their attributes.
type Known map[Key]Attrs

// Missing is the 422 naming the fields of those of targets not known.
func (k Known) Missing(targets ...Target) error {
	return missing(targets, func(key Key) bool { _, ok := k[key]; return ok })
}

// ConfirmAll is Confirm for a batch: it returns the targets that exist,
// and an error only when the check itself failed; each item asks Missing
// about its own targets.
func (r *Registry) ConfirmAll(ctx context.Context, tx pgx.Tx, c *Checked) (Known, error) {
	batch := &pgx.Batch{}
	confirm, err := r.QueueConfirm(batch, c)
	if err != nil {
		return nil, err
	}
	results := tx.SendBatch(ctx, batch)
	err = confirm.Read(results)
	if cerr := results.Close(); err == nil && cerr != nil {
		err = store.Classify(cerr, "read reference targets")
	}
	if err != nil {
		return nil, err
	}
	return confirm.Finish(ctx, tx)
}

// Confirmation is a Confirm whose locks and read travel in the batch of
// the write that relies on them, ahead of it (QueueConfirm): the write's
// statements run after the locks are granted, in the same transaction,
// and the write is undone with its transaction when Finish says a target
// is missing or must be asked about first. A create whose targets are
// remembered then spends no round trip on its references.
type Confirmation struct {
	r    *Registry
	c    *Checked
	keys []Key
	rows map[Key]row
}

// QueueConfirm queues c's locks and read in batch, before whatever the
// caller queues next; the caller reads them first (Read), closes the
// batch and then calls Finish. A nil c (references confirmed already)
// queues nothing and finds nothing missing.
func (r *Registry) QueueConfirm(batch *pgx.Batch, c *Checked) (*Confirmation, error) {
	if c == nil {
		c = &Checked{}
	}
	cf := &Confirmation{r: r, c: c}
	if len(c.targets) == 0 {
		return cf, nil
	}
	keys, err := r.keysOf(c.targets)
	if err != nil {
		return nil, err
	}
	cf.keys = keys
	locks := make([]string, 0, len(keys))
	for _, k := range keys {
		locks = append(locks, r.lockKey(k.Kind, k.ID))
	}
	slices.Sort(locks) // one order for every writer
	locks = slices.Compact(locks)
	// The lock and the read as two statements: the read's snapshot must be
	// taken after the lock is granted.
	batch.Queue(`SELECT pg_advisory_xact_lock_shared(hashtextextended(k, 0))
		FROM unnest($1::text[]) WITH ORDINALITY AS t(k, n) ORDER BY n`, locks)
	batch.Queue(rowsSQL, keysJSON(keys))
	return cf, nil
}

// Read reads the results of what QueueConfirm queued.
func (cf *Confirmation) Read(results pgx.BatchResults) error {
	if len(cf.keys) == 0 {
		return nil
	}
	if _, err := results.Exec(); err != nil {
		return store.Classify(err, "lock reference targets")
	}
	rows, err := scanRows(results.Query())
	cf.rows = rows
	return store.Classify(err, "read reference targets")
}

// Finish decides, once the batch is closed, from what Read saw: targets
// remembered alive exist; the others are trusted from Ask's answer when
// their row did not change since. Any other target is ErrAskFirst: it is
// asked about by Checking, after this transaction, never from inside it.
func (cf *Confirmation) Finish(ctx context.Context, tx pgx.Tx) (Known, error) {
	r, c := cf.r, cf.c
	found := Known{}
	var learnt []Key
	for _, k := range cf.keys {
		now := cf.rows[k]
		switch {
		case now.alive:
			found[k] = now.attrs
		case c.asked[k] && c.seen[k] == now.version:
			if attrs, ok := c.answers[k]; ok {
				found[k] = attrs
				learnt = append(learnt, k)
			}
		default:
			return nil, &AskFirst{Targets: c.targets}
		}
	}
	return found, r.remember(ctx, tx, learnt, found, cf.rows)
}

// Missing is the 422 naming the fields of the check's targets that Finish
// did not find.
func (cf *Confirmation) Missing(found Known) error { return found.Missing(cf.c.targets...) }

// keysOf are the distinct keys of targets, each of a kind some service
// owns.
func (r *Registry) keysOf(targets []Target) ([]Key, error) {
	keys := make([]Key, 0, len(targets))
	for _, t := range targets {
		if _, ok := catalog.OwnerOf(t.Kind); !ok {
			return nil, fmt.Errorf("refs: no service owns kind %q", t.Kind)
		}
		if !slices.Contains(keys, t.key()) {
			keys = append(keys, t.key())
		}
	}
	return keys, nil
}

// missing is the 422 naming the fields of targets that do not exist.
func missing(targets []Target, exists func(Key) bool) error {
	var v apperr.Validation
	for _, t := range targets {
		if !exists(t.key()) {
			v.Add(t.Field, "must name an existing %s; %s does not exist", strings.ReplaceAll(t.Kind, "_", " "), t.ID)
		}
	}
	return v.Err()
}

// keysJSON is keys as rowsSQL takes them: [{"kind": ..., "id": ...}, ...].
func keysJSON(keys []Key) []byte {
	type key struct {
		Kind string    `json:"kind"`
		ID   uuid.UUID `json:"id"`
	}
	list := make([]key, len(keys))
	for i, k := range keys {
		list[i] = key{k.Kind, k.ID}
	}
	return store.Records(list)
}

// rowsSQL reads the rows of the keys, each by its primary key. The
// lateral LIMIT keeps it that way in every plan: as a plain join, the
// generic plan a connection caches while ref_targets is nearly empty (a
// hash join over a sequential scan) stayed in use as the table grew, and
// read the whole table for every write (pg_stat_statements: 0.3 to
// 0.7 ms a call at 4,000 rows, where an index probe is 0.03 ms).
//
// The keys come as one JSON array (store.Records), so a connection keeps
// the generic plan: planned on every call from arrays, it cost 0.22 ms of
// planning for 0.06 ms of execution, every action write
// (pg_stat_statements with track_planning).
const rowsSQL = `SELECT r.kind, r.id, r.alive, r.attrs, r.version
	FROM jsonb_to_recordset($1::jsonb) AS t(kind text, id uuid)
	CROSS JOIN LATERAL (SELECT * FROM ref_targets r WHERE r.kind = t.kind AND r.id = t.id LIMIT 1) r`

func readRows(ctx context.Context, q store.Querier, keys []Key) (map[Key]row, error) {
	rows, err := q.Query(ctx, rowsSQL, keysJSON(keys))
	if err != nil {
		return nil, store.Classify(err, "read reference targets")
	}
	found, err := scanRows(rows, nil)
	return found, store.Classify(err, "read reference targets")
}

func scanRows(rows pgx.Rows, err error) (map[Key]row, error) {
	if err != nil {
		return nil, err
	}
	found := map[Key]row{}
	var k Key
	var rw row
	var attrs []byte
	_, err = pgx.ForEachRow(rows, []any{&k.Kind, &k.ID, &rw.alive, &attrs, &rw.version}, func() error {
		rw.attrs = Attrs{}
		if len(attrs) > 0 {
			if err := json.Unmarshal(attrs, &rw.attrs); err != nil {
				return fmt.Errorf("refs: attributes of %s %s: %w", k.Kind, k.ID, err)
			}
		}
		found[k] = rw
		return nil
	})
	return found, err
}

// remember records the targets an owner said exist as alive, each only if
// its row is still the version read under the lock (no row: still none),
// so a delete's mark made meanwhile is never overwritten. Targets this
// service owns are not remembered: their deletes do not ask it.
//
// The rows are written in one order (kind, then id) by every writer: two
// batches learning the same new targets would otherwise each wait on the
// other's uncommitted row, a deadlock PostgreSQL breaks by failing one.
func (r *Registry) remember(ctx context.Context, tx pgx.Tx, learnt []Key, found Known, rows map[Key]row) error {
	learnt = sortedKeys(learnt)
	var kinds, attrs []string
	var ids []uuid.UUID
	var versions []int64
	for _, k := range learnt {
		if owner, _ := catalog.OwnerOf(k.Kind); owner == r.service {
			continue
		}
		raw, err := json.Marshal(found[k])
		if err != nil {
			return err
		}
		kinds, ids, attrs, versions = append(kinds, k.Kind), append(ids, k.ID), append(attrs, string(raw)), append(versions, rows[k].version)
	}
	if len(kinds) == 0 {
		return nil
	}
	_, err := tx.Exec(ctx, `WITH learnt(kind, id, attrs, seen) AS (
			SELECT kind, id, attrs::jsonb, seen FROM unnest($1::text[], $2::uuid[], $3::text[], $4::bigint[]) AS l(kind, id, attrs, seen)),
		marked AS (
			UPDATE ref_targets r SET alive = true, attrs = l.attrs, version = nextval('ref_targets_version'), changed_at = now()
			FROM learnt l WHERE r.kind = l.kind AND r.id = l.id AND l.seen <> 0 AND r.version = l.seen)
		INSERT INTO ref_targets (kind, id, alive, attrs)
		SELECT kind, id, true, attrs FROM learnt WHERE seen = 0
		ON CONFLICT (kind, id) DO NOTHING`, kinds, ids, attrs, versions)
	return store.Classify(err, "remember reference targets")
}

// sortedKeys is keys in the one order every writer of ref_targets writes
// its rows in: kind, then id.
func sortedKeys(keys []Key) []Key {
	return slices.SortedFunc(slices.Values(keys), func(a, b Key) int {
		if c := strings.Compare(a.Kind, b.Kind); c != 0 {
			return c
		}
		return bytes.Compare(a.ID[:], b.ID[:])
	})
}

// forget marks kind/id not alive with a new version, committed on its
// own: the first step of the answer to a delete's question.
func (r *Registry) forget(ctx context.Context, kind string, id uuid.UUID) error {
	_, err := r.store.Pool.Exec(ctx, `INSERT INTO ref_targets (kind, id, alive) VALUES ($1, $2, false)
		ON CONFLICT (kind, id) DO UPDATE SET alive = false, attrs = NULL,
			version = nextval('ref_targets_version'), changed_at = now()`, kind, id)
	return store.Classify(err, "forget reference target")
}

// ErrAskInTransaction is askOwners' refusal to ask another service from
// inside a transaction: a defect of the caller (the service asks before
// its store's transaction, as Checking does), answered as a 500.
var ErrAskInTransaction = errors.New("refs: the owners of targets may not be asked inside a transaction")

// askOwners asks each owner of keys, concurrently, once, which of them
// exist and are not being deleted. It refuses to inside a transaction
// (store.Holding): the rule of check.go, held at run time.
func (r *Registry) askOwners(ctx context.Context, keys []Key) (map[Key]Attrs, error) {
	if store.Holding(ctx) {
		return nil, ErrAskInTransaction
	}
	byOwner := map[string][]Ask{}
	for _, k := range keys {
		owner, _ := catalog.OwnerOf(k.Kind)
		asks := byOwner[owner]
		i := slices.IndexFunc(asks, func(a Ask) bool { return a.Kind == k.Kind })
		if i < 0 {
			asks = append(asks, Ask{Kind: k.Kind})
			i = len(asks) - 1
		}
		asks[i].IDs = append(asks[i].IDs, k.ID)
		byOwner[owner] = asks
	}
	owners := slices.Collect(maps.Keys(byOwner))
	found := map[Key]Attrs{}
	var mu sync.Mutex
	err := r.askEach(ctx, owners, func(ctx context.Context, i int, client Service) error {
		got, err := existsAll(ctx, client, byOwner[owners[i]])
		if err != nil {
			return err
		}
		mu.Lock()
		defer mu.Unlock()
		maps.Copy(found, got)
		return nil
	})
	return found, err
}

// existsAll asks an owner about several kinds at once; an owner from
// before that question (a 404 for its path, during a rolling upgrade) is
// asked once per kind.
func existsAll(ctx context.Context, owner Service, asks []Ask) (map[Key]Attrs, error) {
	found, err := owner.ExistsAll(ctx, asks)
	var e *apperr.Error
	if err == nil || !errors.As(err, &e) || e.Kind != apperr.KindNotFound {
		return found, err
	}
	found = map[Key]Attrs{}
	for _, a := range asks {
		got, err := owner.Exists(ctx, a.Kind, a.IDs)
		if err != nil {
			return nil, err
		}
		for id, attrs := range got {
			found[Key{a.Kind, id}] = attrs
		}
	}
	return found, nil
}
