package documents

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"maps"
	"math/rand/v2"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/go-kit/log"
	"github.com/google/uuid"
	"github.com/minio/minio-go/v7"

	"github.com/assetregistry/registry/pkg/apperr"
	"github.com/assetregistry/registry/pkg/model"
	"github.com/assetregistry/registry/pkg/objectstore"
	"github.com/assetregistry/registry/pkg/refs"
	"github.com/assetregistry/registry/tools/testkit"
	"github.com/assetregistry/registry/tools/testkit/servicetest"
)

type fixture struct {
	svc      Service
	store    *Store
	registry *refs.Registry
	objects  *Objects
	bucket   *objectstore.Bucket
	ctx      context.Context
	peers    map[string]*servicetest.StandIn // the services that reference documents
	by       model.Caller                    // the uploader
	g        model.Guard                     // what deletes obey: no route's rule
}

// The tests talk to the real PostgreSQL and MinIO the harness provides.
func TestMain(m *testing.M) { os.Exit(testkit.Main(m)) }

// newFixture is the service as production wires it, over a fresh schema of
// the real PostgreSQL and a fresh bucket of the real MinIO. Small parts
// make a few MiB take the multipart path.
func newFixture(t *testing.T, maxSize int64) fixture {
	t.Helper()
	st := servicetest.Store(t, Spec())
	s3 := testkit.S3(t)
	bucket, err := objectstore.Open(t.Context(), objectstore.Config{Endpoint: "http://" + s3.Endpoint, Bucket: s3.Bucket,
		Region: s3.Region, AccessKey: s3.AccessKey, SecretKey: s3.SecretKey})
	if err != nil {
		t.Fatal(err)
	}
	peers, standIns := servicetest.StandInClients(t, "documents")
	registry := refs.New("documents", st, peers)
	store := NewStore(st, log.NewNopLogger())
	objects := NewObjects(bucket, ObjectsConfig{PartSize: 5 << 20, Threads: 2, UploadTimeout: time.Minute})
	none := func(context.Context, uuid.UUID) ([]ActionDocument, error) { return []ActionDocument{}, nil }
	return fixture{
		svc: NewService(store, registry, objects, none, Tenancy{}, Config{MaxSize: maxSize}), store: store, registry: registry, objects: objects, bucket: bucket,
		ctx: t.Context(), peers: standIns,
		by: servicetest.Caller("test-client"), g: servicetest.Guard("test-client"),
	}
}

// form is an upload as the transport hands it over: parts in order.
type form struct{ parts []Part }

func (f *form) Next() (Part, error) {
	if len(f.parts) == 0 {
		return Part{}, io.EOF
	}
	p := f.parts[0]
	f.parts = f.parts[1:]
	return p, nil
}

func field(name, value string) Part { return Part{Name: name, Body: strings.NewReader(value)} }

func file(name string, body io.Reader, contentType string) Part {
	return Part{Name: "file", Filename: name, ContentType: contentType, Body: body}
}

// upload stores one file of the document type as the fixture's uploader;
// any error fails the test, for the tests whose subject comes after the
// upload.
func (f fixture) upload(t *testing.T, documentType, name, body, contentType string) DocumentDetail {
	t.Helper()
	doc, err := f.svc.Upload(f.ctx, f.by, &form{parts: []Part{field("document_type", documentType), file(name, strings.NewReader(body), contentType)}})
	if err != nil {
		t.Fatal(err)
	}
	return doc
}

// objectsIn lists the keys in the bucket, unfinished uploads included.
func (f fixture) objectsIn(t *testing.T) []string {
	t.Helper()
	var keys []string
	for o := range f.bucket.Client.ListObjects(t.Context(), f.bucket.Name, minio.ListObjectsOptions{Recursive: true}) {
		if o.Err != nil {
			t.Fatal(o.Err)
		}
		keys = append(keys, o.Key)
	}
	for u := range f.bucket.Client.ListIncompleteUploads(t.Context(), f.bucket.Name, "", true) {
		if u.Err != nil {
			t.Fatal(u.Err)
		}
		keys = append(keys, "unfinished:"+u.Key)
	}
	return keys
}

