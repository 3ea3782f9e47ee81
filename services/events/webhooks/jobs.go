package webhooks

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	mathrand "math/rand/v2"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/go-kit/log"
	"github.com/go-kit/log/level"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"
	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"github.com/assetregistry/registry/pkg/access"
	"github.com/assetregistry/registry/pkg/job"
	"github.com/assetregistry/registry/pkg/leader"
	"github.com/assetregistry/registry/pkg/telemetry"
)

// Deliveries follow the Standard Webhooks scheme: the event as the body,
// webhook-id (the event's id, the same on every retry, so a receiver can
// drop duplicates), webhook-timestamp and webhook-signature ("v1,<base64
// HMAC-SHA256 of id.timestamp.body>", one per secret in force, space
// separated). The signing is the scheme's reference library's.

// SecretPrefix starts every secret, as the scheme writes them.
const SecretPrefix = "whsec_"

// secretBytes is the size of a new secret's key (the contract allows 24
// to 64).
const secretBytes = 32

// NewSecret returns a fresh random secret.
func NewSecret() string {
	key := make([]byte, secretBytes)
	_, _ = rand.Read(key) // crypto/rand.Read never fails
	return SecretPrefix + base64.StdEncoding.EncodeToString(key)
}

// Sign returns the webhook-signature header of body for id at ts: one
// signature per secret.
func Sign(secrets []string, id string, ts time.Time, body []byte) (string, error) {
	sigs := make([]string, 0, len(secrets))
	for _, secret := range secrets {
		wh, err := standardwebhooks.NewWebhook(secret)
		if err != nil {
			return "", fmt.Errorf("a stored secret does not decode: %w", err)
		}
		sig, err := wh.Sign(id, ts, body)
		if err != nil {
			return "", err
		}
		sigs = append(sigs, sig)
	}
	return strings.Join(sigs, " "), nil
}

// RetrySchedule says when a failed attempt is tried again: an exponential
// backoff from First, doubling up to Max, each delay jittered by ±Jitter,
// for GiveUpAfter from when the delivery was queued; the last attempt is
// made at that moment, and its failure fails the delivery for good.
type RetrySchedule struct {
	First, Max  time.Duration
	Jitter      float64
	GiveUpAfter time.Duration
}

// RegisterFlags adds the schedule's settings (tests and the fault suite
// compress time with them).
func (s *RetrySchedule) RegisterFlags(fs *flag.FlagSet) {
	fs.DurationVar(&s.First, "webhooks.retry-first", 5*time.Second, "delay before the first retry of a failed delivery (jittered; the contract asks within 10s)")
	fs.DurationVar(&s.Max, "webhooks.retry-max", time.Hour, "longest delay between two attempts of a delivery")
	fs.Float64Var(&s.Jitter, "webhooks.retry-jitter", 0.2, "each delay is multiplied by a random factor in [1-j, 1+j]")
	fs.DurationVar(&s.GiveUpAfter, "webhooks.give-up-after", 24*time.Hour, "a delivery failing this long after it was queued is marked failed (at least 24h by the contract)")
}

// Next returns when to try again after a failed attempt (attempts made so
// far, counting it), or giveUp when the delivery has failed for good. r
// is a random number in [0, 1).
func (s RetrySchedule) Next(attempts int, queued, now time.Time, r float64) (next time.Time, giveUp bool) {
	deadline := queued.Add(s.GiveUpAfter)
	if !now.Before(deadline) {
		return time.Time{}, true
	}
	delay := float64(s.First) * math.Pow(2, float64(max(attempts-1, 0)))
	delay = min(delay, float64(s.Max))
	delay *= 1 - s.Jitter + 2*s.Jitter*r
	next = now.Add(time.Duration(delay))
	if next.After(deadline) {
		next = deadline
	}
	return next, false
}

// Dispatcher queues and sends the deliveries: it fans the stored events
// out to the subscriptions that name them (Store.FanOut), claims what is
// due, each subscription in its turn and never more than MaxInFlight of
// one at once (Store.Claim), runs up to Workers attempts at once and
// records each outcome. Several dispatchers (replicas) share the work
// through the claims' leases.
type Dispatcher struct {
	Store    *Store
	Policy   AddressPolicy
	Schedule RetrySchedule
	Timeout  time.Duration // of one attempt
	Workers  int
	// MaxInFlight bounds the attempts of one subscription at once, so a
	// receiver that hangs holds at most that many workers.
	MaxInFlight int
	Poll        time.Duration // how often to look for due retries without being woken
	Logger      log.Logger
	// Access is the copy of who sees which asset that a bound client's
	// subscription is filtered on; it is refreshed before each step of
	// the fan-out.
	Access *access.Copy

	client *http.Client
	wake   chan struct{}
}

