package sdktest

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	registry "github.com/assetregistry/registry/sdk"
	"github.com/assetregistry/registry/tools/devstack"
)

// make run on a fresh machine: the stack starts without waiting for the
// object store; until documents joins, its paths answer 503 with
// Retry-After (never another error), the rest answers at once, and the
// SDK's upload waits through the breaker's last 503s and lands once.
func TestDocumentsJoinLater(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a second stack")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	database := "sdklate_" + strings.ReplaceAll(time.Now().Format("150405.000"), ".", "")
	s, stop, err := devstack.StartSuite(ctx, "sdklate", devstack.Options{
		Ephemeral: true, Database: database,
		PostgresURL: os.Getenv("TEST_DATABASE_URL"), RedisURL: os.Getenv("TEST_REDIS_URL"),
		ObjectStoreLater: true, // and no S3 given: a private MinIO, started late
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := stop(); err != nil {
			t.Error(err)
		}
		if u := os.Getenv("TEST_DATABASE_URL"); u != "" {
			_ = devstack.DropDatabase(context.Background(), u, database)
		}
	})
	c, err := registry.New(registry.Config{URL: s.Creds.RegistryURL, AuthURL: s.Creds.AuthURL, Resource: s.Creds.Resource,
		ClientID: s.Creds.ClientID, ClientSecret: s.Creds.ClientSecret, MaxAttempts: 1})
	if err != nil {
		t.Fatal(err)
	}
	// Until documents joins: 503 with Retry-After, or already the answer.
	saw503 := false
	for done := false; !done; {
		select {
		case err := <-s.ObjectStoreReady:
			if err != nil {
				t.Fatal(err)
			}
			done = true
		default:
			_, err := c.GetDocument(ctx, "01890000-0000-7000-8000-000000000000")
			var p *registry.Problem
			switch {
			case registry.IsNotFound(err):
			case asProblem(err, &p) && p.Status == http.StatusServiceUnavailable && p.RetryAfter > 0:
				saw503 = true
			default:
				t.Fatalf("before documents joined: %v", err)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	t.Logf("saw a 503 while documents was starting: %v", saw503)
	if _, err := c.CreateOrganization(ctx, registry.OrganizationInput{Name: "Late", RegistrationNumber: "late-1",
		OrganizationType: registry.OrganizationPrivate}); err != nil {
		t.Fatal(err)
	}
	// The gateway's breaker for documents opened while nothing listened;
	// for its last seconds it still answers 503 with Retry-After, which an
	// SDK that retries (the default) waits out.
	retrying, err := registry.New(registry.Config{URL: s.Creds.RegistryURL, AuthURL: s.Creds.AuthURL, Resource: s.Creds.Resource,
		ClientID: s.Creds.ClientID, ClientSecret: s.Creds.ClientSecret})
	if err != nil {
		t.Fatal(err)
	}
	doc, err := retrying.Upload(ctx, "expert_control_report", "r.txt", bytes.NewReader([]byte("late report")))
	if err != nil || doc.Size != 11 {
		t.Fatalf("upload once documents joined: %+v, %v", doc, err)
	}
}

func asProblem(err error, p **registry.Problem) bool { return errors.As(err, p) }
