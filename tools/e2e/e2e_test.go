package e2e

import (
	"crypto/rand"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/assetregistry/registry/pkg/httpx"
	"github.com/assetregistry/registry/tools/testkit"
)

// gateway is the registry as clients see it.
func gateway() testkit.Client { return testkit.Client{BaseURL: stack.RegistryURL} }

// tokenResponse asks the real token endpoint.
func tokenResponse(t *testing.T, form url.Values) (int, map[string]any) {
	t.Helper()
	return postForm(t, stack.AuthURL+"/oidc/token", form)
}

func postForm(t *testing.T, endpoint string, form url.Values) (int, map[string]any) {
	t.Helper()
	resp, err := http.PostForm(endpoint, form)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var body map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, body
}

func clientForm(id, secret string) url.Values {
	return url.Values{"grant_type": {"client_credentials"}, "client_id": {id}, "client_secret": {secret}, "resource": {creds.Resource}}
}

// token gets a real access token for a client.
func token(t *testing.T, id, secret string) string {
	t.Helper()
	status, body := tokenResponse(t, clientForm(id, secret))
	if status != http.StatusOK {
		t.Fatalf("token: %d %v", status, body)
	}
	return body["access_token"].(string)
}

func readWrite(t *testing.T) string { return token(t, creds.ClientID, creds.ClientSecret) }
func readOnly(t *testing.T) string {
	return token(t, creds.ReadOnlyClientID, creds.ReadOnlyClientSecret)
}

func TestTokenEndpoint(t *testing.T) {
	t.Parallel()
	status, body := tokenResponse(t, clientForm(creds.ClientID, creds.ClientSecret))
	if status != 200 || body["token_type"] != "Bearer" || body["expires_in"].(float64) <= 0 ||
		body["scope"] != "registry:read registry:write" || body["access_token"] == "" {
		t.Fatalf("token response: %d %v", status, body)
	}
	narrowed := clientForm(creds.ClientID, creds.ClientSecret)
	narrowed.Set("scope", "registry:read")
	if status, body := tokenResponse(t, narrowed); status != 200 || body["scope"] != "registry:read" {
		t.Errorf("narrowed scope: %d %v", status, body)
	}
	tests := []struct {
		name   string
		change func(url.Values)
		status int
		error  string
	}{
		{"wrong secret", func(f url.Values) { f.Set("client_secret", "nope") }, 401, "invalid_client"},
		{"unknown client", func(f url.Values) { f.Set("client_id", "nobody") }, 401, "invalid_client"},
		{"other grant type", func(f url.Values) { f.Set("grant_type", "password") }, 400, "unsupported_grant_type"},
		{"foreign resource", func(f url.Values) { f.Set("resource", "https://elsewhere.example") }, 400, "invalid_target"},
		{"scope the client lacks", func(f url.Values) {
			f.Set("client_id", creds.ReadOnlyClientID)
			f.Set("client_secret", creds.ReadOnlyClientSecret)
			f.Set("scope", "registry:write")
		}, 400, "invalid_scope"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			form := clientForm(creds.ClientID, creds.ClientSecret)
			tt.change(form)
			if status, body := tokenResponse(t, form); status != tt.status || body["error"] != tt.error {
				t.Errorf("got %d %v, want %d %s", status, body, tt.status, tt.error)
			}
		})
	}
}

// signingKey is the identity provider's real key, so the tests can forge
// tokens that are correctly signed but wrong in one claim.
func signingKey(t *testing.T) (*rsa.PrivateKey, string) {
	t.Helper()
	raw, err := os.ReadFile(stack.SigningKeyFile)
	if err != nil {
		t.Fatal(err)
	}
	key, err := jwt.ParseRSAPrivateKeyFromPEM(raw)
	if err != nil {
		t.Fatal(err)
	}
	real, _, err := jwt.NewParser().ParseUnverified(readWrite(t), jwt.MapClaims{})
	if err != nil {
		t.Fatal(err)
	}
	return key, real.Header["kid"].(string)
}

