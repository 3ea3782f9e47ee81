package assettypes

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/assetregistry/registry/pkg/apperr"
	"github.com/assetregistry/registry/pkg/model"
	"github.com/assetregistry/registry/pkg/outbox"
	"github.com/assetregistry/registry/pkg/refs"
	"github.com/assetregistry/registry/pkg/store"
)

// Externals is one resource kind's table of external identifiers: the
// asset types' here, the assets' at the service's root.
type Externals struct{ Table, Owner, Resource string }

var typeExternals = Externals{Table: "asset_type_external_ids", Owner: "asset_type_id", Resource: "asset type"}

// Column is the select-list entry of the external ids of the row alias
// names, as one JSON array in the client's order.
func (e Externals) Column(alias string) string {
	return `COALESCE((SELECT json_agg(json_build_object('source_system', x.source_system, 'external_id', x.external_id)
		ORDER BY x.position) FROM ` + e.Table + ` x WHERE x.` + e.Owner + ` = ` + alias + `.id), '[]') AS external_ids`
}

// Filter narrows a list to rows with the external id.
func (e Externals) Filter(where *store.Filter, alias string, f ExternalFilter) {
	switch {
	case f.SourceSystem == nil:
	case f.ExternalID == nil:
		where.Where(`EXISTS (SELECT 1 FROM `+e.Table+` x WHERE x.`+e.Owner+` = `+alias+`.id AND x.source_system = ?)`, *f.SourceSystem)
	default:
		where.Where(`EXISTS (SELECT 1 FROM `+e.Table+` x WHERE x.`+e.Owner+` = `+alias+`.id AND x.source_system = ? AND x.external_id = ?)`,
			*f.SourceSystem, *f.ExternalID)
	}
}

// Save gives owner the external ids, replacing those it had. A pair that
// another resource of the kind holds is a 409 naming that resource; a
// concurrent write of the same pair waits for the other to end (ON
// CONFLICT), so the pair is never held twice.
func (e Externals) Save(ctx context.Context, tx pgx.Tx, owner uuid.UUID, ids []ExternalID) error {
	if _, err := tx.Exec(ctx, `DELETE FROM `+e.Table+` WHERE `+e.Owner+` = $1`, owner); err != nil {
		return store.Classify(err, "replace external ids")
	}
	if len(ids) == 0 {
		return nil
	}
	systems, values := make([]string, len(ids)), make([]string, len(ids))
	for i, x := range ids {
		systems[i], values[i] = x.SourceSystem, x.ExternalID
	}
	rows, err := tx.Query(ctx, `INSERT INTO `+e.Table+` (source_system, external_id, `+e.Owner+`, position)
		SELECT s, x, $1, n FROM unnest($2::text[], $3::text[]) WITH ORDINALITY AS u(s, x, n)
		ON CONFLICT DO NOTHING RETURNING source_system, external_id`, owner, systems, values)
	if err != nil {
		return store.Classify(err, "insert external ids")
	}
	inserted, err := pgx.CollectRows(rows, pgx.RowToStructByPos[ExternalID])
	if err != nil {
		return store.Classify(err, "insert external ids")
	}
	for _, x := range ids {
		if slices.Contains(inserted, x) {
			continue
		}
		var holder uuid.UUID
		if err := tx.QueryRow(ctx, `SELECT `+e.Owner+` FROM `+e.Table+` WHERE source_system = $1 AND external_id = $2`,
			x.SourceSystem, x.ExternalID).Scan(&holder); err != nil {
			return store.Classify(err, "find external id holder")
		}
		return apperr.Duplicate(fmt.Sprintf("the external id %s of source system %s names %s %s already",
			x.ExternalID, x.SourceSystem, e.Resource, holder), holder.String())
	}
	return nil
}

// Store is the PostgreSQL persistence of asset types, their attached
// documents and thumbnails. Every write commits through store.Write, which
// then makes stale the cached finds the write says it changed. References
// to documents are asked about by the service (pkg/refs); a write confirms
// the check it is given under the documents' locks inside its transaction,
// and the documents service asks this store what points at a document
// before deleting one.
type Store struct {
	*store.Store
	// assetsOf names the assets of a type, for the 409 of its delete:
	// the root's question, handed down, as this package knows no assets.
	assetsOf refs.ReferrersFunc
}

