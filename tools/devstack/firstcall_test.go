package devstack

import (
	"context"
	"io"
	"net/http"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/assetregistry/registry/pkg/catalog"
)

// make run's order: the README's first call goes through the identity
// provider, the service that owns its path and the gateway, which start
// first, on the datastores that service cannot answer without; every other
// service, NATS and the object store join later. Without FirstCallFirst
// everything starts before Start returns (the tests' stacks), and
// ObjectStoreLater alone leaves out only the object store and the
// services that keep files.
func TestFirstCallPartsStartFirst(t *testing.T) {
	var first []string
	for _, d := range FirstCall() {
		first = append(first, d.Name)
	}
	owner, _, _ := catalog.Route(FirstCallPath)
	if want := []string{catalog.IdentityProvider.Name, owner.Service, catalog.Gateway.Name}; !slices.Equal(first, want) {
		t.Fatalf("FirstCall = %v, want %v", first, want)
	}
	svc, _ := catalog.Lookup(owner.Service)
	for _, d := range svc.Needs {
		if d != catalog.Postgres && d != catalog.Redis && d != catalog.NATS {
			t.Errorf("%s, which answers the first call, needs %s: it would wait for it", svc.Name, d)
		}
	}
	var rest []string
	for _, s := range catalog.Services {
		if s.Name != owner.Service {
			rest = append(rest, s.Name)
		}
	}
	documents := []string{}
	for _, s := range catalog.Services {
		if s.NeedsStore(catalog.ObjectStore) {
			documents = append(documents, s.Name)
		}
	}
	for _, c := range []struct {
		name              string
		o                 Options
		later             []string
		nats, objectStore bool
	}{
		{"make run", Options{FirstCallFirst: true}, rest, true, true},
		{"make run with the datastores given", Options{FirstCallFirst: true, NATS: NATS{URL: "nats://x"}, S3: S3{Endpoint: "x"}}, rest, false, false},
		{"make run on clusters", Options{FirstCallFirst: true, Clusters: true}, rest, false, true},
		{"object store later", Options{ObjectStoreLater: true}, documents, false, true},
		{"everything at once", Options{}, nil, false, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := planJoin(c.o)
			if !slices.Equal(p.names(), c.later) || p.nats != c.nats || p.objectStore != c.objectStore {
				t.Errorf("later %v, NATS later %v, object store later %v; want %v, %v, %v",
					p.names(), p.nats, p.objectStore, c.later, c.nats, c.objectStore)
			}
			if p.later(svc) && c.o.FirstCallFirst {
				t.Errorf("%s, which answers the first call, starts later", svc.Name)
			}
		})
	}
}

// A stack started first-call-first answers the first call while the rest
// is still being built: the other services' paths answer 503 naming the
// service, with Retry-After. Once built they join, NATS and the object
// store with them, and the events the first service recorded before NATS
// was up reach the feed.
func TestFirstCallAnswersWhileTheRestBuilds(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a stack")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	release := make(chan struct{})
	var asked []string
	database := "firstcall_" + strings.ReplaceAll(time.Now().Format("150405.000"), ".", "")
	s, stop, err := StartSuite(ctx, "firstcall", Options{
		Ephemeral: true, Database: database,
		PostgresURL: os.Getenv("TEST_DATABASE_URL"), RedisURL: os.Getenv("TEST_REDIS_URL"),
		FirstCallFirst: true,
		BuildLater: func(ctx context.Context, services []string) error {
			asked = services
			select {
			case <-release:
				return nil
			case <-ctx.Done():
				return ctx.Err()
			}
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := stop(); err != nil {
			t.Error(err)
		}
		if u := os.Getenv("TEST_DATABASE_URL"); u != "" {
			_ = DropDatabase(context.Background(), u, database)
		}
	})
	// The gateway must not wait for the API documents of services that
	// join later: its check at start waited its whole 30 s for them, and
	// the first call with it.
	if !slices.Contains(s.gatewayEnv, "DOCS_STARTUP_WAIT=0s") {
		t.Errorf("the gateway started with %q: it waits for the documents of services not started yet", s.gatewayEnv)
	}
	plan := planJoin(Options{FirstCallFirst: true})
	if want := append(plan.names(), JoinedNATS, JoinedMinio); !slices.Equal(s.StillJoining, want) {
		t.Errorf("still joining %v, want %v", s.StillJoining, want)
	}
	for name := range s.Processes {
		if !slices.ContainsFunc(FirstCall(), func(d catalog.Deployable) bool { return d.Name == name }) {
			t.Errorf("%s runs before its binary was built", name)
		}
	}
	token, err := s.Creds.token(ctx, s.Creds.ClientID, s.Creds.ClientSecret)
	if err != nil {
		t.Fatal(err)
	}
	get := func(path string) (*http.Response, string) {
		t.Helper()
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, s.RegistryURL+path, nil)
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp, string(body)
	}
	if resp, body := get(FirstCallPath); resp.StatusCode != http.StatusOK {
		t.Fatalf("the first call: %d %s", resp.StatusCode, body)
	}
	resp, body := get("/assets")
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" || !strings.Contains(body, "the assets service") {
		t.Errorf("/assets before assets joined: %d, Retry-After %q, %s", resp.StatusCode, resp.Header.Get("Retry-After"), body)
	}

	close(release)
	var joined []string
	for j := range s.Joining {
		if j.Err != nil {
			t.Fatalf("%s did not join: %v", j.Name, j.Err)
		}
		joined = append(joined, j.Name)
	}
	if !slices.Equal(asked, plan.names()) {
		t.Errorf("BuildLater asked for %v, want %v", asked, plan.names())
	}
	slices.Sort(joined)
	if want := slices.Sorted(slices.Values(s.StillJoining)); !slices.Equal(joined, want) {
		t.Errorf("joined %v, want %v", joined, want)
	}
	// The gateway's breaker for a service that was down lets a call
	// through again within seconds; ORG-A was created before NATS ran.
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(500 * time.Millisecond) {
		assets, _ := get("/assets")
		events, feed := get("/events?limit=100")
		if assets.StatusCode == http.StatusOK && events.StatusCode == http.StatusOK && strings.Contains(feed, s.Creds.OrgA.ID) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after everything joined: /assets %d, /events %d without ORG-A's creation: %s", assets.StatusCode, events.StatusCode, feed)
		}
	}
}
