package sdktest

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	registry "github.com/assetregistry/registry/sdk"
)

// `registry webhooks` manages the client's subscriptions from a shell:
// create (the secret printed once), list, get, update, rotate (a new
// secret), the delivery log, retry (a succeeded delivery is refused) and
// delete.
func TestWebhooksCommand(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	var received atomic.Int64
	receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		received.Add(1)
		w.WriteHeader(http.StatusNoContent)
	}))
	defer receiver.Close()

	run := func(args ...string) string {
		t.Helper()
		out, stderr, code := cli(t, dir, nil, args...)
		if code != 0 {
			t.Fatalf("registry %s: exit %d: %s", strings.Join(args, " "), code, stderr)
		}
		return out
	}
	var hook registry.Webhook
	body := fmt.Sprintf(`{"url":%q,"types":["asset_type.*"],"description":"sdktest"}`, receiver.URL+"/hook")
	if err := json.Unmarshal([]byte(run("webhooks", "create", "-data", body)), &hook); err != nil || hook.ID == "" || hook.Secret == "" {
		t.Fatalf("webhooks create: %+v %v", hook, err)
	}
	if out := run("webhooks", "list", "-output", "table"); !strings.Contains(out, hook.ID) {
		t.Errorf("webhooks list does not name %s:\n%s", hook.ID, out)
	}
	var got registry.Webhook
	if err := json.Unmarshal([]byte(run("webhooks", "get", hook.ID)), &got); err != nil || got.URL != hook.URL || got.Secret != "" {
		t.Errorf("webhooks get: %+v %v (the secret is shown only at create and rotate)", got, err)
	}
	if err := json.Unmarshal([]byte(run("webhooks", "update", hook.ID, "-data", `{"description":"renamed"}`)), &got); err != nil ||
		got.Description == nil || *got.Description != "renamed" {
		t.Errorf("webhooks update: %+v %v", got, err)
	}
	var rotated registry.Webhook
	if err := json.Unmarshal([]byte(run("webhooks", "rotate", hook.ID)), &rotated); err != nil || rotated.Secret == "" || rotated.Secret == hook.Secret {
		t.Errorf("webhooks rotate: a new secret? %q after %q (%v)", rotated.Secret, hook.Secret, err)
	}

	// An event of the subscribed kind is delivered; the log says so.
	c := newClient(t, http.DefaultTransport)
	if _, err := c.CreateAssetType(context.Background(), registry.AssetTypeInput{Brand: "Hook", Model: fmt.Sprint(time.Now().UnixNano())}); err != nil {
		t.Fatal(err)
	}
	var deliveries []registry.Delivery
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline) && len(deliveries) == 0; time.Sleep(200 * time.Millisecond) {
		if err := json.Unmarshal([]byte(run("webhooks", "deliveries", hook.ID, "-status", "succeeded")), &deliveries); err != nil {
			t.Fatal(err)
		}
	}
	if len(deliveries) == 0 || received.Load() == 0 {
		t.Fatalf("no delivery succeeded (%d requests received)", received.Load())
	}
	if _, stderr, code := cli(t, dir, nil, "webhooks", "retry", hook.ID, deliveries[0].ID); code != 1 || !strings.Contains(stderr, "409") && !strings.Contains(stderr, "succeeded") {
		t.Errorf("retry of a succeeded delivery: exit %d, %s", code, stderr)
	}
	if out := run("webhooks", "deliveries", hook.ID, "-output", "table"); !strings.HasPrefix(out, "ID") || !strings.Contains(out, deliveries[0].ID) {
		t.Errorf("webhooks deliveries -output table:\n%s", out)
	}

	run("webhooks", "delete", hook.ID)
	if _, _, code := cli(t, dir, nil, "webhooks", "get", hook.ID); code != 1 {
		t.Errorf("webhooks get after delete: exit %d", code)
	}
}