func TestTokenChecks(t *testing.T) {
	t.Parallel()
	key, kid := signingKey(t)
	otherKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	claims := func(change func(jwt.MapClaims)) jwt.MapClaims {
		now := time.Now()
		c := jwt.MapClaims{"iss": stack.AuthURL, "sub": "forger", "aud": []string{creds.Resource},
			"iat": now.Unix(), "nbf": now.Unix(), "exp": now.Add(time.Minute).Unix(), "scope": "registry:read registry:write"}
		change(c)
		return c
	}
	valid := readWrite(t)
	parts := strings.Split(valid, ".")
	payload, _ := base64.RawURLEncoding.DecodeString(parts[1])
	tamperedPayload := base64.RawURLEncoding.EncodeToString([]byte(strings.Replace(string(payload), creds.ClientID, "someone-else", 1)))

	tests := []struct {
		name   string
		token  string
		path   string
		method string
		status int
	}{
		{"no token", "", "/organizations", "GET", 401},
		{"valid read-write token", valid, "/organizations", "GET", 200},
		{"expired", testkit.SignWith(t, key, kid, claims(func(c jwt.MapClaims) { c["exp"] = time.Now().Add(-5 * time.Minute).Unix() })), "/organizations", "GET", 401},
		{"not yet valid", testkit.SignWith(t, key, kid, claims(func(c jwt.MapClaims) { c["nbf"] = time.Now().Add(5 * time.Minute).Unix() })), "/organizations", "GET", 401},
		{"wrong audience", testkit.SignWith(t, key, kid, claims(func(c jwt.MapClaims) { c["aud"] = "https://other-registry.example" })), "/organizations", "GET", 401},
		{"wrong issuer", testkit.SignWith(t, key, kid, claims(func(c jwt.MapClaims) { c["iss"] = "https://evil.example" })), "/organizations", "GET", 401},
		{"unsigned", testkit.Unsigned(t, claims(func(jwt.MapClaims) {})), "/organizations", "GET", 401},
		{"tampered", parts[0] + "." + tamperedPayload + "." + parts[2], "/organizations", "GET", 401},
		{"unknown key", testkit.SignWith(t, otherKey, "unknown-key", claims(func(jwt.MapClaims) {})), "/organizations", "GET", 401},
		{"read-only scope on a write", readOnly(t), "/organizations", "POST", 403},
		{"read-only scope on a read", readOnly(t), "/organizations", "GET", 200},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var body any
			if tt.method == "POST" {
				body = map[string]any{"name": "X", "registration_number": "forged-" + tt.name, "organization_type": "private"}
			}
			r := testkit.Expect(t, gateway().Do(t, tt.method, tt.path, tt.token, body), tt.status)
			if tt.status == 401 && !strings.HasPrefix(r.Header.Get("WWW-Authenticate"), "Bearer") {
				t.Errorf("401 without a Bearer challenge: %q", r.Header.Get("WWW-Authenticate"))
			}
		})
	}
}

// A service reached around the gateway verifies tokens itself.
func TestServiceIsNoBackDoor(t *testing.T) {
	t.Parallel()
	direct := testkit.Client{BaseURL: stack.ServiceURLs["parties"]}
	key, kid := signingKey(t)
	wrongAudience := testkit.SignWith(t, key, kid, jwt.MapClaims{"iss": stack.AuthURL, "sub": "x", "aud": "https://other.example",
		"exp": time.Now().Add(time.Minute).Unix(), "iat": time.Now().Unix(), "scope": "registry:read registry:write"})
	testkit.Expect(t, direct.Do(t, "GET", "/organizations", "", nil), 401)
	testkit.Expect(t, direct.Do(t, "GET", "/organizations", "forged", nil), 401)
	testkit.Expect(t, direct.Do(t, "GET", "/organizations", wrongAudience, nil), 401)
	testkit.Expect(t, direct.Do(t, "POST", "/organizations", readOnly(t), map[string]any{}), 403)
	testkit.Expect(t, direct.Do(t, "GET", "/organizations", readOnly(t), nil), 200)
}