// The fan-out's step: subscriptions per transaction, and positions of the
// feed each moves on by at most, so one transaction queues at most
// fanOutSubscriptions × fanOutEvents deliveries.
const (
	fanOutSubscriptions = 100
	fanOutEvents        = 1000
)

// Wake tells the dispatcher that events were stored or deliveries queued.
func (d *Dispatcher) Wake() {
	select {
	case d.wake <- struct{}{}:
	default:
	}
}

// Init prepares the dispatcher; Run and Wake need it.
func (d *Dispatcher) Init() *Dispatcher {
	d.client = d.Policy.Client(d.Timeout)
	d.wake = make(chan struct{}, 1)
	return d
}

// Run dispatches until ctx ends, then waits for the attempts in flight.
func (d *Dispatcher) Run(ctx context.Context) {
	slots := make(chan struct{}, d.Workers)
	freed := make(chan struct{}, 1)
	poll := time.NewTicker(d.Poll)
	defer poll.Stop()
	defer func() { // the attempts in flight finish (their outcome recorded) before Run returns
		for range d.Workers {
			slots <- struct{}{}
		}
	}()
	fan := true // at start, when woken and on each poll; not for every attempt that ends
	for {
		if fan {
			fan = d.fanOut(ctx)
		}
		if free := d.Workers - len(slots); free > 0 {
			// The lease outlasts the attempt, so no other dispatcher
			// takes it while this one still waits for an answer.
			jobs, err := d.Store.Claim(ctx, free, d.MaxInFlight, d.Timeout+30*time.Second)
			if err != nil && ctx.Err() == nil {
				level.Warn(d.Logger).Log("msg", "claiming deliveries failed", "err", err)
			}
			for _, job := range jobs {
				slots <- struct{}{}
				go func() {
					defer func() {
						<-slots
						select {
						case freed <- struct{}{}:
						default:
						}
					}()
					d.attempt(context.WithoutCancel(ctx), job)
				}()
			}
			if len(jobs) == free {
				continue // more may be due
			}
		}
		if fan {
			continue // more to fan out
		}
		select {
		case <-ctx.Done():
			return
		case <-d.wake:
			fan = true
		case <-freed:
		case <-poll.C:
			fan = true
		}
	}
}

// fanOut queues the deliveries of what was stored since the last time, a
// bounded step at a time; a backlog larger than a few steps is left for
// the next turn of Run (it reports that some is left), so the claims in
// between keep deliveries going.
func (d *Dispatcher) fanOut(ctx context.Context) (more bool) {
	for range 4 {
		// Who sees what is decided as the deliveries are queued: a grant,
		// its removal or a transfer committed before is in force. Without
		// a fresh copy, the subscriptions of bound clients wait. The copy
		// must be newer than every event it judges: an event stored after
		// the refresh (an asset's update after its transfer) would go by
		// the access before it, to the former owner. So the fan-out stops
		// at the newest event read before the refresh.
		through, err := d.Store.NewestEvent(ctx)
		if err != nil {
			if ctx.Err() == nil {
				level.Warn(d.Logger).Log("msg", "reading the feed's newest position failed", "err", err)
			}
			return false // the next poll tries again
		}
		fan := d.Store.FanOut
		if err := d.refreshAccess(ctx); err != nil {
			if ctx.Err() != nil {
				return false
			}
			level.Warn(d.Logger).Log("msg", "refreshing the copy of the assets' access failed; the subscriptions of bound clients wait", "err", err)
			fan = d.Store.FanOutUnbound
		}
		queued, behind, err := fan(ctx, fanOutSubscriptions, fanOutEvents, through)
		if err != nil {
			if ctx.Err() == nil {
				level.Warn(d.Logger).Log("msg", "queueing deliveries failed", "err", err)
			}
			return false // the next poll tries again
		}
		deliveriesQueued.Add(float64(queued))
		if !behind {
			return false
		}
	}
	return true
}

// Partitions are the deliveries' partitions, for tests that look at them.
func Partitions() leader.Partitions { return deliveryPartitions }

// AllStored is the through of a FanOut bounded by nothing but the feed.
const AllStored int64 = math.MaxInt64

// refreshAccess brings the copy of the assets' access up to date, when
// the dispatcher has one.
func (d *Dispatcher) refreshAccess(ctx context.Context) error {
	if d.Access == nil {
		return nil
	}
	return d.Access.Refresh(ctx)
}

// attempt makes one attempt of job and records its outcome.
func (d *Dispatcher) attempt(ctx context.Context, job Job) {
	start := time.Now()
	code, err := d.send(ctx, job)
	outcome := Outcome{StatusCode: code, Status: StatusSucceeded}
	if err != nil {
		outcome.Error = err.Error()
		next, giveUp := d.Schedule.Next(job.Attempts, job.QueuedAt, time.Now(), mathrand.Float64())
		outcome.Status, outcome.Next = StatusPending, next
		if giveUp || job.Body == nil {
			outcome.Status = StatusFailed
		}
	}
	observeAttempt(outcome.Status, code, time.Since(start))
	// The outcome must be recorded even while stopping; if the database
	// refuses, the lease ends and the delivery is tried again (at least
	// once), with the same webhook-id.
	rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := d.Store.Record(rctx, job.ID, outcome); err != nil {
		level.Warn(d.Logger).Log("msg", "recording a delivery attempt failed", "delivery", job.ID, "err", err)
	}
}

