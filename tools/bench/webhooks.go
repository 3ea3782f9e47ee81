package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/assetregistry/registry/pkg/outbox"
)

// The events deployable's rows: how long after a write's answer
// its webhook arrives at a receiver on loopback (also beside
// another client's receiver that hangs), and how many events per second
// the consumer stores in the feed.
const (
	WebhookRowName = "POST /organizations answered → webhook delivered · loopback"
	// WebhookBesideHangingRowName is WebhookRowName's row beside another
	// client's receiver that never answers.
	WebhookBesideHangingRowName = "POST /organizations answered → webhook delivered, beside another client's hanging receiver · loopback"
	consumerBatch               = 64
	deliveryTimeout             = 30 * time.Second
	catchUpTimeout              = 3 * time.Minute
)

// webhookSink is the receiver on loopback: it tells a waiting worker when
// the event about its organization arrived.
type webhookSink struct {
	mu      sync.Mutex
	arrived map[string]chan struct{} // by organization id
	url     string
	hook    string // the subscription's path while the row runs
}

var sink struct {
	once sync.Once
	s    *webhookSink
	err  error
}

func (s *webhookSink) wait(id string) chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	c, ok := s.arrived[id]
	if !ok {
		c = make(chan struct{})
		s.arrived[id] = c
	}
	return c
}

func (s *webhookSink) forget(id string) {
	s.mu.Lock()
	delete(s.arrived, id)
	s.mu.Unlock()
}

func (s *webhookSink) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var e outbox.Event
	body, _ := io.ReadAll(r.Body)
	if json.Unmarshal(body, &e) == nil {
		c := s.wait(e.Subject.ID)
		s.mu.Lock()
		select {
		case <-c: // a redelivery
		default:
			close(c)
		}
		s.mu.Unlock()
	}
	w.WriteHeader(http.StatusNoContent)
}

func startSink() (*webhookSink, error) {
	sink.once.Do(func() {
		ln, err := net.Listen("tcp", "127.0.0.1:0") // make run's stack allows http://127.0.0.1:*
		if err != nil {
			sink.err = err
			return
		}
		s := &webhookSink{arrived: map[string]chan struct{}{}, url: "http://" + ln.Addr().String() + "/hook"}
		go http.Serve(ln, s) //nolint:errcheck // lives as long as the bench
		sink.s = s
	})
	return sink.s, sink.err
}

// WebhookRow: each call is one organization created through the gateway
// (off the clock) and then the wait, timed, until its organization.created
// event reaches the receiver. Its p50 and p99 are the delay from a write's
// answer to its delivery; its req/s the writes per second delivered end to
// end, with the row's concurrency.
var WebhookRow = Row{Name: WebhookRowName, Via: "gateway", MinWindow: 3 * time.Second,
	Before: subscribeSink,
	After:  unsubscribeSink,
	Op:     deliveryOp,
}

// WebhookBesideHangingRow is WebhookRow while another client's
// subscription to the same events has a receiver that never answers: each
// of its attempts holds a delivery worker until the attempt timeout
// (webhooks.timeout, 15 s), and every write makes one more of its
// deliveries due. The goal: the healthy receiver's p99 stays within
// twice WebhookRow's, because a subscription holds at most
// webhooks.max-in-flight workers and claims take turns.
var WebhookBesideHangingRow = Row{Name: WebhookBesideHangingRowName, Via: "gateway", MinWindow: 3 * time.Second, Long: true,
	Before: func(ctx context.Context, e *Env) error {
		receiver, err := startHangingReceiver()
		if err != nil {
			return err
		}
		token, err := e.clientToken(ctx, "bench-webhooks-other", "registry:read", "registry:write")
		if err != nil {
			return fmt.Errorf("the other client: %w", err)
		}
		body, _ := json.Marshal(map[string]any{"url": receiver, "types": []string{"organization.created"}, "description": "bench: never answers"})
		raw, err := e.send(ctx, e.Stack.RegistryURL, Request{Method: "POST", Path: "/webhooks", Body: body, Token: token, Want: 201})
		if err != nil {
			return fmt.Errorf("subscribe the hanging receiver: %w", err)
		}
		var hook struct{ ID string }
		_ = json.Unmarshal(raw, &hook)
		hanging.hook, hanging.token = "/webhooks/"+hook.ID, token
		return subscribeSink(ctx, e)
	},
	// The attempts still hanging run out on their own within the timeout.
	After: func(ctx context.Context, e *Env) error {
		_, err := e.send(ctx, e.Stack.RegistryURL, Request{Method: "DELETE", Path: hanging.hook, Token: hanging.token, Want: 204})
		return errors.Join(err, unsubscribeSink(ctx, e))
	},
	Op: deliveryOp,
}

// hanging is the receiver that never answers, and the other client's
// subscription to it while WebhookBesideHangingRow runs.
var hanging struct {
	once        sync.Once
	url         string
	err         error
	hook, token string
}

// startHangingReceiver serves, on loopback, a receiver that holds every
// request until the registry gives up on it.
func startHangingReceiver() (string, error) {
	hanging.once.Do(func() {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			hanging.err = err
			return
		}
		hanging.url = "http://" + ln.Addr().String() + "/hook"
		never := http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) { <-r.Context().Done() })
		go http.Serve(ln, never) //nolint:errcheck // lives as long as the bench
	})
	return hanging.url, hanging.err
}