// NewStore returns the asset types' store over the kit's store and
// declares its side of the reference protocol; assetsOf names the assets
// of a type.
func NewStore(s *store.Store, r refs.Kinds, assetsOf refs.ReferrersFunc) *Store {
	r.Owns("asset_type", refs.ExistsIn("asset_types"))
	r.PointsAt("document", assetTypesOfDocument)
	return &Store{Store: s, assetsOf: assetsOf}
}

var assetTypeColumns = `t.id, t.brand, t.model, t.version, t.emission_class, t.thumbnail_document_id, ` +
	typeExternals.Column("t") + `, t.created_at, t.created_by, t.updated_at, t.updated_by`

// The first attached documents in attach order (model.MaxEmbedded),
// whether more are attached, and the thumbnail. Migration 002's index
// holds an asset type's attachments in attach order, so this is a short
// range scan however many there are.
var assetTypeDocumentsSQL = fmt.Sprintf(`COALESCE((SELECT json_agg(e.document ORDER BY e.attached_at, e.document_id) FROM (
		SELECT d.document, d.attached_at, d.document_id FROM asset_type_documents d WHERE d.asset_type_id = t.id
		ORDER BY d.attached_at, d.document_id LIMIT %[1]d) e), '[]') AS documents,
	EXISTS (SELECT FROM asset_type_documents d WHERE d.asset_type_id = t.id
		ORDER BY d.attached_at, d.document_id OFFSET %[1]d) AS documents_truncated, t.thumbnail`, model.MaxEmbedded)

// attachedDocument is an attached document with its place in attach order.
type attachedDocument struct {
	Document   json.RawMessage `db:"document"`
	AttachedAt time.Time       `db:"attached_at"`
	DocumentID uuid.UUID       `db:"document_id"`
}

// AssetTypeDocuments reads one page of the documents attached to an asset
// type, in attach order; an unknown asset type is a 404.
func (s *Store) AssetTypeDocuments(ctx context.Context, id uuid.UUID, page model.LinkPage) (model.LinkPaged[json.RawMessage], error) {
	q := s.Reads(ctx)
	sql, args := `SELECT d.document, d.attached_at, d.document_id FROM asset_type_documents d WHERE d.asset_type_id = $1`, []any{id}
	if page.After != nil {
		sql += ` AND (d.attached_at, d.document_id) > ($2, $3)`
		args = append(args, page.After.At, page.After.ID)
	}
	rows, err := store.Many[attachedDocument](ctx, q, "list documents of asset type",
		fmt.Sprintf(`%s ORDER BY d.attached_at, d.document_id LIMIT %d`, sql, page.Limit+1), args...)
	if err != nil {
		return model.LinkPaged[json.RawMessage]{}, err
	}
	if len(rows) == 0 {
		found := false
		if err := q.QueryRow(ctx, `SELECT EXISTS (SELECT FROM asset_types WHERE id = $1)`, id).Scan(&found); err != nil {
			return model.LinkPaged[json.RawMessage]{}, store.Classify(err, "list documents of asset type")
		}
		if !found {
			return model.LinkPaged[json.RawMessage]{}, apperr.NotFound("asset type", id.String())
		}
	}
	paged := model.TrimLinks(rows, page, func(d attachedDocument) model.LinkKey { return model.LinkKey{At: d.AttachedAt, ID: d.DocumentID} })
	out := model.LinkPaged[json.RawMessage]{Items: make([]json.RawMessage, len(paged.Items)), Next: paged.Next}
	for i, d := range paged.Items {
		out.Items[i] = d.Document
	}
	return out, nil
}

