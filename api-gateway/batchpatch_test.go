package gateway

import (
	"strings"
	"testing"
	"time"

	"github.com/assetregistry/registry/tools/testkit"
)

// A batch of updates (PATCH /<resources>/batch) draws on the item budget
// as a batch of creates does: its items are counted, and a batch the
// budget cannot take is a 429 that does not reach the service.
func TestBatchUpdatesDrawOnTheItemBudget(t *testing.T) {
	t.Parallel()
	f := newGateway(t, func(c *Config) {
		limited(testkit.RedisURL(t), testkit.RedisPrefix(t), func(c *RateLimitConfig) {
			c.Default = Budget{"default", 100, time.Hour}
			c.Items = Budget{"items", 1000, time.Hour}
		})(c)
		c.Upstreams["actions"], c.Upstreams["assets"] = c.Upstreams["parties"], c.Upstreams["parties"]
	})
	rw := f.issuer.ReadWrite(t)
	batch := func(n int) string {
		return `{"items":[` + strings.TrimSuffix(strings.Repeat(`{"id":"x","patch":{}},`, n), ",") + `]}`
	}
	patch := func(path string, n int) testkit.Response {
		return f.client.Do(t, "PATCH", path, rw, batch(n), "Content-Type", "application/json")
	}
	r := testkit.Expect(t, patch("/assets/batch", 600), 200)
	if got := r.Header.Values("RateLimit"); len(got) != 2 || !strings.HasPrefix(got[1], `"items";r=400;`) {
		t.Errorf("RateLimit %q, want 600 items spent", got)
	}
	if body := f.upstream.lastBody(t); body != batch(600) {
		t.Errorf("the service got %d bytes, not the batch", len(body))
	}
	forwarded := f.upstream.count()
	testkit.Expect(t, patch("/actions/batch", 600), 429)
	if f.upstream.count() != forwarded {
		t.Error("a batch of updates over the item budget reached the service")
	}
	// A single update is no batch: it draws no items.
	r = testkit.Expect(t, f.client.Do(t, "PATCH", "/assets/0190f5d2-7c1e-7a3b-9c4d-5e6f7a8b9c0d", rw, `{}`, "Content-Type", "application/json"), 200)
	if got := r.Header.Values("RateLimit"); len(got) != 1 {
		t.Errorf("RateLimit %q on a single update", got)
	}
}