// send posts the event; err says why the attempt failed.
func (d *Dispatcher) send(ctx context.Context, job Job) (int, error) {
	if job.Body == nil {
		return 0, fmt.Errorf("event %s is no longer kept", job.EventID)
	}
	u, err := url.Parse(job.URL)
	if err != nil {
		return 0, fmt.Errorf("the subscription's url does not parse")
	}
	if err := d.Policy.CheckScheme(u); err != nil {
		return 0, fmt.Errorf("the subscription's url is no longer allowed: it must be https")
	}
	now := time.Now()
	id := job.EventID.String()
	signature, err := Sign(job.Secrets, id, now, job.Body)
	if err != nil {
		return 0, err
	}
	req, err := http.NewRequestWithContext(d.Policy.RequestContext(ctx, u), http.MethodPost, u.String(), bytes.NewReader(job.Body))
	if err != nil {
		return 0, fmt.Errorf("the subscription's url cannot be requested")
	}
	h := req.Header
	h.Set("Content-Type", "application/json")
	h.Set("User-Agent", "asset-registry-webhooks/1")
	h.Set(standardwebhooks.HeaderWebhookID, id)
	h.Set(standardwebhooks.HeaderWebhookTimestamp, strconv.FormatInt(now.Unix(), 10))
	h.Set(standardwebhooks.HeaderWebhookSignature, signature)
	resp, err := d.client.Do(req)
	if err != nil {
		return 0, describeSendError(err)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxReceiverBody))
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return resp.StatusCode, fmt.Errorf("the receiver answered %d", resp.StatusCode)
	}
	return resp.StatusCode, nil
}

// describeSendError says why a request failed without internal details
// beyond what the subscriber already knows (its own URL).
func describeSendError(err error) error {
	msg := err.Error()
	switch {
	case strings.Contains(msg, errForbiddenAddress.Error()):
		return errForbiddenAddress
	case strings.Contains(msg, "Client.Timeout") || strings.Contains(msg, "deadline exceeded") || strings.Contains(msg, "timeout"):
		return fmt.Errorf("no answer in time")
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}

// The metrics of the dispatcher (the chart's PrometheusRule alerts on
// them: deliveries failing).
var (
	attemptsTotal = telemetry.NewCounterVec("registry_webhook_attempts_total",
		"Webhook delivery attempts by result (success, failure) and the receiver's status code (0: no answer).", "result", "code")
	attemptSeconds = promauto.NewHistogram(prometheus.HistogramOpts{
		Name:    "registry_webhook_attempt_duration_seconds",
		Help:    "Time of one webhook delivery attempt.",
		Buckets: prometheus.ExponentialBuckets(0.005, 2, 13),
	})
	deliveriesByStatus = telemetry.NewGaugeVec("registry_webhook_deliveries",
		"Webhook deliveries pending and failed (kept for webhooks.delivery-retention), as last counted by the leading replica.", "status")
	failedForGood = telemetry.NewCounter("registry_webhook_deliveries_failed_total",
		"Webhook deliveries that ran out of retries (or whose event is gone), on this replica.")
	deliveriesQueued = telemetry.NewCounter("registry_webhook_deliveries_queued_total",
		"Webhook deliveries queued: one per stored event and subscription naming its type.")
)

func observeAttempt(status string, code int, took time.Duration) {
	result := "success"
	if status != StatusSucceeded {
		result = "failure"
	}
	attemptsTotal.WithLabelValues(result, strconv.Itoa(code)).Inc()
	if status == StatusFailed {
		failedForGood.Inc()
	}
	attemptSeconds.Observe(took.Seconds())
}

// DeliveryCounter is the leader's job that refreshes the deliveries
// gauge every 15 s; a replica that stops leading drops its figures, so
// the gauge is the leader's alone.
func DeliveryCounter(st *Store, logger log.Logger) job.Job {
	every := job.Every("delivery counter", 15*time.Second, func(ctx context.Context) {
		counts, err := st.DeliveryCounts(ctx)
		if err != nil {
			level.Warn(logger).Log("msg", "counting deliveries failed", "err", err)
			return
		}
		for status, n := range counts {
			deliveriesByStatus.WithLabelValues(status).Set(float64(n))
		}
	})
	return job.Job{Name: every.Name, Run: func(ctx context.Context) {
		every.Run(ctx)
		deliveriesByStatus.Reset()
	}}
}
