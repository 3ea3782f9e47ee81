// Package refs keeps references between services whole without any
// service reading another's schema: an asset names a person of the parties
// service, an action document a document of the documents service.
//
// The protocol, in terms of an owner O (parties) of a target T (a person)
// and a referrer R (assets) creating a row X that points at T:
//
//   - R asks O whether T exists, with nothing held (Checking, Ask); O
//     answers from a plain read, and says no for a target whose delete is
//     in progress. Then R, inside the transaction that writes X, takes a
//     shared advisory lock on T's key in its own database and confirms
//     that O's answer still stands (Confirm: its row of T did not change
//     since), else undoes the transaction and asks again; nothing inside
//     the transaction asks O (check.go). R writes X and commits, releasing
//     the lock.
//   - O deletes T in three steps (Delete): it records "T is being deleted"
//     with a lease in a committed transaction, so from then on every check
//     for T says no; it asks each service that can reference T's kind (the
//     catalog knows) what points at T, and each answers after taking the
//     exclusive lock on T's key, so it waits for every write of R that
//     checked T before the mark and is still in flight; only when nobody
//     points at T does O delete it, in a transaction that also removes the
//     mark, provided the lease is still its own.
//
// Either R's check came before O's mark, and then O's question waits for
// R's commit and sees X (409 for the delete), or it came after, and R is
// told T does not exist (422 for the write). No interleaving leaves X
// pointing at a deleted T, and no lock is held across services, so there
// is no distributed deadlock. Nothing is recorded at O for a reference, so
// a write of R that fails halfway leaves no mark behind to block a later
// delete; a delete that fails halfway leaves a mark that expires with its
// lease.
package refs

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"golang.org/x/sync/errgroup"

	"github.com/assetregistry/registry/pkg/apperr"
	"github.com/assetregistry/registry/pkg/catalog"
	"github.com/assetregistry/registry/pkg/model"
	"github.com/assetregistry/registry/pkg/outbox"
	"github.com/assetregistry/registry/pkg/peer"
	"github.com/assetregistry/registry/pkg/store"
)

// Lease bounds how long a delete may take between marking its target and
// deleting it; a delete that crashed in between blocks new references to
// its target for at most this long.
const Lease = 30 * time.Second

// Attrs are what an owner tells about a target it has, for the referrer's
// own rules (a thumbnail must be an image: content_type).
type Attrs map[string]string

// Ref is one thing in a referring service that points at a target.
type Ref struct {
	Kind    string          `json:"kind"` // "asset", "action_document"
	ID      uuid.UUID       `json:"id"`
	Label   string          `json:"label,omitempty"`   // a few words for people reading the 409
	Details json.RawMessage `json:"details,omitempty"` // the referrer's representation, for owners that list them
}

// Service is the internal API every service answers for the protocol.
type Service interface {
	// Exists returns the targets of kind among ids that exist and are not
	// being deleted, with their attributes.
	Exists(ctx context.Context, kind string, ids []uuid.UUID) (map[uuid.UUID]Attrs, error)
	// ExistsAll is Exists for several kinds in one question: a write
	// asks each owner once, whatever it names of the owner's kinds.
	ExistsAll(ctx context.Context, asks []Ask) (map[Key]Attrs, error)
	// Referrers returns what in the service points at kind/id. With
	// settle, the answer waits for every write in flight that checked the
	// target, so it is final for a delete.
	Referrers(ctx context.Context, kind string, id uuid.UUID, settle bool) ([]Ref, error)
	// List returns up to limit targets of kind after the id after, in id
	// order, with their attributes: how another service's read model of
	// the kind is rebuilt without reading the owner's schema.
	List(ctx context.Context, kind string, after uuid.UUID, limit int) ([]Found, error)
}

// ListFunc reads up to limit rows of a kind after the id after, in id
// order.
type ListFunc func(ctx context.Context, q store.Querier, after uuid.UUID, limit int) ([]Found, error)

// ListIn is the ListFunc of a kind that is one table's rows; each of
// attrs is a column told as an attribute of the same name (NULL: left out).
func ListIn(table string, attrs ...string) ListFunc {
	columns := "id"
	for _, a := range attrs {
		columns += ", " + a + "::text"
	}
	query := `SELECT ` + columns + ` FROM ` + table + ` WHERE id > $1 ORDER BY id LIMIT $2`
	return func(ctx context.Context, q store.Querier, after uuid.UUID, limit int) ([]Found, error) {
		rows, err := q.Query(ctx, query, after, limit)
		if err != nil {
			return nil, store.Classify(err, "list "+table)
		}
		found, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (Found, error) {
			values := make([]*string, len(attrs))
			dest := []any{new(uuid.UUID)}
			for i := range values {
				dest = append(dest, &values[i])
			}
			if err := row.Scan(dest...); err != nil {
				return Found{}, err
			}
			f := Found{ID: *dest[0].(*uuid.UUID), Attrs: Attrs{}}
			for i, v := range values {
				if v != nil {
					f.Attrs[attrs[i]] = *v
				}
			}
			return f, nil
		})
		return found, store.Classify(err, "list "+table)
	}
}

// ExistsFunc reads which of ids exist, with their attributes.
type ExistsFunc func(ctx context.Context, q store.Querier, ids []uuid.UUID) (map[uuid.UUID]Attrs, error)

// ExistsIn is the ExistsFunc of a kind that is one table's rows, told
// about by nothing but their ids.
func ExistsIn(table string) ExistsFunc {
	query := `SELECT id FROM ` + table + ` WHERE id = ANY($1)`
	return func(ctx context.Context, q store.Querier, ids []uuid.UUID) (map[uuid.UUID]Attrs, error) {
		rows, err := q.Query(ctx, query, ids)
		if err != nil {
			return nil, store.Classify(err, "check "+table)
		}
		found, err := pgx.CollectRows(rows, pgx.RowTo[uuid.UUID])
		attrs := make(map[uuid.UUID]Attrs, len(found))
		for _, id := range found {
			attrs[id] = Attrs{}
		}
		return attrs, store.Classify(err, "check "+table)
	}
}

// ReferrersFunc reads what points at the target id.
type ReferrersFunc func(ctx context.Context, q store.Querier, id uuid.UUID) ([]Ref, error)

// Kinds is what a store declares of the protocol: the kinds it owns, the
// kinds of others it points at, and the kinds it lists, each with the
// read that answers for it. A store is given Kinds, never the Registry: it
// speaks only SQL, and nothing it is given can call another service (the
// service holds the Registry, asks the owners, and hands the store the
// *Checked its transaction confirms).
type Kinds interface {
	Owns(kind string, exists ExistsFunc)
	PointsAt(kind string, referrers ReferrersFunc)
	Lists(kind string, list ListFunc)
}

var _ Kinds = (*Registry)(nil)

// Registry is one service's side of the protocol: the kinds it owns and
// the kinds of others it points at. It implements Service.
type Registry struct {
	service  string
	store    *store.Store
	peers    *peer.Clients
	owned    map[string]ExistsFunc
	pointing map[string]ReferrersFunc
	listed   map[string]ListFunc
}

// New returns the registry of the named service (its catalog entry).
func New(service string, st *store.Store, peers *peer.Clients) *Registry {
	return &Registry{service: service, store: st, peers: peers,
		owned: map[string]ExistsFunc{}, pointing: map[string]ReferrersFunc{}, listed: map[string]ListFunc{}}
}

// Lists declares that the service lists an owned kind to its peers.
func (r *Registry) Lists(kind string, list ListFunc) { r.listed[kind] = list }

// List implements Service.
func (r *Registry) List(ctx context.Context, kind string, after uuid.UUID, limit int) ([]Found, error) {
	list, ok := r.listed[kind]
	if !ok {
		return nil, apperr.Invalid(apperr.FieldError{Field: "kind", Message: r.service + " lists no " + kind})
	}
	if limit < 1 || limit > MaxList {
		return nil, apperr.Invalid(apperr.FieldError{Field: "limit", Message: fmt.Sprintf("must be from 1 to %d", MaxList)})
	}
	found, err := list(ctx, r.store.DB(ctx), after, limit)
	if found == nil {
		found = []Found{}
	}
	return found, err
}

