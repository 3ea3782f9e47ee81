package documents

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"

	"github.com/assetregistry/registry/pkg/httpx"
	"github.com/assetregistry/registry/pkg/objectstore"
	"github.com/assetregistry/registry/pkg/servicekit"
	"github.com/assetregistry/registry/tools/testkit"
	"github.com/assetregistry/registry/tools/testkit/servicetest"
)

func typePart(v string) testkit.FormPart { return testkit.Field("document_type", v) }
func filePart(name, ctype, content string) testkit.FormPart {
	return testkit.FormPart{Name: "file", Filename: name, ContentType: ctype, Content: content}
}

// bucketOf opens the service's bucket to look inside.
func bucketOf(t *testing.T, s *servicetest.Service) *objectstore.Bucket {
	t.Helper()
	b, err := objectstore.Open(t.Context(), s.Config.S3)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func countObjects(t *testing.T, b *objectstore.Bucket) int {
	t.Helper()
	n := 0
	for o := range b.Client.ListObjects(t.Context(), b.Name, minio.ListObjectsOptions{Recursive: true}) {
		if o.Err != nil {
			t.Fatal(o.Err)
		}
		n++
	}
	for u := range b.Client.ListIncompleteUploads(t.Context(), b.Name, "", true) {
		if u.Err != nil {
			t.Fatal(u.Err)
		}
		n++
	}
	return n
}

func TestHTTPUploadAndDownload(t *testing.T) {
	s := servicetest.StartParallel(t, Spec())
	content := "%PDF-1.7\nthe control report"
	body, contentType := testkit.Multipart(t, typePart("expert_control_report"), filePart("Rapport Ø 1.pdf", "application/pdf", content))
	created := s.Call(201, "POST", "/documents/", s.RW, body, "Content-Type", contentType)
	doc := created.JSON()
	id := doc["id"].(string)
	if created.Header.Get("Location") != "/documents/"+id || doc["size"] != float64(len(content)) ||
		doc["sha256"] != sha([]byte(content)) || doc["content_type"] != "application/pdf" ||
		doc["filename"] != "Rapport Ø 1.pdf" || doc["created_by"] != "rw-client" {
		t.Fatalf("created: %s (Location %q)", created.Raw, created.Header.Get("Location"))
	}
	got := s.Call(200, "GET", "/documents/"+id, s.RO, nil).JSON()
	if ads, ok := got["action_documents"].([]any); !ok || len(ads) != 0 || got["sha256"] != doc["sha256"] {
		t.Errorf("get: %v", got)
	}

	file := s.Call(200, "GET", "/documents/"+id+"/file", s.RO, nil)
	etag := `"` + sha([]byte(content)) + `"`
	if string(file.Raw) != content || file.Header.Get("Content-Type") != "application/pdf" ||
		file.Header.Get("ETag") != etag || file.Header.Get("Content-Length") != fmt.Sprint(len(content)) ||
		file.Header.Get("Content-Disposition") != `attachment; filename="Rapport _ 1.pdf"; filename*=UTF-8''Rapport%20%C3%98%201.pdf` {
		t.Errorf("file: %q %v", file.Raw, file.Header)
	}
	head := s.Call(200, "HEAD", "/documents/"+id+"/file", s.RO, nil)
	if len(head.Raw) != 0 || head.Header.Get("Content-Length") != fmt.Sprint(len(content)) || head.Header.Get("ETag") != etag {
		t.Errorf("HEAD: %q %v", head.Raw, head.Header)
	}
	s.Call(304, "GET", "/documents/"+id+"/file", s.RO, nil, "If-None-Match", etag)
	s.Call(200, "GET", "/documents/"+id+"/file", s.RO, nil, "If-None-Match", `"other"`)

	part := s.Call(206, "GET", "/documents/"+id+"/file", s.RO, nil, "Range", "bytes=5-7")
	if string(part.Raw) != content[5:8] || part.Header.Get("Content-Range") != fmt.Sprintf("bytes 5-7/%d", len(content)) {
		t.Errorf("range: %q %v", part.Raw, part.Header)
	}
	suffix := s.Call(206, "GET", "/documents/"+id+"/file", s.RO, nil, "Range", "bytes=-6")
	if string(suffix.Raw) != content[len(content)-6:] {
		t.Errorf("suffix range: %q", suffix.Raw)
	}
	unsatisfiable := s.Call(416, "GET", "/documents/"+id+"/file", s.RO, nil, "Range", "bytes=999-")
	if unsatisfiable.Header.Get("Content-Range") != fmt.Sprintf("bytes */%d", len(content)) {
		t.Errorf("416 Content-Range = %q", unsatisfiable.Header.Get("Content-Range"))
	}
	stale := s.Call(200, "GET", "/documents/"+id+"/file", s.RO, nil, "Range", "bytes=5-7", "If-Range", `"stale"`)
	if string(stale.Raw) != content {
		t.Errorf("If-Range with another ETag must get the whole file: %q", stale.Raw)
	}
	s.Call(200, "GET", "/documents/"+id+"/file", s.RO, nil, "Range", "bytes=0-1,4-5")

	s.Call(204, "DELETE", "/documents/"+id, s.RW, nil)
	s.Call(404, "GET", "/documents/"+id, s.RO, nil)
	s.Call(404, "GET", "/documents/"+id+"/file", s.RO, nil)
	if n := countObjects(t, bucketOf(t, s)); n != 0 {
		t.Errorf("%d objects after the delete", n)
	}
}

func TestHTTPUploadErrors(t *testing.T) {
	s := servicetest.StartParallel(t, SpecWith(Config{MaxSize: 1000}, DefaultObjectsConfig))
	tests := []struct {
		name   string
		parts  []testkit.FormPart
		status int
		fields []string
	}{
		{"no file", []testkit.FormPart{typePart("report")}, 422, []string{"file"}},
		{"no document_type", []testkit.FormPart{filePart("a.txt", "text/plain", "x")}, 422, []string{"document_type"}},
		{"document_type not a token", []testkit.FormPart{typePart("Expert Report"), filePart("a.txt", "", "x")}, 422, []string{"document_type"}},
		{"two files", []testkit.FormPart{typePart("r"), filePart("a", "", "x"), filePart("b", "", "y")}, 422, []string{"file"}},
		{"unknown field", []testkit.FormPart{typePart("r"), filePart("a", "", "x"), testkit.Field("title", "t")}, 422, []string{"title"}},
		{"over the limit", []testkit.FormPart{typePart("r"), filePart("a", "", strings.Repeat("x", 1001))}, 413, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			body, contentType := testkit.Multipart(t, tt.parts...)
			r := s.Call(tt.status, "POST", "/documents", s.RW, body, "Content-Type", contentType)
			if tt.fields != nil && strings.Join(r.Fields(), ",") != strings.Join(tt.fields, ",") {
				t.Errorf("fields = %v, want %v", r.Fields(), tt.fields)
			}
		})
	}
	// A filename that the database could not hold (RFC 2231 lets a part
	// percent-encode any byte).
	nul := "--b\r\nContent-Disposition: form-data; name=\"document_type\"\r\n\r\nr\r\n" +
		"--b\r\nContent-Disposition: form-data; name=\"file\"; filename*=UTF-8''a%00b.txt\r\n\r\nx\r\n--b--\r\n"
	r := s.Call(422, "POST", "/documents", s.RW, nul, "Content-Type", "multipart/form-data; boundary=b")
	if strings.Join(r.Fields(), ",") != "file" {
		t.Errorf("U+0000 in the filename: fields = %v", r.Fields())
	}
	at, contentType := testkit.Multipart(t, typePart("r"), filePart("a", "", strings.Repeat("x", 1000)))
	s.Call(201, "POST", "/documents", s.RW, at, "Content-Type", contentType)
	s.Call(415, "POST", "/documents", s.RW, `{"document_type":"r"}`)
	s.Call(415, "POST", "/documents", s.RW, "document_type=r", "Content-Type", "application/x-www-form-urlencoded")
	s.Call(415, "POST", "/documents", s.RW, "x", "Content-Type", "multipart/form-data")
	s.Call(400, "POST", "/documents", s.RW, "not multipart at all", "Content-Type", "multipart/form-data; boundary=zzz")
	if n := countObjects(t, bucketOf(t, s)); n != 1 {
		t.Errorf("%d objects after one good upload and failed ones", n)
	}
}