// CreateAssetType inserts an asset type; its thumbnail, when it names one,
// must be an image document, confirmed with checked.
func (s *Store) CreateAssetType(ctx context.Context, by model.Caller, in AssetTypeInput, checked *refs.Checked) (AssetTypeDetail, error) {
	var detail AssetTypeDetail
	err := s.Write(ctx, "create asset type", func(ctx context.Context, tx pgx.Tx) ([]string, error) {
		thumbnail, err := thumbnail(ctx, tx, checked, "thumbnail_document_id", in.ThumbnailDocumentID.Ptr())
		if err != nil {
			return nil, err
		}
		id := store.NewID()
		_, err = tx.Exec(ctx, `INSERT INTO asset_types (id, brand, model, version, brand_key, model_key, version_key,
				emission_class, thumbnail_document_id, thumbnail, created_by, updated_by)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $11)`,
			id, in.Brand, in.Model, in.Version, model.Fold(in.Brand), model.Fold(in.Model), foldOptional(in.Version),
			in.EmissionClass, in.ThumbnailDocumentID.Ptr(), thumbnail, by.Subject)
		if err != nil {
			return nil, store.Classify(err, "insert asset type")
		}
		if err := typeExternals.Save(ctx, tx, id, in.ExternalIDs); err != nil {
			return nil, err
		}
		if detail, err = s.getAssetType(ctx, tx, id); err != nil {
			return nil, err
		}
		return []string{typeFinds(in.Brand, in.Model)}, s.Record(ctx, tx, by, outbox.Created(outbox.KindAssetType, id.String(), detail))
	})
	return detail, s.assetTypeConflict(ctx, err, in)
}

// GetAssetType reads an asset type with its documents and thumbnail.
func (s *Store) GetAssetType(ctx context.Context, id uuid.UUID) (AssetTypeDetail, error) {
	return s.getAssetType(ctx, s.DB(ctx), id)
}

func (s *Store) getAssetType(ctx context.Context, q store.Querier, id uuid.UUID) (AssetTypeDetail, error) {
	return store.One[AssetTypeDetail](ctx, q, "get asset type", "asset type", id,
		`SELECT `+assetTypeColumns+`, `+assetTypeDocumentsSQL+` FROM asset_types t WHERE t.id = $1`, id)
}

// ListAssetTypes reads one page.
func (s *Store) ListAssetTypes(ctx context.Context, f AssetTypeFilter, page model.Page) (model.Paged[AssetType], error) {
	var where store.Filter
	store.Equal(&where, "brand_key", foldOptional(f.Brand))
	store.Equal(&where, "model_key", foldOptional(f.Model))
	store.Equal(&where, "version_key", foldOptional(f.Version))
	typeExternals.Filter(&where, "t", f.External)
	return store.List(ctx, s.Reads(ctx), "list asset types", `SELECT `+assetTypeColumns+` FROM asset_types t`,
		where, page, func(t AssetType) uuid.UUID { return t.ID })
}

// FindAssetTypes returns every asset type of the brand and model (and
// version, when given), in creation order.
// At most model.MaxLimit, the oldest: a page's bound, so that versions
// made without end cannot make the answer so.
func (s *Store) FindAssetTypes(ctx context.Context, q BrandAndModel) ([]AssetType, error) {
	var where store.Filter
	Match(&where, q)
	types, err := store.Many[AssetType](ctx, s.Reads(ctx), "find asset types",
		`SELECT `+assetTypeColumns+` FROM asset_types t`+where.SQL()+fmt.Sprintf(` ORDER BY t.id LIMIT %d`, model.MaxLimit), where.Args()...)
	return NonNil(types), err
}

// Match adds the conditions on an asset type (alias t) that the
// criteria name.
func Match(where *store.Filter, q BrandAndModel) {
	where.Where("t.brand_key = ?", model.Fold(q.Brand))
	where.Where("t.model_key = ?", model.Fold(q.Model))
	if q.Version != nil {
		where.Where("t.version_key = ?", model.Fold(*q.Version))
	}
}

