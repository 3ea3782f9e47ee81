package registry

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"iter"
	"mime"
	"mime/multipart"
	"net/http"
	"net/textproto"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
)

type versioned interface{ setETag(string) }

// decode reads a JSON answer into T and keeps its ETag.
func decode[T any](resp *response) (*T, error) {
	v := new(T)
	if err := json.Unmarshal(resp.body, v); err != nil {
		return nil, fmt.Errorf("registry: decoding the answer: %w", err)
	}
	if vv, ok := any(v).(versioned); ok {
		vv.setETag(resp.header.Get("ETag"))
	}
	return v, nil
}

func send[T any](ctx context.Context, c *Client, cl *call, opts []CallOption) (*T, error) {
	resp, err := c.do(ctx, cl, opts...)
	if err != nil {
		return nil, err
	}
	return decode[T](resp)
}

func create[T any](ctx context.Context, c *Client, path string, in any, opts []CallOption) (*T, error) {
	return send[T](ctx, c, &call{method: http.MethodPost, path: path, body: jsonBody(in), keyed: true}, opts)
}

func get[T any](ctx context.Context, c *Client, path string) (*T, error) {
	return send[T](ctx, c, &call{method: http.MethodGet, path: path}, nil)
}

func update[T any](ctx context.Context, c *Client, path string, patch Patch, opts []CallOption) (*T, error) {
	raw, err := json.Marshal(patch)
	body := func() (io.Reader, string, error) {
		return bytesReader(raw), "application/merge-patch+json", err
	}
	return send[T](ctx, c, &call{method: http.MethodPatch, path: path, body: body}, opts)
}

func (c *Client) delete(ctx context.Context, path string, query url.Values, opts []CallOption) error {
	_, err := c.do(ctx, &call{method: http.MethodDelete, path: path, query: query}, opts...)
	return err
}

// find posts criteria to a find operation; create asks it to create what
// it does not find. created says which happened.
func find[T any](ctx context.Context, c *Client, path string, criteria any, create bool, opts []CallOption) (*T, bool, error) {
	q := url.Values{}
	if create {
		q.Set("create", "true")
	}
	resp, err := c.do(ctx, &call{method: http.MethodPost, path: path, query: q, body: jsonBody(criteria), keyed: create}, opts...)
	if err != nil {
		return nil, false, err
	}
	v, err := decode[T](resp)
	return v, resp.status == http.StatusCreated, err
}

var nextLink = regexp.MustCompile(`<([^>]+)>\s*;\s*rel="?next"?`)

// list pages through a collection, following Link: rel="next".
func list[T any](ctx context.Context, c *Client, path string, filter Filter) iter.Seq2[T, error] {
	q := url.Values{}
	for k, v := range filter {
		q.Set(k, v)
	}
	return listQuery[T](ctx, c, path, q)
}

// listQuery is list with a query whose parameters may repeat.
func listQuery[T any](ctx context.Context, c *Client, path string, q url.Values) iter.Seq2[T, error] {
	return func(yield func(T, error) bool) {
		cl := &call{method: http.MethodGet, path: path, query: q}
		for {
			resp, err := c.do(ctx, cl)
			if err != nil {
				var zero T
				yield(zero, err)
				return
			}
			var page []T
			if err := json.Unmarshal(resp.body, &page); err != nil {
				var zero T
				yield(zero, fmt.Errorf("registry: decoding a page of %s: %w", path, err))
				return
			}
			for _, item := range page {
				if !yield(item, nil) {
					return
				}
			}
			next, ok := c.next(resp.header)
			if !ok {
				return
			}
			cl = next
		}
	}
}

// next turns a Link: rel="next" into the call that follows it.
func (c *Client) next(h http.Header) (*call, bool) {
	for _, l := range h.Values("Link") {
		if m := nextLink.FindStringSubmatch(l); m != nil {
			u, err := url.Parse(m[1])
			if err != nil {
				return nil, false
			}
			return &call{method: http.MethodGet, path: u.Path, query: u.Query()}, true
		}
	}
	return nil, false
}

// Organizations.

func (c *Client) ListOrganizations(ctx context.Context, f Filter) iter.Seq2[Organization, error] {
	return list[Organization](ctx, c, "/organizations", f)
}