// ListOwned lists targets of kind from the service that owns it (List).
func (r *Registry) ListOwned(ctx context.Context, kind string, after uuid.UUID, limit int) ([]Found, error) {
	name, ok := catalog.OwnerOf(kind)
	if !ok {
		return nil, fmt.Errorf("refs: no service owns %s", kind)
	}
	owner, err := r.owner(name)
	if err != nil {
		return nil, err
	}
	return owner.List(ctx, kind, after, limit)
}

// MaxList bounds one List answer.
const MaxList = 10000

// Owns declares a kind this service owns.
func (r *Registry) Owns(kind string, exists ExistsFunc) { r.owned[kind] = exists }

// PointsAt declares a kind of another service this one references.
func (r *Registry) PointsAt(kind string, referrers ReferrersFunc) { r.pointing[kind] = referrers }

// Exists implements Service.
func (r *Registry) Exists(ctx context.Context, kind string, ids []uuid.UUID) (map[uuid.UUID]Attrs, error) {
	found, err := r.ExistsAll(ctx, []Ask{{Kind: kind, IDs: ids}})
	if err != nil {
		return nil, err
	}
	out := make(map[uuid.UUID]Attrs, len(found))
	for k, attrs := range found {
		out[k.ID] = attrs
	}
	return out, nil
}

// ExistsAll implements Service. The targets and their pending deletions
// are read in one snapshot: read apart, a delete committing in between
// would look like a target that exists and is not being deleted.
func (r *Registry) ExistsAll(ctx context.Context, asks []Ask) (map[Key]Attrs, error) {
	for _, a := range asks {
		if _, ok := r.owned[a.Kind]; !ok {
			return nil, apperr.Invalid(apperr.FieldError{Field: "kind", Message: r.service + " owns no " + a.Kind})
		}
	}
	found := map[Key]Attrs{}
	err := pgx.BeginTxFunc(ctx, r.store.Pool, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
		var kinds []string
		var ids []uuid.UUID
		for _, a := range asks {
			got, err := r.owned[a.Kind](ctx, tx, a.IDs)
			if err != nil {
				return err
			}
			for id, attrs := range got {
				found[Key{a.Kind, id}] = attrs
				kinds, ids = append(kinds, a.Kind), append(ids, id)
			}
		}
		if len(found) == 0 {
			return nil
		}
		rows, err := tx.Query(ctx, `SELECT p.kind, p.id FROM pending_deletions p
			JOIN unnest($1::text[], $2::uuid[]) AS t(kind, id) ON p.kind = t.kind AND p.id = t.id
			WHERE p.until > now()`, kinds, ids)
		if err != nil {
			return err
		}
		deleting, err := pgx.CollectRows(rows, pgx.RowToStructByPos[Key])
		for _, k := range deleting {
			delete(found, k)
		}
		return err
	})
	return found, store.Classify(err, "check targets")
}

