package heads

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/assetregistry/registry/pkg/store"
)

// The SQL of the asset heads: each asset's chain (asset_chain, a row per
// chained event), its head (asset_heads) and the map's stored nodes
// (asset_head_nodes; a node not stored is an empty subtree's), up to the
// leaf asset_heads_state says. They grow only under that row's lock, in
// the transaction that signs the checkpoint the map's root goes into, so
// what a reader sees of them in one snapshot is the latest checkpoint's.

// Lock takes the heads' lock in tx and reads where the chains start and
// the leaf they were advanced through: take it before reading the log's
// size to advance them to (Advance).
func Lock(ctx context.Context, tx pgx.Tx) (from, through uint64, err error) {
	var f, t int64
	err = tx.QueryRow(ctx, `SELECT from_leaf, through FROM asset_heads_state FOR UPDATE`).Scan(&f, &t)
	return uint64(f), uint64(t), store.Classify(err, "lock the asset heads")
}

// Advance chains the events of leaves [through, size) (Lock answered
// from and through), in tx, rehashes the buckets they changed and the
// nodes above them, and answers the commitment to sign with the
// checkpoint of size.
func Advance(ctx context.Context, tx pgx.Tx, from, through, size uint64) (Commitment, error) {
	c := Commitment{From: from, Through: size}
	if size <= through {
		root, err := readRoot(ctx, tx)
		c.Through, c.Root = through, root
		return c, err
	}
	events, err := readMembers(ctx, tx, through, size)
	if err != nil {
		return c, err
	}
	actionAsset, err := actionAssets(ctx, tx, events, through)
	if err != nil {
		return c, err
	}
	// Each event goes to the chains of its assets, in the log's order.
	appended := map[string][]member{}
	var order []string
	for _, m := range events {
		for _, a := range assetsOf(m, actionAsset) {
			if appended[a] == nil {
				order = append(order, a)
			}
			appended[a] = append(appended[a], m)
		}
	}
	if len(order) > 0 {
		if err := chain(ctx, tx, order, appended); err != nil {
			return c, err
		}
	}
	root, err := readRoot(ctx, tx)
	if err != nil {
		return c, err
	}
	c.Root = root
	_, err = tx.Exec(ctx, `UPDATE asset_heads_state SET through = $1`, int64(size))
	return c, store.Classify(err, "advance the asset heads")
}

// readMembers reads the events of leaves [first, last) that may belong to
// an asset's record, in the log's order, with their leaf hashes (RFC
// 6962, of the bytes as stored: the log's kinds of a record are never
// redacted).
func readMembers(ctx context.Context, tx pgx.Tx, first, last uint64) ([]member, error) {
	rows, err := tx.Query(ctx, `SELECT leaf, kind, subject_id,
			coalesce(body -> 'data' ->> 'asset_id', ''), coalesce(body -> 'changes' -> 'asset_id' ->> 0, ''),
			coalesce(body -> 'data' ->> 'action_id', ''), sha256('\x00'::bytea || convert_to(body::text, 'UTF8'))
		FROM events WHERE seq >= (SELECT log_seq_from($1)) AND leaf >= $1 AND leaf < $2
		AND kind IN ('asset', 'action', 'action_document') ORDER BY seq`, int64(first), int64(last))
	if err != nil {
		return nil, store.Classify(err, "read the events to chain")
	}
	var out []member
	var m member
	var leaf int64
	_, err = pgx.ForEachRow(rows, []any{&leaf, &m.Kind, &m.SubjectID, &m.AssetID, &m.MovedFrom, &m.ActionID, &m.LeafHash}, func() error {
		m.Leaf = uint64(leaf)
		out = append(out, m)
		m = member{}
		return nil
	})
	return out, store.Classify(err, "read the events to chain")
}

// actionAssets are the assets the actions of events' action documents
// were on before leaf first (their latest event's), which the events'
// own action events then move on.
func actionAssets(ctx context.Context, tx pgx.Tx, events []member, first uint64) (map[string]string, error) {
	out := map[string]string{}
	var ids []string
	for _, m := range events {
		if m.Kind == "action_document" && m.ActionID != "" {
			ids = append(ids, m.ActionID)
		}
	}
	if len(ids) == 0 {
		return out, nil
	}
	rows, err := tx.Query(ctx, `SELECT DISTINCT ON (subject_id) subject_id, coalesce(body -> 'data' ->> 'asset_id', '')
		FROM events WHERE kind = 'action' AND subject_id = ANY($1) AND leaf < $2 ORDER BY subject_id, seq DESC`, ids, int64(first))
	if err != nil {
		return nil, store.Classify(err, "read the actions' assets")
	}
	var id, asset string
	_, err = pgx.ForEachRow(rows, []any{&id, &asset}, func() error { out[id] = asset; return nil })
	return out, store.Classify(err, "read the actions' assets")
}

