package peer

import (
	"errors"
	"flag"
	"fmt"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/sony/gobreaker/v2"

	"github.com/assetregistry/registry/pkg/apperr"
)

// BreakerConfig is when calls to a service that is known to be down stop
// being made: after Failures timeouts or connection failures in a row,
// calls are refused at once (503 with Retry-After) for OpenFor; then one
// call at a time is let through as a probe, and the first that is answered
// lets every call through again.
type BreakerConfig struct {
	Failures uint
	OpenFor  time.Duration
}

// RegisterFlags adds <prefix>.breaker-failures and <prefix>.breaker-open-for
// (peer.breaker-*, upstream.breaker-*).
func (c *BreakerConfig) RegisterFlags(fs *flag.FlagSet, prefix, whom string) {
	fs.UintVar(&c.Failures, prefix+".breaker-failures", 5,
		fmt.Sprintf("timeouts or connection failures in a row after which calls to %s are refused at once (503); 0: never", whom))
	fs.DurationVar(&c.OpenFor, prefix+".breaker-open-for", 5*time.Second,
		fmt.Sprintf("how long calls to %s are refused after its breaker opens, before one call probes whether it answers again", whom))
}

// Outcome is what one call through a breaker says about the service.
type Outcome int

const (
	// Answered: the service answered, whatever the status (a 4xx or a 503
	// of its own is an answer: the service is there and quick).
	Answered Outcome = iota
	// Failed: no answer in time, or the connection failed. Only these,
	// in a row, open the breaker.
	Failed
	// Ignored: the call says nothing about the service (the caller hung
	// up, its own body was too slow or too large, a bulkhead refused it).
	Ignored
)

var (
	errFailed  = errors.New("the service did not answer")
	errIgnored = errors.New("the call says nothing about the service")
)

// Breaker fails calls to one service fast once it is known to be down,
// instead of letting each wait for its timeout: a frozen service would
// otherwise hold every caller's request, connection and goroutine for
// that long. It is sony/gobreaker's two-step breaker (a well-tried state
// machine: closed, open, half-open with one probe at a time); what counts
// as a failure is decided here.
type Breaker struct {
	name    string
	cb      *gobreaker.TwoStepCircuitBreaker[struct{}]
	openFor time.Duration
}

// BreakerMetrics are the series a breaker keeps up to date, labelled by the
// service's name: its state (0 closed, 1 half-open, 2 open) and how often
// it opened.
type BreakerMetrics struct {
	State  *prometheus.GaugeVec
	Opened *prometheus.CounterVec
}

// NewBreaker returns the breaker of calls to the service name; with
// cfg.Failures 0 it never opens. onChange, if set, hears every change of
// state (for the log).
func NewBreaker(name string, cfg BreakerConfig, metrics BreakerMetrics, onChange func(name string, from, to string)) *Breaker {
	failures := cfg.Failures
	st := gobreaker.Settings{
		Name:        name,
		MaxRequests: 1, // one probe at a time decides whether it closes
		Timeout:     cfg.OpenFor,
		ReadyToTrip: func(c gobreaker.Counts) bool {
			return failures > 0 && uint(c.ConsecutiveFailures) >= failures
		},
		IsExcluded: func(err error) bool { return errors.Is(err, errIgnored) },
		OnStateChange: func(name string, from, to gobreaker.State) {
			metrics.State.WithLabelValues(name).Set(float64(stateValue(to)))
			if to == gobreaker.StateOpen {
				metrics.Opened.WithLabelValues(name).Inc()
			}
			if onChange != nil {
				onChange(name, from.String(), to.String())
			}
		},
	}
	metrics.State.WithLabelValues(name).Set(0)
	metrics.Opened.WithLabelValues(name)
	return &Breaker{name: name, cb: gobreaker.NewTwoStepCircuitBreaker[struct{}](st), openFor: cfg.OpenFor}
}

// stateValue is the gauge's value of a state: how far from serving.
func stateValue(s gobreaker.State) int {
	switch s {
	case gobreaker.StateHalfOpen:
		return 1
	case gobreaker.StateOpen:
		return 2
	}
	return 0
}

// Allow admits a call and returns what reports its outcome, or, while the
// breaker is open (or its one probe is in flight), the 503 to answer at
// once, with Retry-After.
func (b *Breaker) Allow(what string) (done func(Outcome), err error) {
	report, err := b.cb.Allow()
	if err != nil {
		return nil, apperr.Unavailable(what, fmt.Errorf("%s: %w (breaker)", b.name, err)).
			WithHeader("Retry-After", strconv.Itoa(max(1, int((b.openFor+time.Second-1)/time.Second))))
	}
	return func(o Outcome) {
		switch o {
		case Answered:
			report(nil)
		case Failed:
			report(errFailed)
		default:
			report(errIgnored)
		}
	}, nil
}

// Open reports whether calls are being refused (open, or half-open with
// its probe in flight or not yet made).
func (b *Breaker) Open() bool { return b.cb.State() != gobreaker.StateClosed }