// UpdateAssetType applies apply to the locked asset type; a new thumbnail
// is confirmed with checked.
func (s *Store) UpdateAssetType(ctx context.Context, g model.Guard, id uuid.UUID, apply func(AssetType) (AssetTypeInput, error),
	checked *refs.Checked) error {
	updater := store.Updater[AssetType, AssetTypeInput]{
		Resource: "asset type",
		Select:   `SELECT ` + assetTypeColumns + ` FROM asset_types t WHERE t.id = $1`,
		Input:    assetTypeInputOf,
		Save: func(ctx context.Context, tx pgx.Tx, old AssetType, in AssetTypeInput, actor string) ([]string, error) {
			return saveAssetType(ctx, tx, checked, old, in, actor)
		},
		// If-Match names the asset type as a GET shows it.
		Representation: func(ctx context.Context, t AssetType) (any, error) { return s.GetAssetType(ctx, t.ID) },
		Kind:           outbox.KindAssetType,
		ID:             func(t AssetType) uuid.UUID { return t.ID },
	}
	in, err := updater.Update(ctx, s.Store, g, id, apply)
	return s.assetTypeConflict(ctx, err, in)
}

func saveAssetType(ctx context.Context, tx pgx.Tx, checked *refs.Checked, old AssetType, in AssetTypeInput, actor string) ([]string, error) {
	if thumbnail := in.ThumbnailDocumentID.Ptr(); !equalIDs(thumbnail, old.ThumbnailDocumentID) {
		if err := setThumbnail(ctx, tx, checked, old.ID, "thumbnail_document_id", thumbnail); err != nil {
			return nil, err
		}
	}
	_, err := tx.Exec(ctx, `UPDATE asset_types SET brand = $2, model = $3, version = $4, brand_key = $5, model_key = $6,
		version_key = $7, emission_class = $8, updated_at = now(), updated_by = $9 WHERE id = $1`,
		old.ID, in.Brand, in.Model, in.Version, model.Fold(in.Brand), model.Fold(in.Model), foldOptional(in.Version),
		in.EmissionClass, actor)
	if err != nil {
		return nil, store.Classify(err, "update asset type")
	}
	if !slices.Equal(old.ExternalIDs, in.ExternalIDs) {
		if err := typeExternals.Save(ctx, tx, old.ID, in.ExternalIDs); err != nil {
			return nil, err
		}
	}
	changed := []string{typeFinds(old.Brand, old.Model), typeFinds(in.Brand, in.Model)}
	if typeIdentity(old.Brand, old.Model, old.Version) != typeIdentity(in.Brand, in.Model, in.Version) {
		// Asset finds name their type by brand, model and version.
		changed = append(changed, IdentityScope)
	}
	return changed, nil
}

// assetTypeConflict turns a violation of the type's identity into a 409
// naming the asset type that holds it.
func (s *Store) assetTypeConflict(ctx context.Context, err error, in AssetTypeInput) error {
	version := "without a version"
	if in.Version != nil {
		version = "version " + *in.Version
	}
	return s.Duplicate(ctx, err, fmt.Sprintf("an asset type with brand %s, model %s and %s exists already", in.Brand, in.Model, version),
		`SELECT id FROM asset_types WHERE brand_key = $1 AND model_key = $2 AND version_key IS NOT DISTINCT FROM $3`,
		model.Fold(in.Brand), model.Fold(in.Model), foldOptional(in.Version))
}

// DeleteAssetType is the write that removes an asset type with its
// attachments and external ids, for the service to run once the reference
// protocol found nothing in another service naming it (refs.DeleteRow).
// An asset of the type makes the foreign key of assets refuse, and the
// 409 names the assets.
func (s *Store) DeleteAssetType(id uuid.UUID) func(ctx context.Context, tx pgx.Tx) ([]string, error) {
	return func(ctx context.Context, tx pgx.Tx) ([]string, error) {
		var brand, model string
		// In a savepoint, so the transaction can still name the assets.
		err := s.Write(ctx, "delete asset type", func(ctx context.Context, tx pgx.Tx) ([]string, error) {
			return nil, store.Delete(ctx, tx, "asset type", id, `DELETE FROM asset_types WHERE id = $1 RETURNING brand, model`, &brand, &model)
		})
		if _, referenced := store.Constraint(err, store.ForeignKeyViolation); referenced {
			assets, err := s.assetsOf(ctx, tx, id)
			if err != nil {
				return nil, err
			}
			if len(assets) == 0 { // deleted again since the foreign key looked
				return nil, apperr.Conflict("an asset of this type was deleted during the delete; retry it").WithHeader("Retry-After", "1")
			}
			return nil, refs.StillReferenced("asset_type", id, assets)
		}
		return []string{typeFinds(brand, model)}, err
	}
}

