package idp

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/assetregistry/registry/pkg/store"
)

// clientStore is the PostgreSQL persistence of clients and secret hashes. Times
// come from the caller (the Clients clock), so expiry can be tested without
// sleeping.
type clientStore struct {
	pool *store.Pool
}

func (s clientStore) createClient(ctx context.Context, c Client, hash []byte) error {
	return store.InTx(ctx, s.pool, "create client", func(tx pgx.Tx) error {
		_, err := tx.Exec(ctx, `INSERT INTO clients (client_id, scopes, resources, created_at, organization_id)
			VALUES ($1, $2, $3, $4, $5)`, c.ID, c.Scopes, c.Resources, c.CreatedAt, c.OrganizationID)
		if _, dup := store.Constraint(err, store.UniqueViolation); dup {
			return fmt.Errorf("%w: %s", ErrClientExists, c.ID)
		}
		if err != nil {
			return store.Classify(err, "insert client")
		}
		// Read after the insert: an insert that waited for a delete of the
		// same id to commit sees its tombstone now.
		var deletedAt time.Time
		err = tx.QueryRow(ctx, `SELECT deleted_at FROM deleted_clients WHERE client_id = $1`, c.ID).Scan(&deletedAt)
		if err == nil {
			return fmt.Errorf("%w: %s was deleted on %s", ErrClientDeleted, c.ID, deletedAt.UTC().Format(time.RFC3339))
		}
		if !errors.Is(err, pgx.ErrNoRows) {
			return store.Classify(err, "read deleted client ids")
		}
		return insertSecret(ctx, tx, c.ID, hash, c.CreatedAt)
	})
}

func insertSecret(ctx context.Context, tx pgx.Tx, id string, hash []byte, now time.Time) error {
	if err := lockGenerations(ctx, tx); err != nil {
		return err
	}
	_, err := tx.Exec(ctx, `INSERT INTO client_secrets (client_id, hash, created_at) VALUES ($1, $2, $3)`, id, hash, now)
	return store.Classify(err, "insert client secret")
}

