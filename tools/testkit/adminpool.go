package testkit

import (
	"context"
	"fmt"
	"sync"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// admins holds one small pool per server for the harness's own
// statements (schemas dropped): a PostgreSQL session costs its server a
// process, tens of milliseconds of CPU on a virtual machine, and tests
// make and drop hundreds of schemas.
var admins struct {
	mu    sync.Mutex
	pools map[string]*pgxpool.Pool
}

func adminPool(ctx context.Context, server string) (*pgxpool.Pool, error) {
	admins.mu.Lock()
	defer admins.mu.Unlock()
	if p := admins.pools[server]; p != nil {
		return p, nil
	}
	cfg, err := pgxpool.ParseConfig(server)
	if err != nil {
		return nil, fmt.Errorf("admin pool: %w", err)
	}
	cfg.MaxConns = 4
	// Statements only this harness sends, each once: nothing to prepare.
	cfg.ConnConfig.DefaultQueryExecMode = pgx.QueryExecModeSimpleProtocol
	p, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("admin pool: %w", err)
	}
	if admins.pools == nil {
		admins.pools = map[string]*pgxpool.Pool{}
	}
	admins.pools[server] = p
	return p, nil
}

// closeAdminPools ends the harness's sessions before its servers stop.
func closeAdminPools() {
	admins.mu.Lock()
	defer admins.mu.Unlock()
	for server, p := range admins.pools {
		p.Close()
		delete(admins.pools, server)
	}
}