// typeIfMatch checks g's If-Match (if any) against the asset type as a
// GET shows it, locked for the rest of the transaction.
func (s *Store) typeIfMatch(ctx context.Context, tx pgx.Tx, g model.Guard, id uuid.UUID) error {
	return store.CheckIfMatch(ctx, tx, g, "asset_types", id, func(ctx context.Context) (any, error) { return s.GetAssetType(ctx, id) })
}

// lockedType is what the writes to an asset type's documents need of it.
type lockedType struct {
	Brand, Model string
	Thumbnail    *uuid.UUID
}

// lockAssetType locks the asset type against concurrent writes to it (and
// its delete) for the rest of the transaction. Its documents and thumbnail
// are the type's: the owner rule of g, if its route declares it, is the
// type's creator's.
func lockAssetType(ctx context.Context, tx pgx.Tx, g model.Guard, id uuid.UUID) (lockedType, error) {
	var t lockedType
	var createdBy string
	err := tx.QueryRow(ctx, `SELECT brand, model, thumbnail_document_id, created_by FROM asset_types WHERE id = $1 FOR UPDATE`, id).
		Scan(&t.Brand, &t.Model, &t.Thumbnail, &createdBy)
	if errors.Is(err, pgx.ErrNoRows) {
		return t, apperr.NotFound("asset type", id.String())
	}
	if err != nil {
		return t, store.Classify(err, "lock asset type")
	}
	return t, g.MayChange("asset type", id.String(), createdBy)
}

// touch records that the asset type changed.
func touch(ctx context.Context, tx pgx.Tx, id uuid.UUID, actor string) error {
	_, err := tx.Exec(ctx, `UPDATE asset_types SET updated_at = now(), updated_by = $2 WHERE id = $1`, id, actor)
	return store.Classify(err, "touch asset type")
}

