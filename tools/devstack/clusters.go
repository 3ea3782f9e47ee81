package devstack

import (
	"context"
	"path/filepath"
	"strings"
	"time"

	"github.com/assetregistry/registry/tools/devinfra"
)

// The datastores as clusters (Options.Clusters).

// StandbyName is the PostgreSQL standby's name, as the primary's
// synchronous_standby_names names it; FailedPrimaryName names the first
// primary once it is rebuilt as a standby of the promoted one.
const (
	StandbyName       = "postgres_b"
	FailedPrimaryName = "postgres_a"
	// SecondStandbyName is the other standby: the primary waits for any
	// one of the two (ANY 1), so either may be lost or rebuilt under
	// writes, as with production's two synchronous replicas.
	SecondStandbyName = "postgres_c"
)

// RedisMasterName is the Redis primary's name in Sentinel.
const RedisMasterName = "registry"

// Sentinel's timing on this machine: a primary silent for 2 s is down,
// and a failover gets 10 s before it is tried again. Production keeps
// Sentinel's 5 s and 60 s (docs/operations.md).
const (
	sentinelDownAfter       = 2 * time.Second
	sentinelFailoverTimeout = 10 * time.Second
)

// startPostgresCluster starts a primary and two standbys streaming from
// it, makes them a synchronous quorum of one (a commit the primary answers
// is on one of them too, applied: remote_apply) and returns the superuser's URL
// naming all three servers, which reaches whichever accepts writes.
func (s *Stack) startPostgresCluster(ctx context.Context, o Options, ports Ports) (string, error) {
	primary, err := devinfra.StartPostgres(ctx, devinfra.PostgresOptions{
		DataDir: filepath.Join(o.Dir, "postgres-a"), Port: ports[PostgresPort], Ephemeral: o.Ephemeral,
		LogFile: filepath.Join(s.LogDir, "postgres-a.log"),
	})
	if err != nil {
		return "", err
	}
	s.addStop(func() error { return primary.Stop() })
	standby, err := devinfra.StartPostgresStandby(ctx, devinfra.PostgresStandbyOptions{
		Primary: primary, DataDir: filepath.Join(o.Dir, "postgres-b"), Name: StandbyName,
		LogFile: filepath.Join(s.LogDir, "postgres-b.log"),
	})
	if err != nil {
		return "", err
	}
	s.addStop(func() error { return standby.Stop() })
	second, err := devinfra.StartPostgresStandby(ctx, devinfra.PostgresStandbyOptions{
		Primary: primary, DataDir: filepath.Join(o.Dir, "postgres-c"), Name: SecondStandbyName,
		LogFile: filepath.Join(s.LogDir, "postgres-c.log"),
	})
	if err != nil {
		return "", err
	}
	s.addStop(func() error { return second.Stop() })
	if err := primary.SetSynchronousQuorum(ctx, true, StandbyName, SecondStandbyName); err != nil {
		return "", err
	}
	s.Postgres, s.PostgresStandby, s.PostgresSecondStandby = primary, standby, second
	// Every member is named: after a failover any of the standbys may be
	// the primary (the most advanced one is promoted).
	return devinfra.MultiHostURL(primary.URL, "read-write", primary, standby, second)
}

// startRedisSet starts a Redis primary and a replica, both with the
// deployables' users (ACL users are not replicated), and three Sentinels
// watching them.
func (s *Stack) startRedisSet(ctx context.Context, o Options, ports Ports, users []devinfra.RedisUser) error {
	credentials := filepath.Join(o.Dir, "redis.credentials")
	primary, err := devinfra.StartRedis(ctx, devinfra.RedisOptions{
		DataDir: filepath.Join(o.Dir, "redis-a"), Port: ports[RedisPort], Users: users, CredentialsFile: credentials,
		LogFile: filepath.Join(s.LogDir, "redis-a.log"),
	})
	if err != nil {
		return err
	}
	s.addStop(func() error { return primary.Stop() })
	replica, err := devinfra.StartRedis(ctx, devinfra.RedisOptions{
		DataDir: filepath.Join(o.Dir, "redis-b"), Users: users, CredentialsFile: credentials, ReplicaOf: primary.Addr,
		LogFile: filepath.Join(s.LogDir, "redis-b.log"),
	})
	if err != nil {
		return err
	}
	s.addStop(func() error { return replica.Stop() })
	if s.SentinelPassword, err = devinfra.NewSecret(); err != nil {
		return err
	}
	for _, name := range []string{"sentinel-1", "sentinel-2", "sentinel-3"} {
		sentinel, err := devinfra.StartSentinel(ctx, devinfra.SentinelOptions{
			DataDir: filepath.Join(o.Dir, name), MasterName: RedisMasterName, Master: primary.Addr,
			MasterPassword: primary.Password, Password: s.SentinelPassword, Quorum: 2,
			DownAfter: sentinelDownAfter, FailoverTimeout: sentinelFailoverTimeout,
			LogFile: filepath.Join(s.LogDir, name+".log"),
		})
		if err != nil {
			return err
		}
		s.addStop(func() error { return sentinel.Stop() })
		s.Sentinels = append(s.Sentinels, sentinel)
	}
	s.Redis, s.RedisReplica, s.RedisURL = primary, replica, primary.URL
	return nil
}

// sentinelEnv is what a process with Redis needs to ask the Sentinels for
// the primary; nothing without them.
func (s *Stack) sentinelEnv() []string {
	if len(s.Sentinels) == 0 {
		return nil
	}
	var addrs []string
	for _, sentinel := range s.Sentinels {
		addrs = append(addrs, sentinel.Addr)
	}
	return []string{"REDIS_MASTER_NAME=" + RedisMasterName, "REDIS_SENTINEL_ADDRS=" + strings.Join(addrs, ","),
		"REDIS_SENTINEL_PASSWORD=" + s.SentinelPassword}
}

// startNATSCluster starts three JetStream nodes; the services keep the
// stream in three copies.
func (s *Stack) startNATSCluster(ctx context.Context, o Options) error {
	c, err := devinfra.StartNatsCluster(ctx, devinfra.NatsClusterOptions{DataDir: filepath.Join(o.Dir, "nats-cluster")})
	if err != nil {
		return err
	}
	s.addStop(c.Stop)
	s.NatsCluster = c
	s.NATS = NATS{URL: c.URL, User: c.User, Password: c.Password, Replicas: 3}
	return nil
}
