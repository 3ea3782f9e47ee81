//go:build faults

package faults

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/assetregistry/registry/pkg/outbox"
	"github.com/assetregistry/registry/tools/devinfra"
)

// unpublishableWrites is how many ordinary writes follow the event NATS
// refuses.
const unpublishableWrites = 1000

// TestUnpublishableEvent is the set-aside fault row: one event NATS refuses
// for good, followed by 1,000 ordinary writes. NATS is restarted with a
// max_payload of 64 KiB, below an action whose data is 100 KiB; its
// create and the update after it are set aside, and 1,000 actions created
// after it, events of the same relay, must all reach the feed, none lost
// (the report gives how long after its answer each did; the goal is
// 5 s). The metric and the operator's command show the two set aside;
// once max_payload is back, the command's replay publishes them, in
// order, and the stream holds every event of the run once (checkEvents).
func TestUnpublishableEvent(t *testing.T) {
	c := newClient(t)
	tag := randomHex()
	ctx := t.Context()
	restoreLimit := func() {
		if stack.Nats.MaxPayload != devinfra.NatsMaxPayload {
			stack.Nats.MaxPayload = devinfra.NatsMaxPayload
			must(t, stack.Nats.Restart(context.Background()))
		}
	}
	defer restoreLimit()
	stack.Nats.MaxPayload = 64 << 10
	must(t, stack.Nats.Restart(ctx))

	assetType := jsonCall(t, c, "POST", "/asset_types", map[string]any{"brand": "Refused " + tag, "model": "R-1"}, 201)["id"].(string)
	asset := jsonCall(t, c, "POST", "/assets", map[string]any{"serial_number": "SN-" + tag, "asset_type_id": assetType}, 201)["id"].(string)
	action := func(data map[string]any) map[string]any {
		return map[string]any{"asset_id": asset, "action_type": "maintenance", "performed_at": "2025-06-01", "data": data}
	}
	// The relays have reconnected (and learnt the new limit) once an
	// action's event reaches the feed.
	waitInFeed(t, c, jsonCall(t, c, "POST", "/actions", action(nil), 201)["id"].(string), 60*time.Second)

	large := jsonCall(t, c, "POST", "/actions", action(map[string]any{"blob": strings.Repeat("x", 100<<10)}), 201)["id"].(string)
	jsonCall(t, c, "PATCH", "/actions/"+large, map[string]any{"status": "checked " + tag}, 200)

	// 1,000 ordinary writes, eight at a time, each answer's time kept; a
	// reader follows the feed meanwhile, as a client polls it.
	cursor := feedNow(t, c)
	var (
		mu       sync.Mutex
		answered = map[string]time.Time{}
	)
	seen := followFeed(t, c, cursor, func(n int) bool { return n >= unpublishableWrites }, 90*time.Second)
	jobs := make(chan int)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for i := range jobs {
				id := jsonCall(t, c, "POST", "/actions", action(map[string]any{"n": i, "tag": tag}), 201)["id"].(string)
				mu.Lock()
				answered[id] = time.Now()
				mu.Unlock()
			}
		})
	}
	for i := range unpublishableWrites {
		jobs <- i
	}
	close(jobs)
	wg.Wait()
	arrived := seen()

	var delays []time.Duration
	lost := 0
	for id, at := range answered {
		got, ok := arrived[id]
		if !ok {
			lost++
			continue
		}
		delays = append(delays, max(got.Sub(at), 0))
	}
	slices.Sort(delays)
	r := setAsideRow{writes: len(answered), lost: lost}
	if len(delays) > 0 {
		r.p50, r.p99, r.slowest = delays[len(delays)/2], delays[len(delays)*99/100], delays[len(delays)-1]
	}
	if lost > 0 {
		t.Errorf("%d of the %d writes after the refused event never reached the feed", lost, len(answered))
	}
	if _, ok := arrived[large]; ok {
		t.Error("the action NATS refuses reached the feed")
	}

	// What the operator sees: the metric and the command's list.
	metric := func() float64 { return serviceMetric(t, "actions", "outbox_set_aside_events", `schema="actions"`) }
	for wait := time.Now(); metric() != 2 && time.Since(wait) < 10*time.Second; time.Sleep(200 * time.Millisecond) {
	}
	r.metric = metric()
	listed := operatorCommand(t, "actions", "outbox-set-aside")
	r.listed = strings.Count(listed, `"subject":"action.`+large+`"`)
	if r.metric != 2 || r.listed != 2 || !strings.Contains(listed, "maximum payload") {
		t.Errorf("set aside: outbox_set_aside_events %v, the command lists %d of the action's events (want 2 each):\n%s", r.metric, r.listed, listed)
	}

	// The limit back, the relays reconnected, the operator replays: both
	// events are published, in order.
	restoreLimit()
	waitInFeed(t, c, jsonCall(t, c, "POST", "/actions", action(nil), 201)["id"].(string), 60*time.Second)
	operatorCommand(t, "actions", "outbox-replay")
	var history []map[string]any
	for wait := time.Now(); len(history) < 2 && time.Since(wait) < 30*time.Second; time.Sleep(200 * time.Millisecond) {
		getJSON(t, c, "/actions/"+large+"/history", &history)
	}
	r.replayed = len(history) == 2 && history[0]["type"] == "action.created" && history[1]["type"] == "action.updated"
	if !r.replayed {
		t.Errorf("after the replay the action's history is %v, want its create and its update", history)
	}
	events := checkEvents(t)
	r.eventsLost, r.eventsOutOfOrder = events.lost+events.duplicated, events.outOfOrder
	setAsideMu.Lock()
	setAsideReport = append(setAsideReport, r)
	setAsideMu.Unlock()
}

