// Package e2e tests the registry from outside, as an integration would:
// the real binaries (gateway, parties, identity provider) in their own
// processes over real PostgreSQL and Redis, tokens from the real token
// endpoint, every call through the gateway unless a test is about going
// around it.
package e2e

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/assetregistry/registry/tools/devstack"
)

var (
	stack *devstack.Stack
	creds devstack.Credentials
	spans *otlpReceiver
	bin   string // directory with the binaries
)

func TestMain(m *testing.M) { os.Exit(run(m)) }

// acquireTimeout is how long a request of the stack (or an operator's
// command) waits for a database connection before it gives up with a 503.
const acquireTimeout = 15 * time.Second

func run(m *testing.M) int {
	spans = startOTLPReceiver()
	defer spans.Close()

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	database := "e2e_" + randomHex()
	sharedPostgres := os.Getenv("TEST_DATABASE_URL")
	suite, stop, err := devstack.StartSuite(ctx, "e2e", devstack.Options{
		Ephemeral: true, Database: database,
		PostgresURL: sharedPostgres, RedisURL: os.Getenv("TEST_REDIS_URL"),
		S3: devstack.S3{
			Endpoint:  os.Getenv("TEST_S3_ENDPOINT"),
			AccessKey: os.Getenv("TEST_S3_ACCESS_KEY"), SecretKey: os.Getenv("TEST_S3_SECRET_KEY"),
			Region: os.Getenv("TEST_S3_REGION"),
		},
		// A stream of its own on the shared server (none when the suite
		// starts its own).
		NATS: devstack.NATS{
			URL: os.Getenv("TEST_NATS_URL"), User: os.Getenv("TEST_NATS_USER"), Password: os.Getenv("TEST_NATS_PASSWORD"),
			Stream: strings.ToUpper(database), SubjectPrefix: database + ".registry.events",
		},
		Env: []string{
			"OTEL_EXPORTER_OTLP_ENDPOINT=" + spans.URL,
			"OTEL_BSP_SCHEDULE_DELAY=50", // export spans quickly for the trace test
			// A small upload limit keeps the over-the-limit test fast. The
			// gateway keeps its default (larger) limit on purpose: the
			// service then refuses uploads the gateway is still sending,
			// the case the gateway must relay rather than turn into a 503.
			fmt.Sprintf("DOCUMENTS_MAX_SIZE=%d", maxUpload),
			// Short body deadlines keep the stalled-client tests quick.
			"HTTP_BODY_TIMEOUT=" + bodyTimeout.String(),
			"HTTP_UPLOAD_RATE_WINDOW=" + bodyTimeout.String(),
			// One client with a small budget of its own, so that a test
			// reaches its 429 in a few calls (TestRateLimitsThroughGateway).
			"RATE_LIMIT_CLIENTS=" + limitedClient + "=" + limitedBudget,
			// One client with a small budget of batch items of its own
			// (TestBatchItemsThroughGateway).
			"RATE_LIMIT_CLIENT_ITEMS=" + itemsClient + "=" + itemsBudget,
			// The tests here check what the limiter answers, not its
			// failing open (the gateway's own tests and the fault suite
			// do): on a loaded CI machine Redis can take longer than the
			// default 25 ms, and the call would then go through unchecked.
			"RATE_LIMIT_TIMEOUT=2s",
			// Likewise the tests check what the services answer, not their
			// shedding of load (pkg/store's tests and the fault suite do):
			// with the tests running beside each other on a loaded CI
			// machine, a write can wait longer than the default 2 s for a
			// connection, and would be answered 503.
			"DATABASE_ACQUIRE_TIMEOUT=" + acquireTimeout.String(),
			// A checkpoint every second rather than production's 5 s: the
			// tests that prove a write against the log (passports, the
			// verify page, commitments, tiles) wait for the checkpoint
			// that holds it, and would otherwise wait most of 5 s each.
			"TRANSPARENCY_CHECKPOINT_EVERY=1s",
		},
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		return 1
	}
	defer func() {
		if err := stop(); err != nil {
			fmt.Fprintln(os.Stderr, "e2e: stop stack:", err)
		}
		if sharedPostgres != "" {
			_ = devstack.DropDatabase(context.Background(), sharedPostgres, database)
		}
	}()
	stack, creds, bin = suite.Stack, suite.Creds, suite.Bin
	return m.Run()
}

func randomHex() string {
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
