// Command testinfra runs one ephemeral PostgreSQL, one Redis, one MinIO and
// one NATS (JetStream) server for a whole `make test` run, so that test packages share them
// instead of each starting their own (see pkg/testharness).
//
//	testinfra -env-file .testinfra.env &
//
// It starts the four at once. Once all accept connections it writes
// TEST_DATABASE_URL, TEST_REDIS_URL, TEST_S3_ENDPOINT, TEST_S3_ACCESS_KEY,
// TEST_S3_SECRET_KEY, TEST_S3_REGION, TEST_NATS_URL, TEST_NATS_USER and
// TEST_NATS_PASSWORD lines to the env file (mode 0600, as
// it holds a secret, and atomically, so a reader polling for the file never
// sees half of it). PostgreSQL and Redis need passwords, which the URLs
// carry; their credentials files (0600) are in the data dir. It then runs
// until SIGINT or SIGTERM, or until its parent process dies, and stops the
// servers and removes their data dir and the env file.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"sync"
	"syscall"

	"github.com/assetregistry/registry/tools/devinfra"
)

func main() {
	dir := flag.String("dir", "", "directory for the servers' data, removed on exit; must be absent or empty (default: a new temp dir)")
	envFile := flag.String("env-file", "", "file to write TEST_DATABASE_URL, TEST_REDIS_URL and TEST_S3_* and TEST_NATS_* to once the servers are ready (required)")
	flag.Parse()
	if err := run(*dir, *envFile); err != nil {
		fmt.Fprintln(os.Stderr, "testinfra:", err)
		os.Exit(1)
	}
}

func run(dir, envFile string) (err error) {
	if envFile == "" {
		return errors.New("-env-file is required")
	}
	if err := exitWithParent(); err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()

	// A file left by an earlier, killed run would make a caller waiting for
	// the file go ahead with dead URLs.
	if err := os.Remove(envFile); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("remove stale env file: %w", err)
	}
	defer os.Remove(envFile)

	dir, err = makeDataDir(dir)
	if err != nil {
		return err
	}
	defer func() {
		if rmErr := os.RemoveAll(dir); rmErr != nil {
			err = errors.Join(err, fmt.Errorf("remove data dir: %w", rmErr))
		}
	}()

	// The four start at once, so the run waits for the slowest alone
	// (MinIO when its binary is still being built, see ensure-server). The
	// first failure ends the others' wait rather than a minutes-long build.
	startCtx, failed := context.WithCancel(ctx)
	defer failed()
	var (
		wg                  sync.WaitGroup
		pg                  *devinfra.Postgres
		rd                  *devinfra.Redis
		s3                  *devinfra.Minio
		nc                  *devinfra.Nats
		pgErr, rdErr, s3Err error
		ncErr               error
	)
	wg.Go(func() {
		if pg, pgErr = devinfra.StartPostgres(startCtx, devinfra.PostgresOptions{DataDir: filepath.Join(dir, "postgres"), Ephemeral: true}); pgErr != nil {
			failed()
		}
	})
	wg.Go(func() {
		if rd, rdErr = devinfra.StartRedis(startCtx, devinfra.RedisOptions{DataDir: filepath.Join(dir, "redis")}); rdErr != nil {
			failed()
		}
	})
	wg.Go(func() {
		if s3, s3Err = devinfra.StartMinio(startCtx, devinfra.MinioOptions{DataDir: filepath.Join(dir, "minio")}); s3Err != nil {
			failed()
		}
	})
	wg.Go(func() {
		if nc, ncErr = devinfra.StartNats(startCtx, devinfra.NatsOptions{DataDir: filepath.Join(dir, "nats")}); ncErr != nil {
			failed()
		}
	})
	wg.Wait()
	if pg != nil {
		defer func() { err = errors.Join(err, pg.Stop()) }()
	}
	if rd != nil {
		defer func() { err = errors.Join(err, rd.Stop()) }()
	}
	if s3 != nil {
		defer func() { err = errors.Join(err, s3.Stop()) }()
	}
	if nc != nil {
		defer func() { err = errors.Join(err, nc.Stop()) }()
	}
	if err := errors.Join(pgErr, rdErr, s3Err, ncErr); err != nil {
		return err
	}

	env := fmt.Sprintf("TEST_DATABASE_URL=%s\nTEST_REDIS_URL=%s\n"+
		"TEST_S3_ENDPOINT=%s\nTEST_S3_ACCESS_KEY=%s\nTEST_S3_SECRET_KEY=%s\nTEST_S3_REGION=%s\n"+
		"TEST_NATS_URL=%s\nTEST_NATS_USER=%s\nTEST_NATS_PASSWORD=%s\n",
		pg.URL, rd.URL, s3.Endpoint, s3.AccessKey, s3.SecretKey, s3.Region, nc.URL, nc.User, nc.Password)
	if err := writeFileAtomic(envFile, env); err != nil {
		return err
	}
	// Addresses only: the URLs carry passwords, which stay in the env file.
	fmt.Fprintf(os.Stderr, "testinfra: postgres at 127.0.0.1:%d, redis at %s, minio at %s, nats at %s; logs in %s\n", pg.Port, rd.Addr, s3.URL, nc.URL, dir)
	<-ctx.Done()
	return nil
}

// exitWithParent asks the kernel to SIGTERM us when our parent dies, so that
// an interrupted make recipe still gets its servers cleaned up.
func exitWithParent() error {
	parent := os.Getppid()
	if _, _, errno := syscall.RawSyscall(syscall.SYS_PRCTL, syscall.PR_SET_PDEATHSIG, uintptr(syscall.SIGTERM), 0); errno != 0 {
		return fmt.Errorf("set parent death signal: %w", errno)
	}
	if os.Getppid() != parent {
		return errors.New("parent exited during startup")
	}
	return nil
}

// makeDataDir creates dir, or a temp dir if it is "". It refuses a non-empty
// dir because the whole dir is removed on exit.
func makeDataDir(dir string) (string, error) {
	var err error
	if dir == "" {
		dir, err = os.MkdirTemp("", "testinfra-")
	} else {
		var entries []os.DirEntry
		if entries, err = os.ReadDir(dir); err == nil && len(entries) > 0 {
			return "", fmt.Errorf("data dir %s is not empty, and would be removed on exit", dir)
		}
		err = os.MkdirAll(dir, 0o755)
	}
	if err != nil {
		return "", fmt.Errorf("create data dir: %w", err)
	}
	// When we are root, Postgres runs as the postgres user and must be able
	// to reach its data dir inside this one (MkdirTemp makes it 0700).
	if err := os.Chmod(dir, 0o755); err != nil {
		return "", fmt.Errorf("create data dir: %w", err)
	}
	return dir, nil
}

func writeFileAtomic(path, content string) error {
	tmp := path + ".tmp"
	// 0600: the file holds the S3 secret key. WriteFile applies the mode
	// only to a new file, so first remove one an earlier run may have left.
	_ = os.Remove(tmp)
	if err := os.WriteFile(tmp, []byte(content), 0o600); err != nil {
		return fmt.Errorf("write env file: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("write env file: %w", err)
	}
	return nil
}