func (f fixture) rows(t *testing.T) (documents, loose int) {
	t.Helper()
	if err := f.store.Pool.QueryRow(t.Context(), `SELECT (SELECT count(*) FROM documents), (SELECT count(*) FROM loose_objects)`).
		Scan(&documents, &loose); err != nil {
		t.Fatal(err)
	}
	return documents, loose
}

func randomBytes(n int) []byte {
	b := make([]byte, n)
	r := rand.New(rand.NewPCG(uint64(n), 7))
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

func sha(b []byte) string { s := sha256.Sum256(b); return hex.EncodeToString(s[:]) }

func TestUploadStoresWhatStreamsIn(t *testing.T) {
	t.Parallel()
	f := newFixture(t, 64<<20)
	for _, tt := range []struct {
		name        string
		content     []byte
		contentType string
		wantType    string
		order       string
	}{
		{"small, typed by its part", []byte("%PDF-1.7 a report"), "application/pdf", "application/pdf", "type first"},
		{"small, sniffed", []byte("\x89PNG\r\n\x1a\n0000"), "", "image/png", "file first"},
		{"empty", []byte{}, "text/plain", "text/plain", "type first"},
		{"several parts", randomBytes(12<<20 + 123), "application/octet-stream", "application/octet-stream", "file first"},
		// The fixture's parts are 5 MiB: a file of one part goes up in one
		// request, a byte more in two parts.
		{"exactly one part", randomBytes(5 << 20), "application/octet-stream", "application/octet-stream", "type first"},
		{"one part and a byte", randomBytes(5<<20 + 1), "application/octet-stream", "application/octet-stream", "type first"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			parts := []Part{field("document_type", "expert_control_report"), file("r.bin", bytes.NewReader(tt.content), tt.contentType)}
			if tt.order == "file first" {
				parts[0], parts[1] = parts[1], parts[0]
			}
			doc, err := f.svc.Upload(f.ctx, f.by, &form{parts: parts})
			if err != nil {
				t.Fatal(err)
			}
			if doc.Size != int64(len(tt.content)) || doc.SHA256 != sha(tt.content) || doc.ContentType != tt.wantType ||
				*doc.Filename != "r.bin" || doc.CreatedBy != "test-client" || doc.DocumentType != "expert_control_report" {
				t.Errorf("document = %+v", doc.Document)
			}
			body, err := f.svc.Read(f.ctx, doc.Document, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer body.Close()
			if got, _ := io.ReadAll(body); !bytes.Equal(got, tt.content) {
				t.Errorf("read back %d bytes, want %d", len(got), len(tt.content))
			}
			if len(tt.content) > 10 {
				part, err := f.svc.Read(f.ctx, doc.Document, &ByteRange{First: 3, Last: 9})
				if err != nil {
					t.Fatal(err)
				}
				got, _ := io.ReadAll(part)
				part.Close()
				if !bytes.Equal(got, tt.content[3:10]) {
					t.Errorf("range read %q", got)
				}
			}
		})
	}
	if _, loose := f.rows(t); loose != 0 {
		t.Errorf("%d objects still loose after committed uploads", loose)
	}
}

// failingReader is a client that goes away after n bytes.
type failingReader struct {
	r io.Reader
	n int
}

func (r *failingReader) Read(p []byte) (int, error) {
	if r.n <= 0 {
		return 0, errors.New("connection reset by peer")
	}
	if len(p) > r.n {
		p = p[:r.n]
	}
	n, err := r.r.Read(p)
	r.n -= n
	return n, err
}

// Every failed upload leaves neither an object (nor an unfinished
// multipart upload) nor a row.
func TestFailedUploadsLeaveNothing(t *testing.T) {
	t.Parallel()
	big := randomBytes(11 << 20)
	tests := []struct {
		name  string
		parts []Part
		kind  apperr.Kind
	}{
		{"over the limit by a byte", []Part{field("document_type", "report"), file("x", bytes.NewReader(big[:10<<20+1]), "")}, apperr.KindTooLarge},
		{"over the limit, in parts", []Part{field("document_type", "report"), file("x", bytes.NewReader(big), "")}, apperr.KindTooLarge},
		{"client gone mid-file", []Part{field("document_type", "report"), file("x", &failingReader{r: bytes.NewReader(big), n: 7 << 20}, "")}, apperr.KindBadRequest},
		{"bad type after the file", []Part{file("x", bytes.NewReader(big[:3<<20]), ""), field("document_type", "Expert Report")}, apperr.KindInvalid},
		{"no type", []Part{file("x", bytes.NewReader(big[:100]), "")}, apperr.KindInvalid},
		{"no file", []Part{field("document_type", "report")}, apperr.KindInvalid},
		{"two files", []Part{field("document_type", "report"), file("a", bytes.NewReader(big[:10]), ""), file("b", bytes.NewReader(big[:10]), "")}, apperr.KindInvalid},
		{"unknown part", []Part{field("document_type", "report"), file("a", bytes.NewReader(big[:10]), ""), field("title", "x")}, apperr.KindInvalid},
		{"bad part type", []Part{field("document_type", "report"), file("a", bytes.NewReader(big[:10]), "not a type")}, apperr.KindInvalid},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel() // each row its own schema and bucket; the large ones wait on MinIO
			f := newFixture(t, 10<<20)
			_, err := f.svc.Upload(f.ctx, f.by, &form{parts: tt.parts})
			if !apperr.Is(err, tt.kind) {
				t.Fatalf("err = %v, want kind %v", err, tt.kind)
			}
			if keys := f.objectsIn(t); len(keys) != 0 {
				t.Errorf("objects left: %v", keys)
			}
			if docs, loose := f.rows(t); docs != 0 || loose != 0 {
				t.Errorf("rows left: %d documents, %d loose", docs, loose)
			}
		})
	}
}

