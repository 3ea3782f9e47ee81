package gateway

import (
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/assetregistry/registry/pkg/auth"
	"github.com/assetregistry/registry/pkg/catalog"
	"github.com/assetregistry/registry/tools/testkit"
)

// With a service down, the whole API is still documented: the gateway
// serves that service's document from the copy it was built with.
func TestDocumentsStayWholeWhileAServiceIsDown(t *testing.T) {
	t.Parallel()
	parties := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/openapi.json" {
			http.NotFound(w, r)
			return
		}
		doc, err := builtInDoc("parties")
		if err != nil {
			t.Error(err)
		}
		_ = json.NewEncoder(w).Encode(doc)
	}))
	t.Cleanup(parties.Close)
	// An address nothing listens on: the assets service is down.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	assets := "http://" + ln.Addr().String()
	ln.Close()

	issuer := testkit.NewIssuer(t, "https://registry.test")
	partiesURL := parties.URL
	_, url := start(t, Config{
		OIDC:      auth.Config{Issuer: issuer.URL, Audience: issuer.Audience, Leeway: testkit.Leeway},
		Upstreams: map[string]*string{"parties": &partiesURL, "assets": &assets},
	})
	client := testkit.Client{BaseURL: url}
	for range 2 { // the second answer comes from what the first kept
		merged := client.Do(t, "GET", "/openapi.json", "", nil)
		testkit.Expect(t, merged, 200)
		paths, _ := merged.JSON()["paths"].(map[string]any)
		for _, p := range []string{"/organizations", "/assets", "/asset_types"} {
			if paths[p] == nil {
				t.Errorf("/openapi.json with the assets service down lacks %s: %d paths", p, len(paths))
			}
		}
	}
	one := client.Do(t, "GET", "/openapi/assets.json", "", nil)
	testkit.Expect(t, one, 200)
	if paths, _ := one.JSON()["paths"].(map[string]any); paths["/assets"] == nil {
		t.Errorf("/openapi/assets.json with the assets service down lacks /assets: %v", paths)
	}
}

// The copy the gateway embeds builds into a document for every service.
func TestBuiltInDocumentsBundle(t *testing.T) {
	t.Parallel()
	for _, service := range catalog.Names() {
		doc, err := builtInDoc(service)
		if err != nil {
			t.Fatal(err)
		}
		if paths, _ := doc["paths"].(map[string]any); len(paths) == 0 {
			t.Errorf("%s: no paths", service)
		}
	}
}