// Referrers implements Service.
func (r *Registry) Referrers(ctx context.Context, kind string, id uuid.UUID, settle bool) ([]Ref, error) {
	find, ok := r.pointing[kind]
	if !ok {
		return nil, apperr.Invalid(apperr.FieldError{Field: "kind", Message: r.service + " references no " + kind})
	}
	if settle {
		// Before the lock, committed: a write that takes the target's lock
		// after this no longer trusts what it remembered of the target, nor
		// an answer it got before (see check.go).
		if err := r.forget(ctx, kind, id); err != nil {
			return nil, err
		}
	}
	var refs []Ref
	err := store.InTx(ctx, r.store.Pool, "referrers of "+kind, func(tx pgx.Tx) error {
		if settle {
			if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtextextended($1, 0))`, r.lockKey(kind, id)); err != nil {
				return store.Classify(err, "settle references")
			}
		}
		var err error
		refs, err = find(ctx, tx, id)
		return err
	})
	if refs == nil {
		refs = []Ref{}
	}
	return refs, err
}

func (r *Registry) lockKey(kind string, id uuid.UUID) string {
	return "refs:" + r.service + ":" + kind + ":" + id.String()
}

// owner returns the Service of another service, or this one's own.
func (r *Registry) owner(name string) (Service, error) {
	if name == r.service {
		return r, nil
	}
	c := r.peers.Get(name)
	if c == nil {
		return nil, apperr.Unavailable("the "+name+" service", fmt.Errorf("refs: peer %s is not configured", name))
	}
	return NewClient(c), nil
}

// askEach asks the services named, concurrently: ask(ctx, i, client) with
// the client of the i-th (this registry itself for its own service). It
// waits for every answer; the first error ends the others and is the
// answer, as is a service that has no client.
func (r *Registry) askEach(ctx context.Context, services []string, ask func(ctx context.Context, i int, client Service) error) error {
	clients := make([]Service, len(services))
	for i, name := range services {
		client, err := r.owner(name)
		if err != nil {
			return err
		}
		clients[i] = client
	}
	g, gctx := errgroup.WithContext(ctx)
	for i, client := range clients {
		g.Go(func() error { return ask(gctx, i, client) })
	}
	return g.Wait()
}

// Delete runs the owner's delete of kind/id: it marks the target, asks
// every service that can reference the kind what still points at it, and
// calls del in the transaction that removes the mark only when nothing
// does. A target that does not exist is a 404; one still referenced is a
// 409 naming what points at it; a referrer that cannot answer is a 503.
func (r *Registry) Delete(ctx context.Context, kind string, id uuid.UUID,
	del func(ctx context.Context, tx pgx.Tx) (changed []string, err error)) error {
	exists, ok := r.owned[kind]
	if !ok {
		return fmt.Errorf("refs: %s does not own %s", r.service, kind)
	}
	// The mark must be seen by other services before they are asked, so
	// the steps commit on their own, whatever unit of work ctx carries.
	ctx = store.WithoutUnit(ctx)
	token := uuid.New()
	err := r.store.Write(ctx, "mark "+kind+" deleted", func(ctx context.Context, tx pgx.Tx) ([]string, error) {
		found, err := exists(ctx, tx, []uuid.UUID{id})
		if err != nil {
			return nil, err
		}
		if _, ok := found[id]; !ok {
			return nil, apperr.NotFound(strings.ReplaceAll(kind, "_", " "), id.String())
		}
		tag, err := tx.Exec(ctx, `INSERT INTO pending_deletions (kind, id, token, until)
			VALUES ($1, $2, $3, now() + make_interval(secs => $4))
			ON CONFLICT (kind, id) DO UPDATE SET token = EXCLUDED.token, until = EXCLUDED.until
			WHERE pending_deletions.until < now()`, kind, id, token, Lease.Seconds())
		if err != nil {
			return nil, store.Classify(err, "mark "+kind+" deleted")
		}
		if tag.RowsAffected() == 0 {
			return nil, apperr.Conflict("another delete of this "+kind+" is in progress").WithHeader("Retry-After", "1")
		}
		return nil, nil
	})
	if err != nil {
		return err
	}
	release := func() {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		_, _ = r.store.Pool.Exec(ctx, `DELETE FROM pending_deletions WHERE kind = $1 AND id = $2 AND token = $3`, kind, id, token)
	}
	refs, err := r.referrersElsewhere(ctx, kind, id)
	if err != nil {
		release()
		return err
	}
	if len(refs) > 0 {
		release()
		return StillReferenced(kind, id, refs)
	}
	err = r.store.Write(ctx, "delete "+kind, func(ctx context.Context, tx pgx.Tx) ([]string, error) {
		tag, err := tx.Exec(ctx, `DELETE FROM pending_deletions WHERE kind = $1 AND id = $2 AND token = $3 AND until > now()`, kind, id, token)
		if err != nil {
			return nil, store.Classify(err, "unmark "+kind)
		}
		if tag.RowsAffected() == 0 {
			// The lease ran out: a reference may have been made since.
			return nil, apperr.Unavailable("the delete", fmt.Errorf("refs: lease on %s %s expired", kind, id))
		}
		return del(ctx, tx)
	})
	if err != nil {
		release()
	}
	return err
}

// DeleteRow is Delete for a resource that is one row of table, as every
// resource is, under g: a caller the owner rule refuses gets its 403
// before anything is marked, so it never holds up others' references. del
// runs once g's If-Match, if any, has been checked against current (the
// resource as a GET shows it) under the row's lock, so a delete that names
// a stale representation is a 412 and removes nothing. The delete's event
// records g's caller.
func (r *Registry) DeleteRow(ctx context.Context, g model.Guard, kind, table string, id uuid.UUID, current func(context.Context) (any, error),
	del func(ctx context.Context, tx pgx.Tx) (changed []string, err error)) error {
	if err := store.CheckOwner(ctx, r.store.DB(ctx), g, strings.ReplaceAll(kind, "_", " "), table, id); err != nil {
		return err
	}
	return r.Delete(ctx, kind, id, func(ctx context.Context, tx pgx.Tx) ([]string, error) {
		if err := store.CheckIfMatch(ctx, tx, g, table, id, current); err != nil {
			return nil, err
		}
		if r.store.Events == nil {
			return del(ctx, tx)
		}
		// The event's data is the resource as it was, read under the row's
		// lock so no update slips in between; a row that is not there is
		// del's 404 to answer.
		if _, err := tx.Exec(ctx, `SELECT 1 FROM `+pgx.Identifier{table}.Sanitize()+` WHERE id = $1 FOR UPDATE`, id); err != nil {
			return nil, store.Classify(err, "lock "+table)
		}
		before, err := current(ctx)
		if apperr.Is(err, apperr.KindNotFound) {
			return del(ctx, tx)
		}
		if err != nil {
			return nil, err
		}
		changed, err := del(ctx, tx)
		if err != nil {
			return nil, err
		}
		return changed, r.store.Record(ctx, tx, g.Caller, outbox.Deleted(kind, id.String(), before))
	})
}

// referrersElsewhere asks, concurrently, every service that can reference
// kind what points at id, and waits for their writes in flight.
func (r *Registry) referrersElsewhere(ctx context.Context, kind string, id uuid.UUID) ([]Ref, error) {
	services := catalog.ReferrersOf(r.service, kind)
	answers := make([][]Ref, len(services))
	err := r.askEach(ctx, services, func(ctx context.Context, i int, client Service) (err error) {
		answers[i], err = client.Referrers(ctx, kind, id, true)
		return err
	})
	if err != nil {
		return nil, err
	}
	return slices.Concat(answers...), nil
}

// maxNamed bounds how many referrers a 409 names.
const maxNamed = 10

// StillReferenced is the 409 refusing the delete of kind/id while refs
// point at it: the detail names up to ten of them, referenced_by lists
// them. Owners also answer it for references inside their own schema (an
// asset type's assets), so every such refusal reads the same.
func StillReferenced(kind string, id uuid.UUID, refs []Ref) error {
	var names []string
	listed := make([]map[string]any, 0, min(len(refs), maxNamed))
	for _, ref := range refs[:min(len(refs), maxNamed)] {
		name := strings.ReplaceAll(ref.Kind, "_", " ") + " " + ref.ID.String()
		if ref.Label != "" {
			name += " (" + ref.Label + ")"
		}
		names = append(names, name)
		listed = append(listed, map[string]any{"kind": ref.Kind, "id": ref.ID})
	}
	detail := fmt.Sprintf("%s %s is still referenced by %s", strings.ReplaceAll(kind, "_", " "), id, strings.Join(names, ", "))
	if len(refs) > maxNamed {
		detail += fmt.Sprintf(" and %d more", len(refs)-maxNamed)
	}
	return apperr.StillReferenced(detail).With("referenced_by", listed)
}