// The interface's recommended order for recording work, as an integration
// would do it, through the gateway with real tokens: organization, person,
// link, asset type, asset, action, document, action document; then
// everything read back.
func TestRecordingFlow(t *testing.T) {
	t.Parallel()
	rw, ro := readWrite(t), readOnly(t)
	gw := gateway()
	call := func(status int, method, path, token string, body any, headers ...string) map[string]any {
		t.Helper()
		return testkit.Expect(t, gw.Do(t, method, path, token, body, headers...), status).JSON()
	}
	org := call(201, "POST", "/organizations/", rw, map[string]any{
		"name": "Kontroll AS", "registration_number": "987654321", "organization_type": "private",
		"tax_identification_number": "NO987654321MVA", "country": "NO"})
	if org["tax_registration_number"] != "NO987654321MVA" || org["country"] != "no" || org["created_by"] != creds.ClientID {
		t.Errorf("organization: %v", org)
	}
	if found := call(200, "POST", "/organization/find/", rw, map[string]any{"registration_number": "987654321", "country": "no"}); found["id"] != org["id"] {
		t.Errorf("find organization: %v", found)
	}
	// A last name of its own: other tests record people named Kontrollør,
	// and the name filter below must find this one alone.
	lastName := unique("Kontrollør")
	person := call(201, "POST", "/people/find?create=true", rw,
		map[string]any{"first_name": "Ingrid", "last_name": lastName, "date_of_birth": "1985-06-15"})
	link := fmt.Sprintf("/people/%s/organizations/%s?relation_type=employee", person["id"], org["id"])
	call(201, "POST", link, rw, nil)
	call(200, "POST", link, rw, nil)
	brand := unique("Liftmaster")
	assetType := call(201, "POST", "/asset_types", rw, map[string]any{"brand": brand, "model": "LM-200"})
	if matches := testkit.Expect(t, gw.Do(t, "GET", "/asset_types/by_brand_and_model?brand="+brand+"&model=LM-200", ro, nil), 200).List(); len(matches) != 1 {
		t.Errorf("by_brand_and_model: %v", matches)
	}
	asset := call(201, "POST", "/assets/find?create=true", rw, map[string]any{"serial_number": unique("SN"), "brand": brand, "model": "LM-200"})
	if asset["asset_type_id"] != assetType["id"] {
		t.Errorf("asset: %v", asset)
	}
	action := call(201, "POST", "/actions/", rw, map[string]any{"asset_id": asset["id"], "action_type": "expert_control",
		"performed_at": "2025-03-14", "person_id": person["id"], "organization_id": org["id"], "reference": "EK-2025-0042",
		"status": "approved", "status_ok": true, "status_finalized": true, "status_valid_through": "2026-03-14",
		"source_system": "inspection-app", "source_reference": unique("insp"),
		"data": map[string]any{"checklist": map[string]any{"brakes": "ok", "chains": "ok"}}})
	actionPath := "/actions/" + action["id"].(string)
	if action["status_use_ok"] != true || action["created_by"] != creds.ClientID || len(action["action_documents"].([]any)) != 0 {
		t.Errorf("action: %v", action)
	}
	report := uploadThroughGateway(t, rw, "report.pdf", "application/pdf", "%PDF-1.7 expert control report")
	actionDocument := call(201, "POST", actionPath+"/action_documents/", rw, map[string]any{"action_id": action["id"],
		"document_id": report, "source_system": "inspection-app", "source_reference": "report-42"})

	// Read it all back.
	gotOrg := call(200, "GET", "/organizations/"+org["id"].(string), ro, nil)
	people := gotOrg["associated_people"].([]any)
	if len(people) != 1 || people[0].(map[string]any)["id"] != person["id"] || people[0].(map[string]any)["relation_type"] != "employee" {
		t.Errorf("associated_people: %v", people)
	}
	gotPerson := call(200, "GET", "/people/"+person["id"].(string)+"/", ro, nil)
	if orgs := gotPerson["associated_organizations"].([]any); len(orgs) != 1 || orgs[0].(map[string]any)["id"] != org["id"] {
		t.Errorf("associated_organizations: %v", orgs)
	}
	if got := call(200, "GET", "/assets/"+asset["id"].(string), ro, nil); got["serial_number"] != asset["serial_number"] {
		t.Errorf("asset: %v", got)
	}
	gotAction := call(200, "GET", actionPath, ro, nil)
	if docs := gotAction["action_documents"].([]any); len(docs) != 1 || fmt.Sprint(docs[0]) != fmt.Sprint(actionDocument) {
		t.Errorf("the action's action_documents: %v, want [%v]", docs, actionDocument)
	}
	gotDocument := call(200, "GET", "/documents/"+report, ro, nil)
	if docs := gotDocument["action_documents"].([]any); len(docs) != 1 || docs[0].(map[string]any)["id"] != actionDocument["id"] ||
		docs[0].(map[string]any)["action_id"] != action["id"] || docs[0].(map[string]any)["created_at"] != actionDocument["created_at"] {
		t.Errorf("the document's action_documents: %v", docs)
	}
	due := testkit.Expect(t, gw.Do(t, "GET", "/actions?asset_id="+asset["id"].(string)+"&valid_through_before=2026-03-15", ro, nil), 200).List()
	if len(due) != 1 || due[0]["id"] != action["id"] {
		t.Errorf("due before 2026-03-15: %v", due)
	}
	updated := call(200, "PATCH", "/people/"+person["id"].(string), rw, `{"date_of_birth":null}`, "Content-Type", "application/merge-patch+json")
	if updated["date_of_birth"] != nil || updated["updated_by"] != creds.ClientID {
		t.Errorf("patched person: %v", updated)
	}
	if list := testkit.Expect(t, gw.Do(t, "GET", "/people?last_name="+url.QueryEscape(strings.ToUpper(lastName)), ro, nil), 200).List(); len(list) != 1 {
		t.Errorf("case-insensitive name filter: %v", list)
	}

	// What the action and its action document point at cannot go while
	// they do; the 409 names them.
	for _, refused := range []struct{ path, names string }{
		{"/assets/" + asset["id"].(string), action["id"].(string)},
		{"/people/" + person["id"].(string), action["id"].(string)},
		{"/organizations/" + org["id"].(string), action["id"].(string)},
		{"/documents/" + report, actionDocument["id"].(string)},
	} {
		p := call(409, "DELETE", refused.path, rw, nil)
		if p["type"] != httpx.ProblemTypePrefix+"still-referenced" || !strings.Contains(p["detail"].(string), refused.names) {
			t.Errorf("DELETE %s: %v", refused.path, p)
		}
	}
}

