package cache_test

import (
	"strconv"
	"testing"
	"time"

	"github.com/assetregistry/registry/pkg/cache"
	"github.com/assetregistry/registry/tools/testkit"
)

// A watermark only grows, however late a raise arrives; another service
// reads it by the key its owner names; it lapses when nobody raises it.
func TestWatermarkOnlyGrowsAndLapses(t *testing.T) {
	t.Parallel()
	owner := newFinds(t, testkit.RedisURL(t)).Watermark("log_watermark")
	reader := newFinds(t, testkit.RedisURL(t)).WatermarkAt(owner.Key())
	ctx := t.Context()
	if _, ok := reader.Read(ctx); ok {
		t.Fatal("a watermark nobody raised reads as one")
	}
	for _, step := range []struct{ raise, want int64 }{{0, 0}, {7, 7}, {3, 7}, {8, 8}} {
		if err := owner.Raise(ctx, step.raise, time.Minute); err != nil {
			t.Fatal(err)
		}
		if v, ok := reader.Read(ctx); !ok || v != step.want {
			t.Fatalf("after raising to %d: %d %v, want %d", step.raise, v, ok, step.want)
		}
	}
	if err := owner.Raise(ctx, 9, 50*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond)
	if v, ok := reader.Read(ctx); ok {
		t.Fatalf("a watermark past its lifetime reads %d", v)
	}
}

// Without Redis, or with Redis down, there is no watermark to trust, and
// a down Redis is not asked again for the back-off.
func TestWatermarkWithoutRedisReadsNone(t *testing.T) {
	t.Parallel()
	down := newFinds(t, "redis://127.0.0.1:"+strconv.Itoa(testkit.FreePort(t))+"/0").WatermarkAt("svc:w")
	start := time.Now()
	for range 20 {
		if _, ok := down.Read(t.Context()); ok {
			t.Fatal("a watermark read from a Redis that is down")
		}
	}
	if time.Since(start) > 5*time.Second {
		t.Fatal("reads of a watermark on a dead Redis are not short-circuited")
	}
	if err := down.Raise(t.Context(), 1, time.Minute); err == nil {
		t.Fatal("a raise on a Redis that is down succeeded")
	}
	var none cache.Finds
	if w := none.Watermark("w"); w.Key() != "" || w.Raise(t.Context(), 1, time.Minute) != nil {
		t.Fatal("without Redis a watermark has a key, or its raise fails")
	}
}
