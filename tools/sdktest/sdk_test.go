package sdktest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	registry "github.com/assetregistry/registry/sdk"
)

// countingTransport counts the calls to the token endpoint.
type countingTransport struct{ tokens atomic.Int64 }

func (c *countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if strings.HasSuffix(r.URL.Path, "/oidc/token") {
		c.tokens.Add(1)
	}
	return http.DefaultTransport.RoundTrip(r)
}

func newClient(t *testing.T, rt http.RoundTripper) *registry.Client {
	t.Helper()
	cr := suite.Creds
	c, err := registry.New(registry.Config{URL: cr.RegistryURL, AuthURL: cr.AuthURL, Resource: cr.Resource,
		ClientID: cr.ClientID, ClientSecret: cr.ClientSecret, HTTPClient: &http.Client{Transport: rt, Timeout: time.Minute}})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// The README's example: an inspection with its report, recorded in order.
func TestRecordAnInspectionWithItsReport(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := newClient(t, http.DefaultTransport)
	suffix := time.Now().Format("150405.000000")
	org, _, err := c.FindOrCreateOrganization(ctx, registry.OrganizationInput{Name: "Lift Inspect AS",
		RegistrationNumber: "LI-" + suffix, OrganizationType: registry.OrganizationPrivate, Country: "NO"})
	if err != nil {
		t.Fatal(err)
	}
	typ, _, err := c.FindOrCreateAssetType(ctx, registry.AssetTypeInput{Brand: "Kone", Model: "MonoSpace " + suffix})
	if err != nil {
		t.Fatal(err)
	}
	asset, created, err := c.FindAsset(ctx, registry.AssetQuery{SerialNumber: "SN-" + suffix, Brand: typ.Brand, Model: typ.Model}, true)
	if err != nil || !created {
		t.Fatalf("asset: created %v, %v", created, err)
	}
	action, err := c.CreateAction(ctx, registry.ActionInput{AssetID: asset.ID, OrganizationID: org.ID,
		ActionType: registry.ActionExpertControl, PerformedAt: "2025-03-14", StatusOK: registry.Bool(true)})
	if err != nil {
		t.Fatal(err)
	}
	doc, err := c.Upload(ctx, "expert_control_report", "report.pdf", bytes.NewReader([]byte("%PDF-1.4 report")))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.CreateActionDocument(ctx, action.ID, registry.ActionDocumentInput{DocumentID: doc.ID,
		SourceSystem: "sdk-test", SourceReference: "report-1"}); err != nil {
		t.Fatal(err)
	}
	got, err := c.GetAction(ctx, action.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(got.ActionDocuments) != 1 || got.ActionDocuments[0].DocumentID != doc.ID || *got.StatusUseOK != true || got.ETag == "" {
		t.Errorf("action %+v", got)
	}

	// The ETag read makes the update conditional; a stale one is a 412.
	if _, err := c.UpdateAction(ctx, action.ID, registry.Patch{"status": "approved"}, registry.IfMatch(got.ETag)); err != nil {
		t.Fatal(err)
	}
	_, err = c.UpdateAction(ctx, action.ID, registry.Patch{"status": "again"}, registry.IfMatch(got.ETag))
	var p *registry.Problem
	if !errors.As(err, &p) || p.Status != http.StatusPreconditionFailed || p.RequestID == "" {
		t.Errorf("update with a stale ETag: %v", err)
	}

	// A duplicate is a Problem carrying the holder's id.
	_, err = c.CreateOrganization(ctx, registry.OrganizationInput{Name: "again", RegistrationNumber: "LI-" + suffix,
		OrganizationType: registry.OrganizationPrivate, Country: "no"})
	if !errors.As(err, &p) || p.ExistingID != org.ID {
		t.Errorf("duplicate: %v", err)
	}
	// Field errors name the field.
	_, err = c.CreatePerson(ctx, registry.PersonInput{FirstName: "A"})
	if !errors.As(err, &p) || len(p.Errors) == 0 || p.Errors[0].Field != "last_name" {
		t.Errorf("person without a last name: %v", err)
	}
}

// Lists page through Link: rel="next" until the end.
func TestListFollowsLinks(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := newClient(t, http.DefaultTransport)
	country := "se"
	for i := range 7 {
		if _, err := c.CreateOrganization(ctx, registry.OrganizationInput{Name: "Pager", RegistrationNumber: "PG-" + time.Now().Format("150405.000000") + string(rune('a'+i)),
			OrganizationType: registry.OrganizationPublic, Country: country}); err != nil {
			t.Fatal(err)
		}
	}
	n := 0
	for o, err := range c.ListOrganizations(ctx, registry.Filter{"organization_type": "public", "limit": "2"}) {
		if err != nil {
			t.Fatal(err)
		}
		if o.OrganizationType != "public" {
			t.Errorf("filter ignored: %+v", o)
		}
		n++
	}
	if n < 7 {
		t.Errorf("listed %d public organizations in pages of 2, want at least 7", n)
	}
}

// Tokens are fetched again before they run out: over three lifetimes of
// calls, several fetches and no refused call.
func TestTokenRefreshesDuringARun(t *testing.T) {
	t.Parallel() // its own client, and nine seconds of waiting for tokens to run out
	ctx := context.Background()
	rt := &countingTransport{}
	c := newClient(t, rt)
	deadline := time.Now().Add(3 * tokenTTL)
	calls := 0
	for time.Now().Before(deadline) {
		for _, err := range c.ListAssetTypes(ctx, registry.Filter{"limit": "1"}) {
			if err != nil {
				t.Fatalf("call %d: %v", calls, err)
			}
			break
		}
		calls++
		time.Sleep(200 * time.Millisecond)
	}
	if got := rt.tokens.Load(); got < 3 {
		t.Errorf("%d token fetches over %v of calls with %v tokens; want a refresh before each ran out", got, 3*tokenTTL, tokenTTL)
	}
}

// While the documents service is down the gateway answers 503 with
// Retry-After; the SDK waits and retries with the same Idempotency-Key,
// so the upload happens exactly once when the service is back.
func TestRetryThroughAnOutageCreatesOnce(t *testing.T) {
	// Serial: it kills the documents service every other test uploads through.
	ctx := context.Background()
	c := newClient(t, http.DefaultTransport)
	documents := suite.Processes["documents"]
	if err := documents.Kill(); err != nil {
		t.Fatal(err)
	}
	content := []byte("outage report " + time.Now().String())
	var wg sync.WaitGroup
	var doc *registry.Document
	var err error
	wg.Add(1)
	go func() {
		defer wg.Done()
		doc, err = c.Upload(ctx, "expert_control_report", "outage.txt", bytes.NewReader(content), registry.IdempotencyKey(fmt.Sprint("outage-", time.Now().UnixNano())))
	}()
	time.Sleep(2 * time.Second)
	if rerr := documents.Restart(ctx); rerr != nil {
		t.Fatal(rerr)
	}
	wg.Wait()
	if err != nil {
		t.Fatalf("upload across the outage: %v", err)
	}
	got, gerr := c.GetDocument(ctx, doc.ID)
	if gerr != nil || got.Size != int64(len(content)) {
		t.Fatalf("document after the outage: %+v, %v", got, gerr)
	}
}