// OrganizationPeople lists every person linked to the organization, one
// entry per relation, in link order (GetOrganization embeds the first 100).
func (c *Client) OrganizationPeople(ctx context.Context, id string) iter.Seq2[AssociatedPerson, error] {
	return list[AssociatedPerson](ctx, c, "/organizations/"+url.PathEscape(id)+"/people", nil)
}
func (c *Client) GetOrganization(ctx context.Context, id string) (*Organization, error) {
	return get[Organization](ctx, c, "/organizations/"+url.PathEscape(id))
}
func (c *Client) CreateOrganization(ctx context.Context, in OrganizationInput, opts ...CallOption) (*Organization, error) {
	return create[Organization](ctx, c, "/organizations", in, opts)
}
func (c *Client) UpdateOrganization(ctx context.Context, id string, p Patch, opts ...CallOption) (*Organization, error) {
	return update[Organization](ctx, c, "/organizations/"+url.PathEscape(id), p, opts)
}
func (c *Client) DeleteOrganization(ctx context.Context, id string, opts ...CallOption) error {
	return c.delete(ctx, "/organizations/"+url.PathEscape(id), nil, opts)
}

// FindOrganization finds by registration number (and country, if given);
// nothing found is a Problem with IsNotFound.
func (c *Client) FindOrganization(ctx context.Context, registrationNumber, country string) (*Organization, error) {
	criteria := map[string]string{"registration_number": registrationNumber}
	if country != "" {
		criteria["country"] = country
	}
	o, _, err := find[Organization](ctx, c, "/organizations/find", criteria, false, nil)
	return o, err
}

// FindOrCreateOrganization finds the organization by its natural key
// (registration number, country) and creates it when there is none. Two
// callers racing both end with the same organization.
func (c *Client) FindOrCreateOrganization(ctx context.Context, in OrganizationInput, opts ...CallOption) (*Organization, bool, error) {
	o, err := c.FindOrganization(ctx, in.RegistrationNumber, in.Country)
	if err == nil || !IsNotFound(err) {
		return o, false, err
	}
	o, err = c.CreateOrganization(ctx, in, opts...)
	var p *Problem
	if asProblem(err, &p) && p.ExistingID != "" {
		o, err = c.GetOrganization(ctx, p.ExistingID)
		return o, false, err
	}
	return o, err == nil, err
}

// People.

func (c *Client) ListPeople(ctx context.Context, f Filter) iter.Seq2[Person, error] {
	return list[Person](ctx, c, "/people", f)
}

// PersonOrganizations lists every organization the person is linked to,
// one entry per relation, in link order (GetPerson embeds the first 100).
func (c *Client) PersonOrganizations(ctx context.Context, id string) iter.Seq2[AssociatedOrganization, error] {
	return list[AssociatedOrganization](ctx, c, "/people/"+url.PathEscape(id)+"/organizations", nil)
}
func (c *Client) GetPerson(ctx context.Context, id string) (*Person, error) {
	return get[Person](ctx, c, "/people/"+url.PathEscape(id))
}
func (c *Client) CreatePerson(ctx context.Context, in PersonInput, opts ...CallOption) (*Person, error) {
	return create[Person](ctx, c, "/people", in, opts)
}
func (c *Client) UpdatePerson(ctx context.Context, id string, p Patch, opts ...CallOption) (*Person, error) {
	return update[Person](ctx, c, "/people/"+url.PathEscape(id), p, opts)
}
func (c *Client) DeletePerson(ctx context.Context, id string, opts ...CallOption) error {
	return c.delete(ctx, "/people/"+url.PathEscape(id), nil, opts)
}

// FindPerson finds a person by identity; with create, one that does not
// exist is created (created says so). Concurrent calls create one person.
func (c *Client) FindPerson(ctx context.Context, in PersonInput, create bool, opts ...CallOption) (p *Person, created bool, err error) {
	return find[Person](ctx, c, "/people/find", in, create, opts)
}

// LinkPerson links a person to an organization (again: the same link).
func (c *Client) LinkPerson(ctx context.Context, personID, organizationID, relationType string, opts ...CallOption) (*Link, error) {
	return send[Link](ctx, c, &call{method: http.MethodPost, path: linkPath(personID, organizationID),
		query: url.Values{"relation_type": {relationType}}, keyed: true}, opts)
}
func (c *Client) UnlinkPerson(ctx context.Context, personID, organizationID, relationType string, opts ...CallOption) error {
	return c.delete(ctx, linkPath(personID, organizationID), url.Values{"relation_type": {relationType}}, opts)
}
func linkPath(personID, organizationID string) string {
	return "/people/" + url.PathEscape(personID) + "/organizations/" + url.PathEscape(organizationID)
}

