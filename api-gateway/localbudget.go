package gateway

import (
	"math"
	"sync"
	"time"

	"github.com/go-redis/redis_rate/v10"
	lru "github.com/hashicorp/golang-lru/v2"
)

// localBudgets are each replica's own share of every budget, for the time
// Redis cannot answer (down, slower than rate-limit.timeout, or left alone
// for rate-limit.backoff after it failed). Failing open with no limit at
// all let a client calling at ten times its budget through at eight times
// it whenever an overloaded machine made Redis slow; with its share, a
// replica keeps a client to its budget divided by rate-limit.replicas
// while Redis is away, and never refuses a call because Redis is.
//
// A share is a token bucket of quota/replicas requests (at least one),
// refilled steadily over the budget's window, like the budget in Redis.
// Every answer Redis gives sets the bucket to the replica's share of what
// Redis says is left, so when Redis goes away the share starts where the
// client stood, not full: a client that had spent its budget gets no new
// one from an outage. What a share served is owed to Redis, which never
// saw those calls: the next time Redis answers for the key, the debt is
// drawn from the budget there first (settle). Without it, a client at ten
// times its budget, while an overloaded Redis came and went, was served
// at up to seven times its budget: every return of Redis handed it a
// budget refilled while its calls went elsewhere. A call that timed out
// may still have been counted by Redis when it caught up, so the debt
// can charge it twice: a client pays at most one call per replica and
// backoff too much, never too little.
type localBudgets struct {
	replicas int
	buckets  *lru.Cache[string, *bucket]
}

// localBudgetKeys bounds the keys (clients, addresses) a replica keeps a
// share for; the least recently used is forgotten first (and starts full
// if it comes back while Redis is away).
const localBudgetKeys = 16384

func newLocalBudgets(replicas int) *localBudgets {
	buckets, err := lru.New[string, *bucket](localBudgetKeys)
	if err != nil {
		panic(err) // only for a size below 1
	}
	return &localBudgets{replicas: max(replicas, 1), buckets: buckets}
}

// bucket is one key's share.
type bucket struct {
	mu     sync.Mutex
	tokens float64
	at     time.Time // when tokens was last brought up to date
	owed   int       // requests served here that Redis has not been charged
}

// share is the part of b one replica holds: its quota and refill rate.
func (s *localBudgets) share(b Budget) (capacity, perSecond float64) {
	capacity = math.Max(1, math.Floor(float64(b.Quota)/float64(s.replicas)))
	return capacity, capacity / b.Window.Seconds()
}

func (s *localBudgets) get(key string, b Budget, now time.Time) *bucket {
	if bk, ok := s.buckets.Get(key); ok {
		return bk
	}
	capacity, _ := s.share(b)
	bk := &bucket{tokens: capacity, at: now}
	if existing, found, _ := s.buckets.PeekOrAdd(key, bk); found {
		return existing
	}
	return bk
}

// refill brings bk up to now; the caller holds bk.mu.
func (bk *bucket) refill(now time.Time, capacity, perSecond float64) {
	if d := now.Sub(bk.at); d > 0 {
		bk.tokens = math.Min(capacity, bk.tokens+d.Seconds()*perSecond)
	}
	bk.at = now
}

// take draws n requests (0: only looks) from key's share of b: all of
// them or none, or with atMost as many as it holds. The result has the
// form of redis_rate's, so that the callers read it as they read Redis's.
func (s *localBudgets) take(key string, b Budget, n int, atMost bool) *redis_rate.Result {
	now := time.Now()
	capacity, perSecond := s.share(b)
	bk := s.get(key, b, now)
	bk.mu.Lock()
	defer bk.mu.Unlock()
	bk.refill(now, capacity, perSecond)
	allowed := n
	if atMost {
		allowed = min(n, int(bk.tokens))
	} else if float64(n) > bk.tokens {
		allowed = 0
	}
	bk.tokens -= float64(allowed)
	bk.owed += allowed
	res := &redis_rate.Result{
		Limit:      redis_rate.Limit{Rate: int(capacity), Burst: int(capacity), Period: b.Window},
		Allowed:    allowed,
		Remaining:  int(bk.tokens),
		ResetAfter: seconds((capacity - bk.tokens) / perSecond),
		RetryAfter: -1,
	}
	if allowed == 0 && n > 0 {
		res.RetryAfter = seconds((float64(n) - bk.tokens) / perSecond)
	}
	return res
}

// follow sets key's share to this replica's part of what Redis answered
// is left of the whole budget.
func (s *localBudgets) follow(key string, b Budget, remaining int) {
	now := time.Now()
	capacity, _ := s.share(b)
	bk := s.get(key, b, now)
	bk.mu.Lock()
	defer bk.mu.Unlock()
	bk.tokens, bk.at = math.Min(capacity, float64(max(remaining, 0))/float64(s.replicas)), now
}

// settle takes what key's share served since Redis last answered for it,
// for the caller to charge Redis with; owe gives it back when Redis could
// not be charged.
func (s *localBudgets) settle(key string) int {
	bk, ok := s.buckets.Peek(key)
	if !ok {
		return 0
	}
	bk.mu.Lock()
	defer bk.mu.Unlock()
	owed := bk.owed
	bk.owed = 0
	return owed
}

func (s *localBudgets) owe(key string, b Budget, n int) {
	bk := s.get(key, b, time.Now())
	bk.mu.Lock()
	defer bk.mu.Unlock()
	bk.owed += n
}

func seconds(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }
