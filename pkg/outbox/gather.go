package outbox

import (
	"context"
	"time"
)

// Gather is how long a reader of the stream (the events service's
// consumer, a Follower) that has just taken a first message waits for more
// before it handles them, sinceLast after its previous batch began: the
// relay's own rule (gather). Each of its batches costs about the same
// whatever its size (a transaction, its statements, the log's tiles, the
// dispatcher's fan-out and claim), and the relay publishes a round as a
// burst that arrives over a few milliseconds: a reader that took only
// what had queued when the first message came would store each round in
// two or three batches.
func Gather(sinceLast time.Duration) time.Duration { return gather(sinceLast) }

// Collect is first and what arrives after it, until wait has passed,
// max messages are in hand (a backlog is never held back by the wait) or
// ctx ends, in the order they arrived.
func Collect[T any](ctx context.Context, first T, arrived <-chan T, max int, wait time.Duration) []T {
	batch := []T{first}
	timer := time.NewTimer(wait)
	defer timer.Stop()
	for len(batch) < max {
		select {
		case m := <-arrived:
			batch = append(batch, m)
		case <-timer.C:
			return drained(batch, arrived, max)
		case <-ctx.Done():
			return batch
		}
	}
	return batch
}

// drained is batch with what has already arrived, up to max.
func drained[T any](batch []T, arrived <-chan T, max int) []T {
	for len(batch) < max {
		select {
		case m := <-arrived:
			batch = append(batch, m)
		default:
			return batch
		}
	}
	return batch
}