// Asset types.

func (c *Client) ListAssetTypes(ctx context.Context, f Filter) iter.Seq2[AssetType, error] {
	return list[AssetType](ctx, c, "/asset_types", f)
}

// AssetTypeDocuments lists every document attached to the asset type, in
// attach order (GetAssetType embeds the first 100).
func (c *Client) AssetTypeDocuments(ctx context.Context, id string) iter.Seq2[Document, error] {
	return list[Document](ctx, c, "/asset_types/"+url.PathEscape(id)+"/documents", nil)
}
func (c *Client) GetAssetType(ctx context.Context, id string) (*AssetType, error) {
	return get[AssetType](ctx, c, "/asset_types/"+url.PathEscape(id))
}
func (c *Client) CreateAssetType(ctx context.Context, in AssetTypeInput, opts ...CallOption) (*AssetType, error) {
	return create[AssetType](ctx, c, "/asset_types", in, opts)
}
func (c *Client) UpdateAssetType(ctx context.Context, id string, p Patch, opts ...CallOption) (*AssetType, error) {
	return update[AssetType](ctx, c, "/asset_types/"+url.PathEscape(id), p, opts)
}
func (c *Client) DeleteAssetType(ctx context.Context, id string, opts ...CallOption) error {
	return c.delete(ctx, "/asset_types/"+url.PathEscape(id), nil, opts)
}

// AssetTypesByBrandAndModel lists the asset types of a brand and model;
// with version "" every version matches.
func (c *Client) AssetTypesByBrandAndModel(ctx context.Context, brand, model, version string) ([]AssetType, error) {
	q := url.Values{"brand": {brand}, "model": {model}}
	if version != "" {
		q.Set("version", version)
	}
	resp, err := c.do(ctx, &call{method: http.MethodGet, path: "/asset_types/by_brand_and_model", query: q})
	if err != nil {
		return nil, err
	}
	out, err := decode[[]AssetType](resp)
	if err != nil {
		return nil, err
	}
	return *out, nil
}

// FindOrCreateAssetType returns the asset type of brand, model and
// version, creating it when there is none.
func (c *Client) FindOrCreateAssetType(ctx context.Context, in AssetTypeInput, opts ...CallOption) (*AssetType, bool, error) {
	found, err := c.AssetTypesByBrandAndModel(ctx, in.Brand, in.Model, in.ModelVersion)
	if err != nil {
		return nil, false, err
	}
	for _, t := range found {
		if (t.ModelVersion == nil && in.ModelVersion == "") || (t.ModelVersion != nil && strings.EqualFold(*t.ModelVersion, in.ModelVersion)) {
			return &t, false, nil
		}
	}
	t, err := c.CreateAssetType(ctx, in, opts...)
	var p *Problem
	if asProblem(err, &p) && p.ExistingID != "" {
		t, err = c.GetAssetType(ctx, p.ExistingID)
		return t, false, err
	}
	return t, err == nil, err
}

func (c *Client) AttachDocument(ctx context.Context, assetTypeID, documentID string, opts ...CallOption) error {
	_, err := c.do(ctx, &call{method: http.MethodPost, path: "/asset_types/" + url.PathEscape(assetTypeID) + "/documents",
		body: jsonBody(map[string]string{"document_id": documentID}), keyed: true}, opts...)
	return err
}
func (c *Client) DetachDocument(ctx context.Context, assetTypeID, documentID string, opts ...CallOption) error {
	return c.delete(ctx, "/asset_types/"+url.PathEscape(assetTypeID)+"/documents/"+url.PathEscape(documentID), nil, opts)
}
func (c *Client) SetThumbnail(ctx context.Context, assetTypeID, documentID string, opts ...CallOption) (*AssetType, error) {
	return send[AssetType](ctx, c, &call{method: http.MethodPut, path: "/asset_types/" + url.PathEscape(assetTypeID) + "/thumbnail",
		body: jsonBody(map[string]string{"document_id": documentID})}, opts)
}

// Assets.

func (c *Client) ListAssets(ctx context.Context, f Filter) iter.Seq2[Asset, error] {
	return list[Asset](ctx, c, "/assets", f)
}
func (c *Client) GetAsset(ctx context.Context, id string) (*Asset, error) {
	return get[Asset](ctx, c, "/assets/"+url.PathEscape(id))
}
func (c *Client) CreateAsset(ctx context.Context, in AssetInput, opts ...CallOption) (*Asset, error) {
	return create[Asset](ctx, c, "/assets", in, opts)
}
func (c *Client) UpdateAsset(ctx context.Context, id string, p Patch, opts ...CallOption) (*Asset, error) {
	return update[Asset](ctx, c, "/assets/"+url.PathEscape(id), p, opts)
}
func (c *Client) DeleteAsset(ctx context.Context, id string, opts ...CallOption) error {
	return c.delete(ctx, "/assets/"+url.PathEscape(id), nil, opts)
}

// FindAsset finds an asset by serial number (and brand, model, version);
// with create, one that does not exist is created in the asset type they
// name, which must exist.
func (c *Client) FindAsset(ctx context.Context, q AssetQuery, create bool, opts ...CallOption) (a *Asset, created bool, err error) {
	return find[Asset](ctx, c, "/assets/find", q, create, opts)
}

// Actions.

func (c *Client) ListActions(ctx context.Context, f Filter) iter.Seq2[Action, error] {
	return list[Action](ctx, c, "/actions", f)
}
func (c *Client) GetAction(ctx context.Context, id string) (*Action, error) {
	return get[Action](ctx, c, "/actions/"+url.PathEscape(id))
}
func (c *Client) CreateAction(ctx context.Context, in ActionInput, opts ...CallOption) (*Action, error) {
	return create[Action](ctx, c, "/actions", in, opts)
}
func (c *Client) UpdateAction(ctx context.Context, id string, p Patch, opts ...CallOption) (*Action, error) {
	return update[Action](ctx, c, "/actions/"+url.PathEscape(id), p, opts)
}
func (c *Client) DeleteAction(ctx context.Context, id string, opts ...CallOption) error {
	return c.delete(ctx, "/actions/"+url.PathEscape(id), nil, opts)
}

// FindAction finds the action holding in's (SourceSystem,
// SourceReference), the sync key, both required; nothing found is a
// Problem with IsNotFound. With create, in is recorded when no action holds
// them (POST /actions/find?create=true), and created says so: however
// often it runs, and whenever, one action is recorded.
func (c *Client) FindAction(ctx context.Context, in ActionInput, create bool, opts ...CallOption) (a *Action, created bool, err error) {
	if !create {
		// Only the pair: the action's other members are checked only when
		// they are to be recorded, and empty ones are not valid.
		pair := map[string]string{"source_system": in.SourceSystem, "source_reference": in.SourceReference}
		return find[Action](ctx, c, "/actions/find", pair, false, opts)
	}
	return find[Action](ctx, c, "/actions/find", in, create, opts)
}

// Batches.

// MaxBatch is how many items one batch create may carry (and at most
// 1 MiB of JSON in all).
const MaxBatch = 1000

// BatchResult is one item's outcome of a batch create, in the order of the
// items: Status 201 with the ID of what was created, 200 with the ID of
// what was found (CreateAssets), or the Problem the item alone would have
// been answered with.
type BatchResult struct {
	Status  int      `json:"status"`
	ID      string   `json:"id,omitempty"`
	ETag    string   `json:"etag,omitempty"` // an updated item's new ETag (UpdateAssets, UpdateActions)
	Problem *Problem `json:"problem,omitempty"`
}

// Err is the item's problem as an error; nil when it was created or found.
func (r BatchResult) Err() error {
	if r.Problem != nil {
		return r.Problem
	}
	return nil
}

// CreateAssets finds or creates each asset by its asset type and serial
// number (POST /assets/batch): one result per item, in order. Items fail
// alone; the error is the batch's own (nothing of it was written). One
// Idempotency-Key covers the batch: give your own (IdempotencyKey) to make
// a batch repeated after a crash replay its first answer.
func (c *Client) CreateAssets(ctx context.Context, items []AssetInput, opts ...CallOption) ([]BatchResult, error) {
	return batch(ctx, c, "/assets/batch", items, opts)
}

// CreateActions records each action as CreateAction would (POST
// /actions/batch): one result per item, in order; as CreateAssets. An item
// whose (SourceSystem, SourceReference) another action holds is a 409
// naming it.
func (c *Client) CreateActions(ctx context.Context, items []ActionInput, opts ...CallOption) ([]BatchResult, error) {
	return batch(ctx, c, "/actions/batch", items, opts)
}

// FindOrCreateActions is CreateActions where each item naming both
// SourceSystem and SourceReference is found by them first (POST
// /actions/batch?find=true): Status 200 with the ID of the action holding
// the pair (recorded before, or by an earlier item), else 201 or the
// item's problem.
func (c *Client) FindOrCreateActions(ctx context.Context, items []ActionInput, opts ...CallOption) ([]BatchResult, error) {
	return batch(ctx, c, "/actions/batch?find=true", items, opts)
}

func batch[In any](ctx context.Context, c *Client, path string, items []In, opts []CallOption) ([]BatchResult, error) {
	return batchOf(ctx, c, http.MethodPost, path, items, opts)
}

// batchOf sends a batch of creates (POST, which takes an Idempotency-Key)
// or of updates (PATCH, whose items carry their own If-Match).
func batchOf[In any](ctx context.Context, c *Client, method, path string, items []In, opts []CallOption) ([]BatchResult, error) {
	if len(items) == 0 || len(items) > MaxBatch {
		return nil, fmt.Errorf("registry: a batch holds 1 to %d items, not %d", MaxBatch, len(items))
	}
	path, rawQuery, _ := strings.Cut(path, "?")
	query, err := url.ParseQuery(rawQuery)
	if err != nil {
		return nil, fmt.Errorf("registry: %s: %w", path, err)
	}
	resp, err := c.do(ctx, &call{method: method, path: path, query: query, body: jsonBody(struct {
		Items []In `json:"items"`
	}{items}), keyed: method == http.MethodPost}, opts...)
	if err != nil {
		return nil, err
	}
	var results []BatchResult
	if err := json.Unmarshal(resp.body, &results); err != nil {
		return nil, fmt.Errorf("registry: decoding the answer of %s: %w", path, err)
	}
	if len(results) != len(items) {
		return nil, fmt.Errorf("registry: %s answered %d results for %d items", path, len(results), len(items))
	}
	for _, r := range results {
		if r.Problem != nil && r.Problem.RequestID == "" {
			r.Problem.RequestID = resp.header.Get("X-Request-Id")
		}
	}
	return results, nil
}

// Action documents.

func (c *Client) CreateActionDocument(ctx context.Context, actionID string, in ActionDocumentInput, opts ...CallOption) (*ActionDocument, error) {
	body := struct {
		ActionID string `json:"action_id"`
		ActionDocumentInput
	}{actionID, in}
	return create[ActionDocument](ctx, c, actionDocumentsPath(actionID), body, opts)
}

// ActionDocumentLink is one item of CreateActionDocuments: a document to
// link to the action ActionID names.
type ActionDocumentLink struct {
	ActionID string `json:"action_id"`
	ActionDocumentInput
}

// CreateActionDocuments links each item as CreateActionDocument would, in
// one call (POST /actions/action_documents/batch); items may name different
// actions. Results come in order: Status 201 with the action document's ID,
// or the item's own problem (404, 403, 422, 409 with its existing id) in
// Err. One IdempotencyKey covers the batch.
func (c *Client) CreateActionDocuments(ctx context.Context, items []ActionDocumentLink, opts ...CallOption) ([]BatchResult, error) {
	return batch(ctx, c, "/actions/action_documents/batch", items, opts)
}

func (c *Client) UpdateActionDocument(ctx context.Context, actionID, id string, p Patch, opts ...CallOption) (*ActionDocument, error) {
	return update[ActionDocument](ctx, c, actionDocumentsPath(actionID)+"/"+url.PathEscape(id), p, opts)
}
func (c *Client) DeleteActionDocument(ctx context.Context, actionID, id string, opts ...CallOption) error {
	return c.delete(ctx, actionDocumentsPath(actionID)+"/"+url.PathEscape(id), nil, opts)
}
func actionDocumentsPath(actionID string) string {
	return "/actions/" + url.PathEscape(actionID) + "/action_documents"
}

// Documents.

// UploadFile uploads the file at path as a document of documentType. The
// file streams from disk (and is opened again for a retry); its content
// type comes from its extension, or the registry sniffs it.
func (c *Client) UploadFile(ctx context.Context, documentType, path string, opts ...CallOption) (*Document, error) {
	if _, err := os.Stat(path); err != nil {
		return nil, fmt.Errorf("registry: the document file: %w", err)
	}
	open := func() (io.ReadCloser, error) { return os.Open(path) }
	return c.upload(ctx, documentType, filepath.Base(path), open, opts)
}