// A crash between storing the bytes and committing the row leaves an
// object listed as loose; the sweeper removes it once its time is up, and
// leaves uploads still in progress alone.
func TestSweeperRemovesWhatACrashLeft(t *testing.T) {
	t.Parallel()
	f := newFixture(t, 10<<20)
	crashed, err := f.store.ClaimKey(f.ctx, time.Now().Add(-time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.objects.Put(f.ctx, crashed.String(), bytes.NewReader(randomBytes(2000)), "", 1<<20); err != nil {
		t.Fatal(err)
	}
	inProgress, err := f.store.ClaimKey(f.ctx, time.Now().Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.objects.Put(f.ctx, inProgress.String(), bytes.NewReader(randomBytes(2000)), "", 1<<20); err != nil {
		t.Fatal(err)
	}
	kept := f.upload(t, "report", "k", "kept", "")
	n, err := f.store.Sweep(f.ctx, f.objects)
	if err != nil || n != 1 {
		t.Fatalf("swept %d, %v", n, err)
	}
	keys := f.objectsIn(t)
	if len(keys) != 2 || !contains(keys, inProgress.String()) || !contains(keys, kept.ID.String()) {
		t.Errorf("after the sweep: %v", keys)
	}
}

func contains(keys []string, key string) bool {
	for _, k := range keys {
		if k == key {
			return true
		}
	}
	return false
}

func TestDeleteRemovesRowAndObject(t *testing.T) {
	t.Parallel()
	f := newFixture(t, 10<<20)
	doc := f.upload(t, "report", "k", "bytes", "")
	if err := f.svc.Delete(f.ctx, f.g, doc.ID); err != nil {
		t.Fatal(err)
	}
	if keys := f.objectsIn(t); len(keys) != 0 {
		t.Errorf("objects left: %v", keys)
	}
	if docs, loose := f.rows(t); docs != 0 || loose != 0 {
		t.Errorf("rows left: %d documents, %d loose", docs, loose)
	}
	if _, err := f.svc.Get(f.ctx, f.by, doc.ID); !apperr.Is(err, apperr.KindNotFound) {
		t.Errorf("get after delete: %v", err)
	}
	if err := f.svc.Delete(f.ctx, f.g, doc.ID); !apperr.Is(err, apperr.KindNotFound) {
		t.Errorf("delete again: %v", err)
	}
}

// The reference protocol: a referrer checking a document learns its
// metadata (an asset type shows the documents it attaches, and takes only
// an image as its thumbnail), and a document something points at stays.
func TestReferencesToDocuments(t *testing.T) {
	t.Parallel()
	f := newFixture(t, 10<<20)
	doc := f.upload(t, "photo", "front.png", "\x89PNG\r\n\x1a\n0000", "")
	found, err := f.registry.Exists(f.ctx, "document", []uuid.UUID{doc.ID, uuid.New()})
	if err != nil {
		t.Fatal(err)
	}
	want := refs.Attrs{"content_type": "image/png", "document_type": "photo", "filename": "front.png", "size": "12",
		"sha256": doc.SHA256, "created_at": doc.CreatedAt.UTC().Format(time.RFC3339Nano), "created_by": "test-client",
		"sniffed_type": "image/png"}
	if len(found) != 1 || !maps.Equal(found[doc.ID], want) {
		t.Errorf("exists = %v, want %v", found, want)
	}
	f.peers["assets"].Refer("document", doc.ID, refs.Ref{Kind: "asset_type", ID: uuid.New(), Label: "Acme X1, thumbnail"})
	err = f.svc.Delete(f.ctx, f.g, doc.ID)
	var e *apperr.Error
	if !errors.As(err, &e) || e.Code != "still-referenced" || !strings.Contains(e.Detail, "Acme X1, thumbnail") {
		t.Fatalf("deleting a referenced document: %v", err)
	}
	if _, err := f.svc.Get(f.ctx, f.by, doc.ID); err != nil {
		t.Errorf("the refused delete removed the document: %v", err)
	}
}

// A database that fails after the bytes are stored loses the upload, and
// leaves no object behind.
func TestDatabaseFailureAfterTheBytesLeavesNoObject(t *testing.T) {
	t.Parallel()
	f := newFixture(t, 10<<20)
	// The row cannot be written: its table is gone (a database that
	// refuses writes, as far as this upload can tell).
	if _, err := f.store.Pool.Exec(t.Context(), `ALTER TABLE documents RENAME TO documents_away`); err != nil {
		t.Fatal(err)
	}
	_, err := f.svc.Upload(f.ctx, f.by, &form{parts: []Part{field("document_type", "report"), file("k", bytes.NewReader(randomBytes(3<<20)), "")}})
	if err == nil {
		t.Fatal("the upload succeeded without its row")
	}
	if keys := f.objectsIn(t); len(keys) != 0 {
		t.Errorf("objects left: %v", keys)
	}
}

// A file's sniffed type is what its bytes are, whatever the uploader
// declared: an SVG declared image/svg+xml is XML to its peers.
func TestSniffedTypeIgnoresTheDeclaredOne(t *testing.T) {
	t.Parallel()
	f := newFixture(t, 10<<20)
	svg := `<svg xmlns="http://www.w3.org/2000/svg"><script>alert(1)</script></svg>`
	doc := f.upload(t, "photo", "x.svg", svg, "image/svg+xml")
	found, err := f.registry.Exists(f.ctx, "document", []uuid.UUID{doc.ID})
	if err != nil {
		t.Fatal(err)
	}
	if attrs := found[doc.ID]; attrs["content_type"] != "image/svg+xml" || strings.HasPrefix(attrs["sniffed_type"], "image/") {
		t.Errorf("attrs = %v", attrs)
	}
}
