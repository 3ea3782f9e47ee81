//go:build faults

package faults

import (
	"context"
	"fmt"
	"net"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/assetregistry/registry/tools/devinfra"
	"github.com/assetregistry/registry/tools/testkit"
)

// PostgreSQL: the primary cut off from both standbys while the load
// writes. Each standby streams through a proxy of its own; cutting the
// proxies drops every byte both ways (no reset reaches either end, as
// with a lost route), so the primary's commits wait for a standby that
// never answers and the services give up on them within their request
// timeout. After partitionHold the operator acts as CloudNativePG does on
// a primary it cannot trust: the isolated primary is fenced (killed, so it
// can acknowledge nothing more) and the standby that received the most
// WAL is promoted. A commit the primary acknowledged was applied on at
// least one standby (ANY 1, remote_apply) and so on the most advanced one:
// nothing acknowledged may be lost. Commits the isolated primary wrote
// locally while it waited were never acknowledged; they go with it, and
// the load sends them again with their keys.

// partitionHold is how long the partition lasts before the operator
// fences the primary: longer than the services' request timeout, so the
// writes held are refused by their own deadline, not by the fence, and
// longer than their statement_timeout (database.statement-timeout, 5 s),
// which must not end a commit's wait for a standby as a success; short
// of the load's hang bound.
const partitionHold = 8 * time.Second

// link is a standby's way to its primary: it passes the replication
// stream until cut, then reads and drops everything both ways, new
// connections included.
type link struct {
	mu    sync.Mutex
	cut   bool
	conns []net.Conn
}

func (l *link) join(client, server net.Conn) {
	l.mu.Lock()
	l.conns = append(l.conns, client, server)
	l.mu.Unlock()
	go l.pipe(server, client)
	go l.pipe(client, server)
}

func (l *link) pipe(dst, src net.Conn) {
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if err != nil {
			if !l.isCut() {
				dst.Close()
			}
			return
		}
		if l.isCut() {
			continue
		}
		if _, err := dst.Write(buf[:n]); err != nil {
			src.Close()
			return
		}
	}
}

func (l *link) isCut() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.cut
}

func (l *link) sever() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.cut = true
}

func (l *link) close() {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, c := range l.conns {
		c.Close()
	}
}

var (
	partitionLinks []*link
	// promotedAfterPartition is the standby promoted; the other two are
	// rebuilt from it by healPartition.
	promotedAfterPartition *devinfra.Postgres
)

// memberName is a server's application_name in the quorum: its data
// dir's name (postgres-b is postgres_b), as devstack names them.
func memberName(p *devinfra.Postgres) string {
	return strings.ReplaceAll(filepath.Base(p.DataDir), "-", "_")
}

// streamThroughLinks makes each standby stream from the primary through a
// link of its own, one standby at a time (the other keeps the quorum), and
// waits until both stream through theirs.
func streamThroughLinks(t *testing.T) {
	partitionLinks = nil
	primary := stack.Postgres
	for _, standby := range []*devinfra.Postgres{stack.PostgresStandby, stack.PostgresSecondStandby} {
		l := &link{}
		t.Cleanup(l.close)
		addr := testkit.Proxy(t, fmt.Sprintf("127.0.0.1:%d", primary.Port), l.join)
		_, port, _ := net.SplitHostPort(addr)
		conninfo := fmt.Sprintf("host=127.0.0.1 port=%s user=%s password=%s application_name=%s sslmode=disable",
			port, primary.User, primary.Password, memberName(standby))
		conn := connect(t, standby)
		for _, stmt := range []string{
			"ALTER SYSTEM SET primary_conninfo = '" + strings.ReplaceAll(conninfo, "'", "''") + "'",
			"SELECT pg_reload_conf()",
		} {
			if _, err := conn.Exec(t.Context(), stmt); err != nil {
				t.Fatalf("%s on %s: %v", strings.Fields(stmt)[0], memberName(standby), err)
			}
		}
		testkit.Eventually(t, memberName(standby)+" streaming through its link", time.Minute, func() bool {
			var streaming bool
			err := conn.QueryRow(t.Context(), `SELECT status = 'streaming' AND conninfo LIKE '%port='||$1||' %'
				FROM pg_stat_wal_receiver`, port).Scan(&streaming)
			return err == nil && streaming
		})
		conn.Close(context.Background())
		partitionLinks = append(partitionLinks, l)
	}
	conn := connect(t, primary)
	defer conn.Close(context.Background())
	testkit.Eventually(t, "both standbys in the primary's quorum", time.Minute, func() bool {
		var n int
		err := conn.QueryRow(t.Context(), `SELECT count(*) FROM pg_stat_replication
			WHERE state = 'streaming' AND sync_state = 'quorum'`).Scan(&n)
		return err == nil && n == 2
	})
}

// partitionPrimary cuts both links, holds the partition, fences the
// primary and promotes the standby that received the most WAL.
func partitionPrimary(t *testing.T) {
	for _, l := range partitionLinks {
		l.sever()
	}
	time.Sleep(partitionHold)
	must(t, stack.Postgres.Kill())
	var (
		best    *devinfra.Postgres
		bestLSN int64 = -1
	)
	for _, standby := range []*devinfra.Postgres{stack.PostgresStandby, stack.PostgresSecondStandby} {
		conn := connect(t, standby)
		var lsn int64
		err := conn.QueryRow(t.Context(), `SELECT pg_wal_lsn_diff(
			greatest(coalesce(pg_last_wal_receive_lsn(), '0/0'), coalesce(pg_last_wal_replay_lsn(), '0/0')), '0/0')::bigint`).Scan(&lsn)
		conn.Close(context.Background())
		must(t, err)
		t.Logf("%s received WAL to %d", memberName(standby), lsn)
		if lsn > bestLSN {
			best, bestLSN = standby, lsn
		}
	}
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	must(t, best.Promote(ctx))
	promotedAfterPartition = best
}

// healPartition rebuilds the fenced primary and the other standby as
// standbys of the promoted one and names them its quorum again.
func healPartition(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	promoted := promotedAfterPartition
	var others []*devinfra.Postgres
	for _, p := range []*devinfra.Postgres{stack.Postgres, stack.PostgresStandby, stack.PostgresSecondStandby} {
		if p != promoted {
			others = append(others, p)
		}
	}
	for _, p := range others {
		must(t, p.Follow(ctx, promoted, memberName(p)))
	}
	must(t, promoted.SetSynchronousQuorum(ctx, true, memberName(others[0]), memberName(others[1])))
	stack.Postgres, stack.PostgresStandby, stack.PostgresSecondStandby = promoted, others[0], others[1]
}

// connect is the superuser's connection to one server of the cluster.
func connect(t *testing.T, p *devinfra.Postgres) *pgx.Conn {
	t.Helper()
	conn, err := pgx.Connect(t.Context(), p.URL)
	if err != nil {
		t.Fatalf("connect to %s: %v", memberName(p), err)
	}
	return conn
}