// Upload uploads content as a document. A content that is an io.Seeker is
// rewound for a retry; another cannot be sent twice, so its call is not
// retried once sent.
func (c *Client) Upload(ctx context.Context, documentType, filename string, content io.Reader, opts ...CallOption) (*Document, error) {
	sent := false
	open := func() (io.ReadCloser, error) {
		if s, ok := content.(io.Seeker); ok {
			if _, err := s.Seek(0, io.SeekStart); err != nil {
				return nil, err
			}
		} else if sent {
			return nil, fmt.Errorf("registry: the upload of %s cannot be repeated: its content is not seekable", filename)
		}
		sent = true
		return io.NopCloser(content), nil
	}
	return c.upload(ctx, documentType, filename, open, opts)
}

func (c *Client) upload(ctx context.Context, documentType, filename string, open func() (io.ReadCloser, error), opts []CallOption) (*Document, error) {
	body := func() (io.Reader, string, error) {
		file, err := open()
		if err != nil {
			return nil, "", err
		}
		pr, pw := io.Pipe()
		form := multipart.NewWriter(pw)
		go func() {
			defer file.Close()
			err := form.WriteField("document_type", documentType)
			if err == nil {
				h := textproto.MIMEHeader{}
				h.Set("Content-Disposition", mime.FormatMediaType("form-data", map[string]string{"name": "file", "filename": filename}))
				if ct := mime.TypeByExtension(filepath.Ext(filename)); ct != "" {
					h.Set("Content-Type", ct)
				}
				var part io.Writer
				if part, err = form.CreatePart(h); err == nil {
					_, err = io.Copy(part, file)
				}
			}
			if err == nil {
				err = form.Close()
			}
			pw.CloseWithError(err)
		}()
		return pr, form.FormDataContentType(), nil
	}
	return send[Document](ctx, c, &call{method: http.MethodPost, path: "/documents", body: body, keyed: true}, opts)
}

// DocumentActionDocuments lists every action document that links the
// document, in id order (GetDocument embeds the first 100).
func (c *Client) DocumentActionDocuments(ctx context.Context, id string) iter.Seq2[ActionDocument, error] {
	return list[ActionDocument](ctx, c, "/documents/"+url.PathEscape(id)+"/action_documents", nil)
}

// ActionDocumentsOf lists every action document of the action, in id
// order (GetAction embeds the first 100).
func (c *Client) ActionDocumentsOf(ctx context.Context, actionID string) iter.Seq2[ActionDocument, error] {
	return list[ActionDocument](ctx, c, "/actions/"+url.PathEscape(actionID)+"/action_documents", nil)
}

// FindDocumentsBySHA256 lists the documents whose file has the SHA-256
// sum (64 lowercase hex digits), in id order: whether a file was uploaded
// before, and as which documents.
func (c *Client) FindDocumentsBySHA256(ctx context.Context, sum string) iter.Seq2[Document, error] {
	return list[Document](ctx, c, "/documents", Filter{"sha256": sum})
}

func (c *Client) GetDocument(ctx context.Context, id string) (*Document, error) {
	return get[Document](ctx, c, "/documents/"+url.PathEscape(id))
}
func (c *Client) DeleteDocument(ctx context.Context, id string, opts ...CallOption) error {
	return c.delete(ctx, "/documents/"+url.PathEscape(id), nil, opts)
}

// DownloadDocument streams a document's bytes to w as they arrive (none
// of the file is held in memory) and returns how many it wrote. The call is
// retried (429, 503, a failed connection) only until the first byte has
// gone to w; a failure after that is returned, with what was written so
// far counted.
func (c *Client) DownloadDocument(ctx context.Context, id string, w io.Writer) (int64, error) {
	var n int64
	sink := func(body io.Reader) error {
		var err error
		n, err = io.Copy(w, body)
		return err
	}
	_, err := c.do(ctx, &call{method: http.MethodGet, path: "/documents/" + url.PathEscape(id) + "/file", sink: sink})
	return n, err
}

// History lists a resource's change events, oldest first; kind is the
// collection (organizations, people, asset_types, assets, actions,
// documents).
func (c *Client) History(ctx context.Context, collection, id string) iter.Seq2[Event, error] {
	return list[Event](ctx, c, "/"+collection+"/"+url.PathEscape(id)+"/history", nil)
}

func bytesReader(b []byte) io.Reader { return bytes.NewReader(b) }