// feedNow is the cursor of the feed's present (after=now's Link).
func feedNow(t *testing.T, c *client) string {
	t.Helper()
	req, _ := newGet(c, "/events?after=now")
	resp, err := c.http.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	next := nextLink(resp.Header.Get("Link"))
	if next == "" {
		t.Fatalf("no next link in %q", resp.Header.Get("Link"))
	}
	return next
}

// followFeed reads the feed from next in the background, as a polling
// client does, noting when each action.created first appeared; done says
// when it may stop (given how many it has seen). The returned wait ends
// the reading (after at most within) and gives, by action id, when each
// event was seen.
func followFeed(t *testing.T, c *client, next string, done func(n int) bool, within time.Duration) (wait func() map[string]time.Time) {
	t.Helper()
	seen := map[string]time.Time{}
	stop := make(chan struct{})
	finished := make(chan struct{})
	next += "&type=action.created&limit=1000"
	go func() {
		defer close(finished)
		deadline := time.Now().Add(within)
		for time.Now().Before(deadline) {
			req, _ := newGet(c, next)
			resp, err := c.http.Do(req)
			if err != nil {
				time.Sleep(100 * time.Millisecond)
				continue
			}
			var page []outbox.Event
			err = json.NewDecoder(resp.Body).Decode(&page)
			resp.Body.Close()
			if err != nil {
				continue
			}
			now := time.Now()
			for _, e := range page {
				if _, ok := seen[e.Subject.ID]; !ok {
					seen[e.Subject.ID] = now
				}
			}
			if link := nextLink(resp.Header.Get("Link")); link != "" {
				next = link
			}
			select {
			case <-stop:
				if done(len(seen)) {
					return
				}
			default:
			}
			if len(page) == 0 {
				time.Sleep(50 * time.Millisecond)
			}
		}
	}()
	return func() map[string]time.Time {
		close(stop)
		<-finished
		return seen
	}
}

// waitInFeed waits until the action's created event is in its history.
func waitInFeed(t *testing.T, c *client, action string, within time.Duration) {
	t.Helper()
	for wait := time.Now(); time.Since(wait) < within; time.Sleep(200 * time.Millisecond) {
		var history []map[string]any
		getJSON(t, c, "/actions/"+action+"/history", &history)
		if len(history) > 0 {
			return
		}
	}
	t.Fatalf("action %s's event did not reach the feed within %s", action, within)
}

func newGet(c *client, path string) (*http.Request, error) {
	req, err := http.NewRequest("GET", stack.RegistryURL+path, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+c.token)
	return req, nil
}

// operatorCommand runs one of a service's commands with the service's own
// settings, as an operator would in its pod, and returns what it printed.
func operatorCommand(t *testing.T, service, command string) string {
	t.Helper()
	cmd := stack.Processes[service].Command()
	cmd.Args = []string{cmd.Path, command}
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s %s: %v\n%s%s", service, command, err, out.String(), errOut.String())
	}
	// The command's log lines are JSON too; its own output is what is not
	// a log line.
	var lines []string
	for line := range strings.SplitSeq(out.String(), "\n") {
		if line != "" && !strings.Contains(line, `"level"`) {
			lines = append(lines, line)
		}
	}
	return strings.Join(lines, "\n")
}

// serviceMetric is a service's metric name, summed over the series whose
// line holds want (a label; "" for every series).
func serviceMetric(t *testing.T, service, name, want string) float64 {
	t.Helper()
	return metricSum(t, stack.MetricsURLs[service], name, want)
}

// setAsideRow is the unpublishable-event row of the report.
type setAsideRow struct {
	writes, lost                 int
	p50, p99, slowest            time.Duration
	metric                       float64
	listed                       int
	replayed                     bool
	eventsLost, eventsOutOfOrder int
}

var (
	setAsideMu     sync.Mutex
	setAsideReport []setAsideRow
)

func printSetAsideReport() {
	for _, r := range setAsideReport {
		fmt.Printf("\nunpublishable event (NATS max_payload 64 KiB, an action of 100 KiB and its update set aside), then %d action creates:\n"+
			"  in the feed: %d, lost %d; after its answer: p50 %s, p99 %s, slowest %s (goal: 5 s)\n"+
			"  set aside: outbox_set_aside_events %v, listed by `actions outbox-set-aside` %d; replayed in order: %v; events lost or doubled %d, out of order %d\n",
			r.writes, r.writes-r.lost, r.lost, r.p50.Round(time.Millisecond), r.p99.Round(time.Millisecond), r.slowest.Round(time.Millisecond),
			r.metric, r.listed, r.replayed, r.eventsLost, r.eventsOutOfOrder)
	}
}