// subscribeSink subscribes the loopback receiver to organization.created
// with the run's client and waits until the events service has caught up
// with the stream.
func subscribeSink(ctx context.Context, e *Env) error {
	s, err := startSink()
	if err != nil {
		return err
	}
	body, _ := json.Marshal(map[string]any{"url": s.url, "types": []string{"organization.created"}, "description": "bench"})
	raw, err := e.send(ctx, e.Stack.RegistryURL, Request{Method: "POST", Path: "/webhooks", Body: body, Want: 201})
	if err != nil {
		return fmt.Errorf("subscribe: %w", err)
	}
	var hook struct{ ID string }
	_ = json.Unmarshal(raw, &hook)
	s.hook = "/webhooks/" + hook.ID
	// The rows before this one (the relay's, the consumer's) leave
	// events in the stream that the events service stores in order
	// before any of this row's: one delivery, off the clock, waits
	// until it has caught up, so the row times deliveries, not that
	// backlog.
	raw, err = e.send(ctx, e.Stack.RegistryURL, createOrganization(e, &Worker{Tag: "webhook-catch-up-" + randomHex()}))
	if err != nil {
		return fmt.Errorf("catch-up write: %w", err)
	}
	var org struct{ ID string }
	if err := json.Unmarshal(raw, &org); err != nil {
		return fmt.Errorf("catch-up write: %w", err)
	}
	defer s.forget(org.ID)
	select {
	case <-s.wait(org.ID):
		return nil
	case <-time.After(catchUpTimeout):
		return fmt.Errorf("the events service did not catch up with the stream within %s", catchUpTimeout)
	case <-ctx.Done():
		return ctx.Err()
	}
}

// unsubscribeSink ends the receiver's subscription: other rows' writes
// must not be delivered too.
func unsubscribeSink(ctx context.Context, e *Env) error {
	_, err := e.send(ctx, e.Stack.RegistryURL, Request{Method: "DELETE", Path: sink.s.hook, Want: 204})
	return err
}

// deliveryOp times, for each organization a worker creates (off the
// clock), the wait until its event reaches the loopback receiver.
func deliveryOp(e *Env) (Op, error) {
	var mu sync.Mutex
	pending := map[int]string{} // worker → the organization it waits for
	return Op{
		Prepare: func(ctx context.Context, w *Worker) error {
			raw, err := e.send(ctx, e.Stack.RegistryURL, createOrganization(e, w))
			if err != nil {
				return err
			}
			var org struct{ ID string }
			if err := json.Unmarshal(raw, &org); err != nil {
				return err
			}
			mu.Lock()
			pending[w.ID] = org.ID
			mu.Unlock()
			return nil
		},
		Do: func(ctx context.Context, w *Worker) error {
			mu.Lock()
			id := pending[w.ID]
			mu.Unlock()
			defer sink.s.forget(id)
			select {
			case <-sink.s.wait(id):
				return nil
			case <-time.After(deliveryTimeout):
				return fmt.Errorf("organization %s: no delivery within %s", id, deliveryTimeout)
			case <-ctx.Done():
				return ctx.Err()
			}
		},
	}, nil
}

// ConsumerRow measures the events deployable's consumer: each call
// publishes consumerBatch events to the stream (as the relays do) and
// waits until the last is stored in the feed. Its req/s times
// consumerBatch is the events per second the consumer stores with 16
// publishers feeding it.
var ConsumerRow = Row{Name: "events consumer: 64 events published → stored in the feed", Via: "direct", Events: consumerBatch,
	Op: func(e *Env) (Op, error) {
		n := e.Stack.NATS
		nc, err := nats.Connect(n.URL, nats.UserInfo(n.User, n.Password), nats.Name("bench"))
		if err != nil {
			return Op{}, fmt.Errorf("nats: %w", err)
		}
		js, err := jetstream.New(nc)
		if err != nil {
			return Op{}, err
		}
		prefix := n.SubjectPrefix
		if prefix == "" {
			prefix = outbox.SubjectPrefix
		}
		return Op{Do: func(ctx context.Context, w *Worker) error {
			var last string
			acks := make([]jetstream.PubAckFuture, 0, consumerBatch)
			for i := range consumerBatch {
				id := uuid.Must(uuid.NewV7()).String()
				subject := fmt.Sprintf("bench-%s-%d-%d", w.Tag, w.N, i)
				data, _ := json.Marshal(outbox.Event{ID: id, Type: "organization.updated", Time: time.Now().UTC(),
					Subject: outbox.EventSubject{Kind: "organization", ID: subject}, Actor: "bench", RequestID: w.Tag,
					Data: json.RawMessage(`{"bench":true}`)})
				ack, err := js.PublishAsync(prefix+".organization."+subject, data, jetstream.WithMsgID(id))
				if err != nil {
					return err
				}
				acks = append(acks, ack)
				last = id
			}
			for _, a := range acks {
				select {
				case <-a.Ok():
				case err := <-a.Err():
					return err
				case <-ctx.Done():
					return ctx.Err()
				}
			}
			for {
				var stored bool
				err := e.Reference.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM events.events WHERE id = $1)`, last).Scan(&stored)
				if err != nil {
					return fmt.Errorf("wait for the consumer: %w", err)
				}
				if stored {
					return nil
				}
				select {
				case <-ctx.Done():
					return errors.Join(ctx.Err(), fmt.Errorf("event %s not stored", last))
				case <-time.After(2 * time.Millisecond):
				}
			}
		}}, nil
	}}