// chain appends each asset's events to its chain, stores the new heads
// and rehashes their buckets and the map above them.
func chain(ctx context.Context, tx pgx.Tx, assets []string, appended map[string][]member) error {
	rows, err := tx.Query(ctx, `SELECT asset_id, asset_seq, chain FROM asset_heads WHERE asset_id = ANY($1)`, assets)
	if err != nil {
		return store.Classify(err, "read the asset heads")
	}
	heads := map[string]Head{}
	var h Head
	var seq int64
	if _, err := pgx.ForEachRow(rows, []any{&h.AssetID, &seq, &h.Chain}, func() error {
		h.AssetSeq = uint64(seq)
		heads[h.AssetID] = h
		return nil
	}); err != nil {
		return store.Classify(err, "read the asset heads")
	}
	var chainAssets []string
	var chainSeqs, chainLeaves []int64
	var headAssets []string
	var headBuckets []int32
	var headSeqs []int64
	var headChains [][]byte
	buckets := map[uint32]bool{}
	for _, a := range assets {
		h, ok := heads[a]
		if !ok {
			h = Head{AssetID: a, Chain: ChainStart()}
		}
		for _, m := range appended[a] {
			h.AssetSeq++
			h.Chain = ChainNext(h.Chain, m.LeafHash)
			chainAssets, chainSeqs, chainLeaves = append(chainAssets, a), append(chainSeqs, int64(h.AssetSeq)), append(chainLeaves, int64(m.Leaf))
		}
		b := BucketOf(a)
		buckets[b] = true
		headAssets, headBuckets, headSeqs, headChains = append(headAssets, a), append(headBuckets, int32(b)), append(headSeqs, int64(h.AssetSeq)), append(headChains, h.Chain)
	}
	bs := make([]int32, 0, len(buckets))
	for b := range buckets {
		bs = append(bs, int32(b))
	}
	batch := &pgx.Batch{}
	batch.Queue(`INSERT INTO asset_chain (asset_id, asset_seq, leaf) SELECT * FROM unnest($1::text[], $2::bigint[], $3::bigint[])`,
		chainAssets, chainSeqs, chainLeaves)
	batch.Queue(`INSERT INTO asset_heads (asset_id, bucket, asset_seq, chain) SELECT * FROM unnest($1::text[], $2::int[], $3::bigint[], $4::bytea[])
		ON CONFLICT (asset_id) DO UPDATE SET asset_seq = EXCLUDED.asset_seq, chain = EXCLUDED.chain`, headAssets, headBuckets, headSeqs, headChains)
	batch.Queue(`SELECT bucket, asset_id, asset_seq, chain FROM asset_heads WHERE bucket = ANY($1)`, bs)
	results := tx.SendBatch(ctx, batch)
	defer results.Close()
	for range 2 {
		if _, err := results.Exec(); err != nil {
			return store.Classify(err, "store the asset heads")
		}
	}
	if rows, err = results.Query(); err != nil {
		return store.Classify(err, "read the heads' buckets")
	}
	contents := map[uint32][]Head{}
	var bucket int32
	if _, err := pgx.ForEachRow(rows, []any{&bucket, &h.AssetID, &seq, &h.Chain}, func() error {
		h.AssetSeq = uint64(seq)
		contents[uint32(bucket)] = append(contents[uint32(bucket)], h)
		h = Head{}
		return nil
	}); err != nil {
		return store.Classify(err, "read the heads' buckets")
	}
	if err := results.Close(); err != nil {
		return store.Classify(err, "store the asset heads")
	}
	changed := map[uint32][]byte{}
	for b := range buckets {
		SortHeads(contents[b])
		if changed[b], err = BucketHash(contents[b]); err != nil {
			return err
		}
	}
	nodes, err := update(changed, func(ids []nodeID) (map[nodeID][]byte, error) { return readNodes(ctx, tx, ids) })
	if err != nil {
		return err
	}
	var levels []int16
	var idxs []int32
	var hashes [][]byte
	for id, h := range nodes {
		levels, idxs, hashes = append(levels, int16(id.Level)), append(idxs, int32(id.Index)), append(hashes, h)
	}
	_, err = tx.Exec(ctx, `INSERT INTO asset_head_nodes (level, idx, hash) SELECT * FROM unnest($1::smallint[], $2::int[], $3::bytea[])
		ON CONFLICT (level, idx) DO UPDATE SET hash = EXCLUDED.hash`, levels, idxs, hashes)
	return store.Classify(err, "store the asset heads' map")
}