// Errors reach the client unchanged through the gateway, with the path the
// client used and the gateway's request id.
func TestErrorsThroughGateway(t *testing.T) {
	t.Parallel()
	rw := readWrite(t)
	gw := gateway()
	tests := []struct {
		name, method, path string
		body               any
		headers            []string
		status             int
	}{
		{"unknown path", "GET", "/nothing/here", nil, nil, 404},
		{"unknown resource", "GET", "/organizations/0190b0a4-2a2c-7c4e-8a42-1a2b3c4d5e6f/", nil, nil, 404},
		{"malformed id", "GET", "/people/not-a-uuid", nil, nil, 400},
		{"method not allowed", "PUT", "/organizations", map[string]any{}, nil, 405},
		{"wrong media type", "POST", "/people", "first_name=a", []string{"Content-Type", "application/x-www-form-urlencoded"}, 415},
		{"too large", "POST", "/people", `{"first_name":"` + strings.Repeat("a", 1<<20) + `"}`, nil, 413},
		{"invalid field", "POST", "/people/", map[string]any{"first_name": "A"}, nil, 422},
		{"bad limit", "GET", "/organizations?limit=0", nil, nil, 400},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := testkit.Expect(t, gw.Do(t, tt.method, tt.path, rw, tt.body, tt.headers...), tt.status)
			if got := r.JSON()["instance"]; got != strings.SplitN(tt.path, "?", 2)[0] {
				t.Errorf("instance = %v, want the client's path %s", got, tt.path)
			}
			if strings.Contains(string(r.Raw), "127.0.0.1") {
				t.Errorf("internal address in the body: %s", r.Raw)
			}
		})
	}
	conflict := map[string]any{"name": "Dup", "registration_number": "dup-1", "organization_type": "public"}
	first := testkit.Expect(t, gw.Do(t, "POST", "/organizations", rw, conflict), 201).JSON()
	dup := testkit.Expect(t, gw.Do(t, "POST", "/organizations", rw, conflict), 409).JSON()
	if dup["existing_id"] != first["id"] || dup["type"] != httpx.ProblemTypePrefix+"duplicate" {
		t.Errorf("409: %v", dup)
	}
}