// lockGenerations makes the transactions that draw credential generations
// take turns until they commit, so that generations become visible in the
// order they are drawn. The verifiers rely on it: a token validity list
// that names generation g names every client with a lower one, so a
// client missing from it with a lower generation is deleted. A sequence
// alone draws in one order and commits in another: two clients created at
// once, and the later one's list would make the earlier one look deleted,
// its first token refused. Changes to clients are an operator's, and rare:
// they may queue.
func lockGenerations(ctx context.Context, tx pgx.Tx) error {
	_, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtextextended('idp credential generations:' || current_schema(), 0))`)
	return store.Classify(err, "lock credential generations")
}

// rotateSecret adds hash as the client's current secret; the secret it
// replaces stays valid until oldExpiry. A secret that was already being
// replaced by an earlier rotation goes at once, so a client never holds more
// than two valid secrets.
func (s clientStore) rotateSecret(ctx context.Context, id string, hash []byte, now, oldExpiry time.Time) error {
	return store.InTx(ctx, s.pool, "rotate client secret", func(tx pgx.Tx) error {
		// The row lock queues concurrent rotations of one client.
		var found string
		err := tx.QueryRow(ctx, `SELECT client_id FROM clients WHERE client_id = $1 FOR UPDATE`, id).Scan(&found)
		if errors.Is(err, pgx.ErrNoRows) {
			return fmt.Errorf("%w: %s", ErrClientNotFound, id)
		}
		if err != nil {
			return store.Classify(err, "lock client")
		}
		if _, err := tx.Exec(ctx, `DELETE FROM client_secrets WHERE client_id = $1 AND expires_at IS NOT NULL`, id); err != nil {
			return store.Classify(err, "delete replaced client secrets")
		}
		if _, err := tx.Exec(ctx, `UPDATE client_secrets SET expires_at = $2 WHERE client_id = $1`, id, oldExpiry); err != nil {
			return store.Classify(err, "expire client secret")
		}
		return insertSecret(ctx, tx, id, hash, now)
	})
}

// secretRecord is what authentication reads of one valid secret: its
// hash, and the generation of the tokens it is used for.
type secretRecord struct {
	hash       []byte
	generation int64
}

// credentials returns the client and its secrets valid at now.
func (s clientStore) credentials(ctx context.Context, id string, now time.Time) (Client, []secretRecord, error) {
	var c Client
	var hashes [][]byte
	var generations []int64
	err := s.pool.QueryRow(ctx, `SELECT c.client_id, c.scopes, c.resources, c.created_at, c.organization_id::text,
			COALESCE(array_agg(s.hash ORDER BY s.generation) FILTER (WHERE s.hash IS NOT NULL), '{}'),
			COALESCE(array_agg(s.generation ORDER BY s.generation) FILTER (WHERE s.hash IS NOT NULL), '{}')
		FROM clients c LEFT JOIN client_secrets s ON s.client_id = c.client_id
			AND (s.expires_at IS NULL OR s.expires_at > $2)
		WHERE c.client_id = $1
		GROUP BY c.client_id`, id, now).Scan(&c.ID, &c.Scopes, &c.Resources, &c.CreatedAt, &c.OrganizationID, &hashes, &generations)
	if errors.Is(err, pgx.ErrNoRows) {
		return Client{}, nil, fmt.Errorf("%w: %s", ErrClientNotFound, id)
	}
	if err != nil {
		return Client{}, nil, store.Classify(err, "read client credentials")
	}
	secrets := make([]secretRecord, len(hashes))
	for i := range hashes {
		secrets[i] = secretRecord{hash: hashes[i], generation: generations[i]}
	}
	return c, secrets, nil
}

// setScopes replaces the client's scopes. When one it held is gone, every
// secret of the client gets a new generation (renewGenerations), and it
// reports that the tokens issued before were voided.
func (s clientStore) setScopes(ctx context.Context, id string, scopes []string) (voided bool, err error) {
	err = store.InTx(ctx, s.pool, "set client scopes", func(tx pgx.Tx) error {
		var held []string
		err := tx.QueryRow(ctx, `SELECT scopes FROM clients WHERE client_id = $1 FOR UPDATE`, id).Scan(&held)
		if errors.Is(err, pgx.ErrNoRows) {
			return fmt.Errorf("%w: %s", ErrClientNotFound, id)
		}
		if err != nil {
			return store.Classify(err, "lock client")
		}
		if _, err := tx.Exec(ctx, `UPDATE clients SET scopes = $2 WHERE client_id = $1`, id, scopes); err != nil {
			return store.Classify(err, "update client scopes")
		}
		voided = slices.ContainsFunc(held, func(s string) bool { return !slices.Contains(scopes, s) })
		if !voided {
			return nil
		}
		return renewGenerations(ctx, tx, id)
	})
	return voided, err
}

// renewGenerations gives every secret of the client a new generation, in
// the order the secrets were made (a secret replaced by a rotation keeps
// the lower one, so its end still voids its tokens): the tokens issued
// before are void once the verifiers read the token validity list.
func renewGenerations(ctx context.Context, tx pgx.Tx, id string) error {
	if err := lockGenerations(ctx, tx); err != nil {
		return err
	}
	// One row at a time: an UPDATE draws nextval in no defined order.
	rows, err := tx.Query(ctx, `SELECT hash FROM client_secrets WHERE client_id = $1 ORDER BY generation`, id)
	if err != nil {
		return store.Classify(err, "read client secrets")
	}
	hashes, err := pgx.CollectRows(rows, pgx.RowTo[[]byte])
	if err != nil {
		return store.Classify(err, "read client secrets")
	}
	for _, h := range hashes {
		if _, err := tx.Exec(ctx, `UPDATE client_secrets SET generation = nextval('credential_generation')
			WHERE client_id = $1 AND hash = $2`, id, h); err != nil {
			return store.Classify(err, "renew secret generation")
		}
	}
	return nil
}

// bind sets the client's organization (nil: none). When it changes, the
// client's secrets get new generations, and it reports that the tokens
// issued before were voided.
func (s clientStore) bind(ctx context.Context, id string, org *string) (voided bool, err error) {
	err = store.InTx(ctx, s.pool, "bind client", func(tx pgx.Tx) error {
		var held *string
		err := tx.QueryRow(ctx, `SELECT organization_id::text FROM clients WHERE client_id = $1 FOR UPDATE`, id).Scan(&held)
		if errors.Is(err, pgx.ErrNoRows) {
			return fmt.Errorf("%w: %s", ErrClientNotFound, id)
		}
		if err != nil {
			return store.Classify(err, "lock client")
		}
		if (held == nil && org == nil) || (held != nil && org != nil && *held == *org) {
			return nil
		}
		if _, err := tx.Exec(ctx, `UPDATE clients SET organization_id = $2 WHERE client_id = $1`, id, org); err != nil {
			return store.Classify(err, "update client organization")
		}
		voided = true
		return renewGenerations(ctx, tx, id)
	})
	return voided, err
}

// tokenValidity is, for every client, the lowest generation among its
// secrets valid at now: a token of the client stands when its generation
// is at least that. A deleted client has no row (its secrets went with it).
func (s clientStore) tokenValidity(ctx context.Context, now time.Time) (map[string]int64, error) {
	rows, err := s.pool.Query(ctx, `SELECT client_id, min(generation) FROM client_secrets
		WHERE expires_at IS NULL OR expires_at > $1
		GROUP BY client_id`, now)
	if err != nil {
		return nil, store.Classify(err, "read token validity")
	}
	out := map[string]int64{}
	var id string
	var generation int64
	_, err = pgx.ForEachRow(rows, []any{&id, &generation}, func() error {
		out[id] = generation
		return nil
	})
	if err != nil {
		return nil, store.Classify(err, "read token validity")
	}
	return out, nil
}

func (s clientStore) listClients(ctx context.Context, now time.Time) ([]Client, error) {
	return store.Many[Client](ctx, s.pool, "list clients", `SELECT c.client_id, c.scopes, c.resources, c.created_at,
			c.organization_id::text AS organization_id,
			COALESCE(json_agg(json_build_object('created_at', s.created_at, 'expires_at', s.expires_at)
				ORDER BY s.created_at) FILTER (WHERE s.hash IS NOT NULL), '[]') AS secrets
		FROM clients c LEFT JOIN client_secrets s ON s.client_id = c.client_id
			AND (s.expires_at IS NULL OR s.expires_at > $1)
		GROUP BY c.client_id
		ORDER BY c.client_id`, now)
}

// deleteClient removes the client and its secrets and keeps its id as a
// tombstone, which createClient refuses; both commit together. A create
// of the id racing the delete either commits first (and is deleted) or
// waits in its insert for the delete to commit and then reads the
// tombstone.
func (s clientStore) deleteClient(ctx context.Context, id string, now time.Time) error {
	return store.InTx(ctx, s.pool, "delete client", func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `DELETE FROM clients WHERE client_id = $1`, id)
		if err != nil {
			return store.Classify(err, "delete client")
		}
		if tag.RowsAffected() == 0 {
			return fmt.Errorf("%w: %s", ErrClientNotFound, id)
		}
		_, err = tx.Exec(ctx, `INSERT INTO deleted_clients (client_id, deleted_at) VALUES ($1, $2)
			ON CONFLICT (client_id) DO NOTHING`, id, now)
		return store.Classify(err, "keep deleted client id")
	})
}
