package documents

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"slices"
	"testing"

	"github.com/google/uuid"

	"github.com/assetregistry/registry/pkg/auth"
	"github.com/assetregistry/registry/pkg/refs"
	"github.com/assetregistry/registry/tools/testkit"
	"github.com/assetregistry/registry/tools/testkit/servicetest"
)

const (
	orgA = "a0000000-0000-4000-8000-00000000000a"
	orgB = "b0000000-0000-4000-8000-00000000000b"
	orgC = "c0000000-0000-4000-8000-00000000000c"
)

// The matrix of "Organizations as tenants" over documents: a document is
// seen by its uploader's organization, through an asset type that
// attaches it, and with an action the caller sees that links it (the
// actions service answers which, here a stand-in); of its action
// documents a caller sees those of the actions it sees.
func TestTenancyOfDocuments(t *testing.T) {
	t.Parallel()
	linksSeen := map[string]map[uuid.UUID]bool{} // organization → action documents the actions service says it sees
	linking := map[uuid.UUID]uuid.UUID{}         // action document → the document it links
	actions := http.NewServeMux()
	actions.HandleFunc("POST /internal/documents_seen", func(w http.ResponseWriter, r *http.Request) {
		var in struct {
			OrganizationID string      `json:"organization_id"`
			DocumentIDs    []uuid.UUID `json:"document_ids"`
		}
		if err := json.NewDecoder(r.Body).Decode(&in); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		out := map[string][]uuid.UUID{"document_ids": {}, "action_document_ids": {}}
		for l := range linksSeen[in.OrganizationID] {
			if slices.Contains(in.DocumentIDs, linking[l]) {
				out["action_document_ids"] = append(out["action_document_ids"], l)
			}
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(out)
	})
	s := servicetest.StartServing(t, Spec(), map[string]*http.ServeMux{"actions": actions})
	rw := []string{auth.ScopeRead, auth.ScopeWrite}
	uploader, colleague := s.Bound("a-client", orgA, rw...), s.Bound("a2-client", orgA, rw...)
	b, c := s.Bound("b-client", orgB, rw...), s.Bound("c-client", orgC, rw...)
	admin := s.Bound("admin-client", orgC, auth.ScopeRead, auth.ScopeWrite, auth.ScopeAdmin)
	upload := func(token string) string {
		body, ctype := testkit.Multipart(t, typePart("expert_control_report"), filePart("r.pdf", "application/pdf", "%PDF-1.7 report"))
		return s.Call(201, "POST", "/documents", token, body, "Content-Type", ctype).JSON()["id"].(string)
	}
	own, typed, linked := upload(uploader), upload(uploader), upload(uploader)
	s.StandIn("assets").Refer("document", uuid.MustParse(typed), refs.Ref{Kind: "asset_type", ID: uuid.Must(uuid.NewV7()), Label: "Brand Model"})
	// Two action documents link the third: one on an action B sees, one on an action only A sees.
	seenByB, onlyA := uuid.Must(uuid.NewV7()), uuid.Must(uuid.NewV7())
	for _, l := range []uuid.UUID{seenByB, onlyA} {
		linking[l] = uuid.MustParse(linked)
		details, _ := json.Marshal(ActionDocument{ID: l, ActionID: uuid.Must(uuid.NewV7()), DocumentID: uuid.MustParse(linked), SourceSystem: "app", SourceReference: l.String()})
		s.StandIn("actions").Refer("document", uuid.MustParse(linked), refs.Ref{Kind: "action_document", ID: l, Details: details})
	}
	linksSeen[orgA] = map[uuid.UUID]bool{seenByB: true, onlyA: true}
	linksSeen[orgB] = map[uuid.UUID]bool{seenByB: true}

	all := []uuid.UUID{seenByB, onlyA}
	cases := []struct {
		name, token string
		sees        []string
		links       []uuid.UUID // of the linked document's, those shown
	}{
		{"uploader", uploader, []string{own, typed, linked}, all},
		{"its organization's other client", colleague, []string{own, typed, linked}, all},
		{"an organization an action that links it is seen by", b, []string{typed, linked}, []uuid.UUID{seenByB}},
		{"another organization", c, []string{typed}, nil},
		{"bound to none", s.RO, []string{own, typed, linked}, all},
		{"admin", admin, []string{own, typed, linked}, all},
	}
	sum := sha256.Sum256([]byte("%PDF-1.7 report"))
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			// The three have the same bytes: found by their sum, those it sees.
			var found []string
			for _, d := range testkit.Expect(t, s.Client.Do(t, "GET", "/documents?sha256="+hex.EncodeToString(sum[:]), tc.token, nil), 200).List() {
				found = append(found, d["id"].(string))
			}
			if want := slices.Sorted(slices.Values(tc.sees)); !slices.Equal(slices.Sorted(slices.Values(found)), want) {
				t.Errorf("found by sha256 %v, want %v", found, want)
			}
			for _, doc := range []string{own, typed, linked} {
				status := http.StatusNotFound
				if slices.Contains(tc.sees, doc) {
					status = http.StatusOK
				}
				call := func(path string) testkit.Response {
					return testkit.Expect(t, s.Client.Do(t, "GET", path, tc.token, nil), status)
				}
				got, listed := call("/documents/"+doc), call("/documents/"+doc+"/action_documents")
				call("/documents/" + doc + "/file")
				if doc != linked || status != http.StatusOK {
					continue
				}
				var shown, paged []uuid.UUID
				for _, l := range got.JSON()["action_documents"].([]any) {
					shown = append(shown, uuid.MustParse(l.(map[string]any)["id"].(string)))
				}
				for _, l := range listed.List() {
					paged = append(paged, uuid.MustParse(l["id"].(string)))
				}
				slices.SortFunc(shown, compareIDs)
				slices.SortFunc(paged, compareIDs)
				want := slices.SortedFunc(slices.Values(tc.links), compareIDs)
				if !slices.Equal(shown, want) || !slices.Equal(paged, want) {
					t.Errorf("action documents shown %v, paged %v, want %v", shown, paged, want)
				}
			}
		})
	}
	// The actions service asks, on a bound caller's behalf, which documents
	// it sees before linking one (an internal route, not in the public
	// document).
	internal := s.Issuer.Token(t, "actions", auth.ScopeInternal)
	plain := testkit.Client{BaseURL: s.Client.BaseURL, HTTP: http.DefaultClient}
	for _, c := range []struct {
		org  string
		want []string
	}{{orgA, []string{own, typed, linked}}, {orgB, []string{typed, linked}}, {orgC, []string{typed}}} {
		got := testkit.Expect(t, plain.Do(t, "POST", VisiblePath, internal, map[string]any{"document_ids": []string{own, typed, linked, uuid.NewString()}},
			auth.OnBehalfOfHeader, "someone", auth.OnBehalfOfOrganizationHeader, c.org), 200).JSON()
		var visible []string
		for _, id := range got["document_ids"].([]any) {
			visible = append(visible, id.(string))
		}
		if !slices.Equal(visible, c.want) {
			t.Errorf("organization %s sees %v, want %v", c.org, visible, c.want)
		}
	}

	// Nobody deletes what it does not see.
	s.Call(404, "DELETE", "/documents/"+own, c, nil)
	s.Call(200, "GET", "/documents/"+own, uploader, nil)
}

func compareIDs(a, b uuid.UUID) int { return slices.Compare(a[:], b[:]) }