// AttachDocument attaches a document to an asset type, confirmed with
// checked; created=false when it was attached already.
func (s *Store) AttachDocument(ctx context.Context, g model.Guard, typeID, documentID uuid.UUID, checked *refs.Checked) (bool, error) {
	created := false
	err := s.Write(ctx, "attach document", func(ctx context.Context, tx pgx.Tx) ([]string, error) {
		t, err := lockAssetType(ctx, tx, g, typeID)
		if err != nil {
			return nil, err
		}
		var attached bool
		if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM asset_type_documents WHERE asset_type_id = $1 AND document_id = $2)`,
			typeID, documentID).Scan(&attached); err != nil || attached {
			return nil, store.Classify(err, "check attachment")
		}
		doc, err := document(ctx, tx, checked, "document_id", documentID)
		if err != nil {
			return nil, err
		}
		created = true
		return []string{typeFinds(t.Brand, t.Model)}, s.typeChange(ctx, tx, g.Caller, typeID, func() error {
			if _, err := tx.Exec(ctx, `INSERT INTO asset_type_documents (asset_type_id, document_id, document, attached_by)
				VALUES ($1, $2, $3, $4)`, typeID, documentID, doc, g.Subject); err != nil {
				return store.Classify(err, "attach document")
			}
			return touch(ctx, tx, typeID, g.Subject)
		})
	})
	return created, err
}

// DetachDocument removes a document from an asset type (the document
// itself stays). g's If-Match names the asset type, which the detach
// changes.
func (s *Store) DetachDocument(ctx context.Context, g model.Guard, typeID, documentID uuid.UUID) error {
	return s.Write(ctx, "detach document", func(ctx context.Context, tx pgx.Tx) ([]string, error) {
		t, err := lockAssetType(ctx, tx, g, typeID)
		if err != nil {
			return nil, err
		}
		if err := s.typeIfMatch(ctx, tx, g, typeID); err != nil {
			return nil, err
		}
		return []string{typeFinds(t.Brand, t.Model)}, s.typeChange(ctx, tx, g.Caller, typeID, func() error {
			tag, err := tx.Exec(ctx, `DELETE FROM asset_type_documents WHERE asset_type_id = $1 AND document_id = $2`, typeID, documentID)
			if err != nil {
				return store.Classify(err, "detach document")
			}
			if tag.RowsAffected() == 0 {
				return apperr.New(apperr.KindNotFound, fmt.Sprintf("document %s is not attached to asset type %s", documentID, typeID))
			}
			return touch(ctx, tx, typeID, g.Subject)
		})
	})
}

// SetThumbnail makes an image document, confirmed with checked, the asset
// type's thumbnail; field names the document id in the 422s.
func (s *Store) SetThumbnail(ctx context.Context, g model.Guard, typeID, documentID uuid.UUID, field string, checked *refs.Checked) error {
	return s.Write(ctx, "set thumbnail", func(ctx context.Context, tx pgx.Tx) ([]string, error) {
		t, err := lockAssetType(ctx, tx, g, typeID)
		if err != nil || equalIDs(t.Thumbnail, &documentID) {
			return nil, err
		}
		return []string{typeFinds(t.Brand, t.Model)}, s.typeChange(ctx, tx, g.Caller, typeID, func() error {
			if err := setThumbnail(ctx, tx, checked, typeID, field, &documentID); err != nil {
				return err
			}
			return touch(ctx, tx, typeID, g.Subject)
		})
	})
}

// typeChange runs change, a write to an asset type's documents or
// thumbnail, and records it as the asset type's update.
func (s *Store) typeChange(ctx context.Context, tx pgx.Tx, by model.Caller, typeID uuid.UUID, change func() error) error {
	return s.RecordUpdate(ctx, tx, by, outbox.KindAssetType, typeID, func() (any, error) { return s.getAssetType(ctx, tx, typeID) }, change)
}

// setThumbnail confirms the new thumbnail (nil: none) and stores it with
// its metadata.
func setThumbnail(ctx context.Context, tx pgx.Tx, checked *refs.Checked, typeID uuid.UUID, field string, documentID *uuid.UUID) error {
	thumbnail, err := thumbnail(ctx, tx, checked, field, documentID)
	if err != nil {
		return err
	}
	_, err = tx.Exec(ctx, `UPDATE asset_types SET thumbnail_document_id = $2, thumbnail = $3 WHERE id = $1`, typeID, documentID, thumbnail)
	return store.Classify(err, "set thumbnail")
}

// assetTypesOfDocument is the reference protocol's question for a
// document: which asset types attach it or show it as their thumbnail.
func assetTypesOfDocument(ctx context.Context, q store.Querier, id uuid.UUID) ([]refs.Ref, error) {
	rows, err := q.Query(ctx, `SELECT t.id, t.brand, t.model, t.version, 'attached document' AS how
		FROM asset_type_documents d JOIN asset_types t ON t.id = d.asset_type_id WHERE d.document_id = $1
		UNION ALL
		SELECT t.id, t.brand, t.model, t.version, 'thumbnail' FROM asset_types t WHERE t.thumbnail_document_id = $1
		ORDER BY 1, 5`, id)
	if err != nil {
		return nil, store.Classify(err, "asset types of document")
	}
	found, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (refs.Ref, error) {
		ref := refs.Ref{Kind: "asset_type"}
		var brand, model, how string
		var version *string
		err := row.Scan(&ref.ID, &brand, &model, &version, &how)
		ref.Label = brand + " " + model
		if version != nil {
			ref.Label += " " + *version
		}
		ref.Label += ", " + how
		return ref, err
	})
	return found, store.Classify(err, "asset types of document")
}