// readNodes reads the stored nodes of ids (a node not stored is left out).
func readNodes(ctx context.Context, q store.Querier, ids []nodeID) (map[nodeID][]byte, error) {
	var levels []int16
	var idxs []int32
	for _, id := range ids {
		levels = append(levels, int16(id.Level))
		idxs = append(idxs, int32(id.Index))
	}
	rows, err := q.Query(ctx, `SELECT n.level, n.idx, n.hash FROM asset_head_nodes n
		JOIN unnest($1::smallint[], $2::int[]) AS w(level, idx) ON n.level = w.level AND n.idx = w.idx`, levels, idxs)
	if err != nil {
		return nil, store.Classify(err, "read the asset heads' map")
	}
	type row struct {
		Level int16
		Idx   int32
		Hash  []byte
	}
	found, err := pgx.CollectRows(rows, pgx.RowToStructByPos[row])
	out := make(map[nodeID][]byte, len(found))
	for _, n := range found {
		out[nodeID{int(n.Level), uint32(n.Idx)}] = n.Hash
	}
	return out, store.Classify(err, "read the asset heads' map")
}

// readRoot is the map's root (an empty map's when none is stored).
func readRoot(ctx context.Context, q store.Querier) ([]byte, error) {
	var root []byte
	err := q.QueryRow(ctx, `SELECT hash FROM asset_head_nodes WHERE level = $1 AND idx = 0`, Depth).Scan(&root)
	if errors.Is(err, pgx.ErrNoRows) {
		return empty[Depth], nil
	}
	return root, store.Classify(err, "read the asset heads' root")
}

// Read is the completeness of asset's record as the heads hold it now,
// and the leaf they hold it through (what the checkpoint they went into
// signed): read it in the snapshot the passport reads its events in.
func Read(ctx context.Context, q store.Querier, asset string) (Completeness, uint64, error) {
	var c Completeness
	var from, through int64
	if err := q.QueryRow(ctx, `SELECT from_leaf, through FROM asset_heads_state`).Scan(&from, &through); err != nil {
		return c, 0, store.Classify(err, "read the asset heads' state")
	}
	c.From = uint64(from)
	rows, err := q.Query(ctx, `SELECT leaf FROM asset_chain WHERE asset_id = $1 ORDER BY asset_seq`, asset)
	if err != nil {
		return c, 0, store.Classify(err, "read an asset's chain")
	}
	c.Chain = []uint64{}
	var leaf int64
	if _, err := pgx.ForEachRow(rows, []any{&leaf}, func() error { c.Chain = append(c.Chain, uint64(leaf)); return nil }); err != nil {
		return c, 0, store.Classify(err, "read an asset's chain")
	}
	b := BucketOf(asset)
	if rows, err = q.Query(ctx, `SELECT asset_id, asset_seq, chain FROM asset_heads WHERE bucket = $1`, int32(b)); err != nil {
		return c, 0, store.Classify(err, "read an asset's bucket")
	}
	c.Bucket = []Head{}
	var h Head
	var seq int64
	if _, err := pgx.ForEachRow(rows, []any{&h.AssetID, &seq, &h.Chain}, func() error {
		h.AssetSeq = uint64(seq)
		c.Bucket = append(c.Bucket, h)
		h = Head{}
		return nil
	}); err != nil {
		return c, 0, store.Classify(err, "read an asset's bucket")
	}
	SortHeads(c.Bucket)
	ids := make([]nodeID, Depth)
	for l := range Depth {
		ids[l] = nodeID{l, (b >> l) ^ 1}
	}
	stored, err := readNodes(ctx, q, ids)
	if err != nil {
		return c, 0, err
	}
	c.Path = pathOf(b, stored)
	if len(c.Chain) > 0 && c.Chain[0] < c.From {
		return c, 0, fmt.Errorf("heads: asset %s chained leaf %d, before the chains start (%d)", asset, c.Chain[0], c.From)
	}
	return c, uint64(through), nil
}
