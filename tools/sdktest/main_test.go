// Package sdktest tests the integration kit (sdk/ and its registry
// command) against a whole registry started as make run does: real
// PostgreSQL, Redis and MinIO, tokens from the real identity provider,
// every call through the gateway.
package sdktest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/assetregistry/registry/tools/devstack"
)

var (
	suite  *devstack.Suite
	cliBin string // the registry command, built from sdk/cmd/registry
)

// tokenTTL is short, so that tokens expire during a test run and the
// SDK's refresh is exercised (the gateway still allows 60 s of leeway, so
// the check is on the fetches, not on refusals). Three seconds is still
// many of TestTokenRefreshesDuringARun's 200 ms strides per lifetime, and
// the SDK's refresh a fifth of a lifetime early (0.6 s) more than one.
const tokenTTL = 3 * time.Second

func TestMain(m *testing.M) { os.Exit(run(m)) }

func run(m *testing.M) int {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	database := "sdk_" + hex.EncodeToString(b)
	shared := os.Getenv("TEST_DATABASE_URL")
	s, stop, err := devstack.StartSuite(ctx, "sdktest", devstack.Options{
		Ephemeral: true, Database: database, PostgresURL: shared, RedisURL: os.Getenv("TEST_REDIS_URL"),
		S3: devstack.S3{Endpoint: os.Getenv("TEST_S3_ENDPOINT"), AccessKey: os.Getenv("TEST_S3_ACCESS_KEY"),
			SecretKey: os.Getenv("TEST_S3_SECRET_KEY"), Region: os.Getenv("TEST_S3_REGION")},
		Env: []string{"TOKEN_TTL=" + tokenTTL.String()},
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, "sdktest:", err)
		return 1
	}
	defer func() {
		if err := stop(); err != nil {
			fmt.Fprintln(os.Stderr, "sdktest: stop stack:", err)
		}
		if shared != "" {
			_ = devstack.DropDatabase(context.Background(), shared, database)
		}
	}()
	suite = s
	root, err := devstack.RepoRoot()
	if err != nil {
		fmt.Fprintln(os.Stderr, "sdktest:", err)
		return 1
	}
	cliBin = filepath.Join(s.Dir, "registry")
	build := exec.CommandContext(ctx, "go", "build", "-tags", "testhooks", "-o", cliBin, "./sdk/cmd/registry")
	build.Dir, build.Stdout, build.Stderr = root, os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "sdktest: build the registry command:", err)
		return 1
	}
	return m.Run()
}