func TestConcurrentFindOrCreateThroughGateway(t *testing.T) {
	t.Parallel()
	rw := readWrite(t)
	const callers = 50
	statuses := make(chan int, callers)
	ids := make(chan any, callers)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for range callers {
		wg.Go(func() {
			<-start
			r := gateway().Do(t, "POST", "/people/find?create=true", rw,
				map[string]any{"first_name": "Concurrent", "last_name": "Caller", "date_of_birth": "2000-01-01"})
			statuses <- r.Status
			ids <- r.JSON()["id"]
		})
	}
	close(start)
	wg.Wait()
	close(statuses)
	close(ids)
	created := 0
	for s := range statuses {
		switch s {
		case 201:
			created++
		case 200:
		default:
			t.Fatalf("status %d", s)
		}
	}
	var first any
	for id := range ids {
		if first == nil {
			first = id
		}
		if id != first {
			t.Fatalf("two different people: %v and %v", first, id)
		}
	}
	if created != 1 {
		t.Fatalf("%d calls answered 201, want exactly one", created)
	}
	list := testkit.Expect(t, gateway().Do(t, "GET", "/people?first_name=concurrent&last_name=caller", readOnly(t), nil), 200).List()
	if len(list) != 1 {
		t.Fatalf("%d people stored, want 1", len(list))
	}
}

// One trace spans the gateway, the service and its SQL.
func TestTraceSpansEveryHop(t *testing.T) {
	t.Parallel()
	traceID := randomTraceID()
	traceparent := "00-" + traceID + "-" + strings.Repeat("0", 15) + "1-01"
	testkit.Expect(t, gateway().Do(t, "GET", "/organizations?limit=1", readOnly(t), nil, "traceparent", traceparent), 200)
	want := map[string]bool{"gateway server": false, "gateway client": false, "parties server": false, "parties sql": false}
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		for _, s := range spans.trace(traceID) {
			switch {
			case s.Service == "api-gateway" && s.Kind == "SPAN_KIND_SERVER":
				want["gateway server"] = true
			case s.Service == "api-gateway" && s.Kind == "SPAN_KIND_CLIENT":
				want["gateway client"] = true
			case s.Service == "parties" && s.Kind == "SPAN_KIND_SERVER" && s.Name == "GET /organizations":
				want["parties server"] = true
			case s.Service == "parties" && s.Kind == "SPAN_KIND_CLIENT" && strings.HasPrefix(s.Attributes["db.query.text"], "SELECT"):
				want["parties sql"] = true
			}
		}
		all := true
		for _, ok := range want {
			all = all && ok
		}
		if all {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("trace %s is missing hops: %v (spans: %+v)", traceID, want, spans.trace(traceID))
}

func randomTraceID() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return fmt.Sprintf("%x", b)
}

// The documentation renders without a token and loads nothing from any
// other host.
func TestDocumentation(t *testing.T) {
	t.Parallel()
	for _, resource := range []string{"organizations", "people", "documents", "asset_types", "assets", "actions"} {
		page := get(t, stack.RegistryURL+"/docs/"+resource)
		if !strings.Contains(page, "swagger-ui") {
			t.Fatalf("/docs/%s is not the interactive documentation", resource)
		}
		for _, ref := range regexp.MustCompile(`(?:src|href)="([^"]+)"`).FindAllStringSubmatch(page, -1) {
			u := ref[1]
			if strings.HasPrefix(u, "http://") || strings.HasPrefix(u, "https://") || strings.HasPrefix(u, "//") {
				t.Errorf("/docs/%s loads %s from another host", resource, u)
				continue
			}
			get(t, stack.RegistryURL+u) // every asset is served by the registry itself
		}
		var doc map[string]any
		if err := json.Unmarshal([]byte(get(t, stack.RegistryURL+"/openapi/"+resource+".json")), &doc); err != nil {
			t.Fatal(err)
		}
		for path := range doc["paths"].(map[string]any) {
			if !strings.HasPrefix(path, "/"+resource) && !(resource == "organizations" && strings.HasPrefix(path, "/organization/")) {
				t.Errorf("/openapi/%s.json documents %s", resource, path)
			}
		}
	}
	for _, asset := range []string{"swagger-ui-bundle.js", "swagger-ui.css"} {
		body := get(t, stack.RegistryURL+"/docs/people/"+asset)
		if m := regexp.MustCompile(`https?://(fonts\.googleapis|cdn|unpkg)[^"' )]*`).FindString(body); m != "" {
			t.Errorf("%s fetches from another host: %s", asset, m)
		}
	}
}

func get(t *testing.T, u string) string {
	t.Helper()
	resp, err := http.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		t.Fatalf("GET %s: %d %s", u, resp.StatusCode, body)
	}
	return string(body)
}

func TestProbesNeedNoToken(t *testing.T) {
	t.Parallel()
	for _, p := range []string{"/healthz", "/readyz", "/openapi.json", "/docs"} {
		get(t, stack.RegistryURL+p)
	}
}