// A client that sends half a large upload and hangs up leaves no object,
// no unfinished multipart upload and no row.
func TestHTTPAbortedUpload(t *testing.T) {
	s := servicetest.StartParallel(t, SpecWith(Config{MaxSize: 64 << 20}, ObjectsConfig{PartSize: 5 << 20, Threads: 2, UploadTimeout: time.Minute}))
	conn, err := net.Dial("tcp", strings.TrimPrefix(s.Client.BaseURL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	const boundary = "b0undary"
	head := "--" + boundary + "\r\nContent-Disposition: form-data; name=\"document_type\"\r\n\r\nreport\r\n" +
		"--" + boundary + "\r\nContent-Disposition: form-data; name=\"file\"; filename=\"big.bin\"\r\n\r\n"
	fmt.Fprintf(conn, "POST /documents HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\n"+
		"Content-Type: multipart/form-data; boundary=%s\r\nContent-Length: %d\r\n\r\n%s",
		s.RW, boundary, 40<<20, head)
	chunk := bytes.Repeat([]byte("x"), 1<<20)
	for range 12 { // more than two parts' worth reaches storage
		if _, err := conn.Write(chunk); err != nil {
			t.Fatal(err)
		}
	}
	conn.Close()
	bucket := bucketOf(t, s)
	rows := func() int {
		var n int
		if err := s.Built.Store.Pool.QueryRow(context.Background(), `SELECT (SELECT count(*) FROM documents) + (SELECT count(*) FROM loose_objects)`).
			Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	// The service notices the hang-up on its next read; it removes the
	// object first, then the row that lists it as loose.
	deadline := time.Now().Add(10 * time.Second)
	for (countObjects(t, bucket) != 0 || rows() != 0) && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	if n := countObjects(t, bucket); n != 0 {
		t.Errorf("%d objects or unfinished uploads after the client hung up", n)
	}
	if n := rows(); n != 0 {
		t.Errorf("%d rows after the client hung up", n)
	}
}

// A client that stalls mid-upload is cut with a 408 once its pace falls
// below the minimum, and leaves nothing behind.
func TestHTTPStalledUpload(t *testing.T) {
	s := servicetest.StartParallel(t, Spec(), func(c *servicekit.Config) {
		c.Server.Read = httpx.ReadLimits{UploadMinRate: 1000, UploadRateWindow: time.Second}
	})
	conn, err := net.Dial("tcp", strings.TrimPrefix(s.Client.BaseURL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(20 * time.Second)) // a service that never answers fails the test instead of hanging it
	const boundary = "b0undary"
	head := "--" + boundary + "\r\nContent-Disposition: form-data; name=\"document_type\"\r\n\r\nreport\r\n" +
		"--" + boundary + "\r\nContent-Disposition: form-data; name=\"file\"; filename=\"slow.bin\"\r\n\r\n"
	fmt.Fprintf(conn, "POST /documents HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\n"+
		"Content-Type: multipart/form-data; boundary=%s\r\nContent-Length: %d\r\n\r\n%s%s",
		s.RW, boundary, 1<<20, head, strings.Repeat("x", 5000))
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusRequestTimeout || !strings.Contains(string(body), "request-timeout") {
		t.Fatalf("%d: %s", resp.StatusCode, body)
	}
	if n := countObjects(t, bucketOf(t, s)); n != 0 {
		t.Errorf("%d objects or unfinished uploads after the stalled upload", n)
	}
	var rows int
	if err := s.Built.Store.Pool.QueryRow(t.Context(), `SELECT count(*) FROM documents`).Scan(&rows); err != nil || rows != 0 {
		t.Errorf("%d rows after the stalled upload (%v)", rows, err)
	}
}

// A database that goes away is a 503 with Retry-After before any byte of a
// file is stored, and the service recovers by itself.
func TestHTTPDatabaseDown(t *testing.T) {
	t.Parallel()
	body, contentType := testkit.Multipart(t, typePart("report"), filePart("a.txt", "text/plain", "kept"))
	var kept string
	servicetest.DatabaseDown(t, Spec(), servicetest.Outage{
		Before: func(s *servicetest.Service) {
			kept = s.Call(201, "POST", "/documents", s.RW, body, "Content-Type", contentType).JSON()["id"].(string)
		},
		During: []servicetest.Request{
			{Method: "GET", Path: "/documents/0190b0a4-2a2c-7c4e-8a42-1a2b3c4d5e6f"},
			{Method: "POST", Path: "/documents", Body: body, Headers: []string{"Content-Type", contentType}},
		},
		After: func(s *servicetest.Service) {
			s.Call(200, "GET", "/documents/"+kept+"/file", s.RO, nil)
			if n := countObjects(t, bucketOf(t, s)); n != 1 {
				t.Errorf("%d objects after the outage, want the acknowledged one", n)
			}
		},
	})
}

// A database that stops answering (paused: its connections stay open) is
// a 503 within the request timeout for an upload too, with and without an
// Idempotency-Key, though an upload itself may take far longer: its
// database steps must not wait for the database to come back.
func TestHTTPDatabasePaused(t *testing.T) {
	t.Parallel()
	body, contentType := testkit.Multipart(t, typePart("report"), filePart("a.txt", "text/plain", "paused"))
	servicetest.DatabasePaused(t, Spec(), []servicetest.Request{
		{Method: "POST", Path: "/documents", Body: body, Headers: []string{"Content-Type", contentType}},
		{Method: "POST", Path: "/documents", Body: body, Headers: []string{"Content-Type", contentType, "Idempotency-Key", "paused-1"}},
		{Method: "GET", Path: "/documents/0190b0a4-2a2c-7c4e-8a42-1a2b3c4d5e6f"},
	}, func(s *servicetest.Service) {
		s.Call(201, "POST", "/documents", s.RW, body, "Content-Type", contentType, "Idempotency-Key", "paused-2")
	})
}

// A database that stops answering in the middle of an upload (after the
// object's key was claimed, before the document is recorded) is a 503
// once the recording step's bound (the request timeout) runs out, with
// and without an Idempotency-Key: neither removing the object nor freeing
// the key may add waits of their own on the stopped database (the fault
// suite saw such an upload answer after 10 s with a 6 s timeout). The
// client holds back the body's last bytes until the service has claimed
// the key, pauses the database, then sends them.
//
// Serial: its bound leaves 1.5 s past the timeout for the rest of the
// body and the answer, too little to share two cores with tests beside it.
func TestHTTPDatabasePausedMidUpload(t *testing.T) {
	p := servicetest.StartPausable(t, Spec())
	body, contentType := testkit.Multipart(t, typePart("report"), filePart("a.bin", "application/octet-stream", strings.Repeat("x", 64<<10)))
	// The newest key listed as loose: keys are UUIDv7, so a claim makes it
	// grow, whatever the removals of earlier uploads do meanwhile.
	newestLoose := func() (key string) {
		if err := p.Built.Store.Pool.QueryRow(t.Context(), `SELECT coalesce(max(key), '') FROM loose_objects`).Scan(&key); err != nil {
			t.Error(err)
		}
		return key
	}
	for _, key := range []string{"", "mid-upload"} {
		headers := []string{"Content-Type", contentType}
		if key != "" {
			headers = append(headers, "Idempotency-Key", key)
		}
		before := newestLoose()
		var paused time.Time
		split := len(body) - 100
		r := testkit.Expect(t, p.Bounded.Do(t, "POST", "/documents", p.RW, &holdBack{
			head: strings.NewReader(body[:split]), tail: strings.NewReader(body[split:]),
			between: func() {
				for deadline := time.Now().Add(10 * time.Second); newestLoose() <= before; time.Sleep(10 * time.Millisecond) {
					if time.Now().After(deadline) {
						t.Error("the service never claimed the upload's key")
						return
					}
				}
				p.Pause(t)
				paused = time.Now()
			},
		}, headers...), 503)
		// The recording step's bound, and a margin for the rest of the
		// body and the answer; a cleanup that waited on the database adds
		// the pool's acquire timeout (2 s) at least.
		if took, bound := time.Since(paused), p.Config.Timeout+1500*time.Millisecond; took > bound {
			t.Errorf("key %q: answered %s after the pause, over %s", key, took.Round(10*time.Millisecond), bound)
		}
		if r.Header.Get("Retry-After") == "" {
			t.Error("503 without Retry-After")
		}
		p.Resume(t)
	}
	small, smallType := testkit.Multipart(t, typePart("report"), filePart("a.txt", "text/plain", "after"))
	p.Call(201, "POST", "/documents", p.RW, small, "Content-Type", smallType, "Idempotency-Key", "mid-upload-after")
}

// holdBack reads head, calls between once, then reads tail.
type holdBack struct {
	head, tail io.Reader
	between    func()
	done       bool
}

func (h *holdBack) Read(b []byte) (int, error) {
	if !h.done {
		n, err := h.head.Read(b)
		if !errors.Is(err, io.EOF) {
			return n, err
		}
		h.done = true
		h.between()
		if n > 0 {
			return n, nil
		}
	}
	return h.tail.Read(b)
}

// Object storage that goes away is a 503 with Retry-After for uploads and
// downloads, /readyz says so, nothing is half-written, and the service
// recovers when storage is back.
func TestHTTPObjectStorageDown(t *testing.T) {
	t.Parallel()
	dir := testkit.ServerDir(t)
	start := func(port int) *testkit.Minio { return testkit.StartMinio(t, filepath.Join(dir, "minio"), port) }
	m := start(0)
	issuer := testkit.NewIssuer(t, servicetest.Audience)
	cfg := servicetest.Config(t, Spec(), issuer)
	cfg.S3 = objectstore.Config{Endpoint: m.URL, Bucket: "documents", Region: m.Region, AccessKey: m.AccessKey,
		SecretKey: m.SecretKey, StartupWait: time.Second}
	s := servicetest.StartWith(t, Spec(), cfg, issuer)
	body, contentType := testkit.Multipart(t, typePart("report"), filePart("a.txt", "text/plain", "before"))
	id := s.Call(201, "POST", "/documents", s.RW, body, "Content-Type", contentType).JSON()["id"].(string)

	if err := m.Stop(); err != nil {
		t.Fatal(err)
	}
	r := s.Call(503, "POST", "/documents", s.RW, body, "Content-Type", contentType)
	if r.Header.Get("Retry-After") == "" {
		t.Error("503 without Retry-After")
	}
	s.Call(503, "GET", "/documents/"+id+"/file", s.RO, nil)
	probe := testkit.Client{BaseURL: s.Client.BaseURL}.Do(t, "GET", "/readyz", "", nil)
	if probe.Status != 503 || !strings.Contains(string(probe.Raw), `"s3":"unavailable"`) {
		t.Errorf("readyz = %d %s while storage is down", probe.Status, probe.Raw)
	}
	var rows int
	if err := s.Built.Store.Pool.QueryRow(t.Context(), `SELECT count(*) FROM documents`).Scan(&rows); err != nil || rows != 1 {
		t.Errorf("%d documents after the failed upload (%v)", rows, err)
	}

	start(m.Port)
	s.Call(201, "POST", "/documents", s.RW, body, "Content-Type", contentType)
	if got := s.Call(200, "GET", "/documents/"+id+"/file", s.RO, nil); string(got.Raw) != "before" {
		t.Errorf("after recovery: %q", got.Raw)
	}
}

// An upload retried with its Idempotency-Key stores the file once; a
// retry is recognised whatever its multipart boundary, and another file
// under the same key is a 422.
func TestHTTPIdempotentUpload(t *testing.T) {
	s := servicetest.StartParallel(t, Spec())
	body, ctype := testkit.Multipart(t, typePart("report"), filePart("a.txt", "text/plain", "the same bytes"))
	first := s.Call(201, "POST", "/documents", s.RW, body, "Content-Type", ctype, "Idempotency-Key", "up-1")
	retry, retryType := testkit.Multipart(t, typePart("report"), filePart("a.txt", "text/plain", "the same bytes"))
	if retryType == ctype {
		t.Fatal("the retry should have another boundary")
	}
	again := s.Call(201, "POST", "/documents", s.RW, retry, "Content-Type", retryType, "Idempotency-Key", "up-1")
	if again.JSON()["id"] != first.JSON()["id"] || again.Header.Get("Idempotent-Replayed") != "true" {
		t.Errorf("replay: %s", again.Raw)
	}
	other, otherType := testkit.Multipart(t, typePart("report"), filePart("a.txt", "text/plain", "other bytes"))
	s.Call(422, "POST", "/documents", s.RW, other, "Content-Type", otherType, "Idempotency-Key", "up-1")
	if n := countObjects(t, bucketOf(t, s)); n != 1 {
		t.Errorf("%d objects, want the one upload", n)
	}
}

// The document and the common error rows, as every service checks them.
func TestConformance(t *testing.T) {
	t.Parallel()
	servicetest.Conformance(t, Spec(), ownership)
}

// Only the client that uploaded a document (or an admin) deletes it.
func ownership(t *testing.T, s *servicetest.Service) []servicetest.OwnerCase {
	body, ctype := testkit.Multipart(t, typePart("report"), filePart("a.txt", "text/plain", "owned bytes"))
	document := "/documents/" + s.Call(201, "POST", "/documents", s.RW, body, "Content-Type", ctype).JSON()["id"].(string)
	return []servicetest.OwnerCase{
		{Name: "delete document", Method: "DELETE", Path: document, Read: document, AdminStatus: 204},
	}
}

// GET /documents?sha256=: the documents with those bytes, in id order,
// paged; a sum that is not 64 lowercase hex digits is a 422 naming it.
func TestFindBySHA256(t *testing.T) {
	s := servicetest.StartParallel(t, Spec())
	upload := func(content string) string {
		body, ctype := testkit.Multipart(t, typePart("expert_control_report"), filePart("r.txt", "text/plain", content))
		return s.Call(201, "POST", "/documents", s.RW, body, "Content-Type", ctype).JSON()["id"].(string)
	}
	same := []string{upload("the same bytes"), upload("the same bytes"), upload("the same bytes")}
	other := upload("other bytes")
	hexSum := fmt.Sprintf("%x", sha256.Sum256([]byte("the same bytes")))

	// Two pages of two: the second found by the first's Link, the last
	// with none.
	first := s.Call(200, "GET", "/documents?sha256="+hexSum+"&limit=2", s.RO, nil)
	link := first.Header.Get("Link")
	next := strings.TrimSuffix(strings.TrimPrefix(link, "<"), `>; rel="next"`)
	second := s.Call(200, "GET", next, s.RO, nil)
	if last := second.Header.Get("Link"); last != "" {
		t.Errorf("the last page links to %s", last)
	}
	var got []string
	for _, d := range append(first.List(), second.List()...) {
		if d["sha256"] != hexSum {
			t.Errorf("a document of sum %v among those of %s", d["sha256"], hexSum)
		}
		got = append(got, d["id"].(string))
	}
	if !slices.Equal(got, same) {
		t.Errorf("found %v, want %v (in id order, not %s)", got, same, other)
	}
	if l := s.Call(200, "GET", fmt.Sprintf("/documents?sha256=%x", sha256.Sum256([]byte("nothing uploaded"))), s.RO, nil).List(); len(l) != 0 {
		t.Errorf("a sum nobody uploaded found %v", l)
	}
	for _, bad := range []string{"", "?sha256=" + strings.ToUpper(hexSum), "?sha256=" + hexSum[:63], "?sha256=" + hexSum + "0", "?sha256=" + hexSum[:63] + "g"} {
		r := s.Call(422, "GET", "/documents"+bad, s.RO, nil)
		if !slices.Equal(r.Fields(), []string{"sha256"}) {
			t.Errorf("GET /documents%s: the problem names %v, want sha256", bad, r.Fields())
		}
	}
}
