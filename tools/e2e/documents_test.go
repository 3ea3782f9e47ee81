package e2e

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"

	"github.com/assetregistry/registry/tools/testkit"
)

// maxUpload is the documents service's size limit in this stack.
const maxUpload = 4 << 20

// stored counts what the documents service holds: rows in its schema and
// objects (and unfinished uploads) in its bucket.
func stored(t *testing.T) (rows, objects int) {
	t.Helper()
	conn, err := pgx.Connect(t.Context(), stack.DatabaseURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	if err := conn.QueryRow(t.Context(), `SELECT (SELECT count(*) FROM documents.documents) + (SELECT count(*) FROM documents.loose_objects)`).
		Scan(&rows); err != nil {
		t.Fatal(err)
	}
	s3, err := minio.New(stack.S3Endpoint, &minio.Options{Creds: credentials.NewStaticV4(stack.S3AccessKey, stack.S3SecretKey, ""), Region: stack.S3Region})
	if err != nil {
		t.Fatal(err)
	}
	for o := range s3.ListObjects(t.Context(), stack.S3Bucket, minio.ListObjectsOptions{Recursive: true}) {
		if o.Err != nil {
			t.Fatal(o.Err)
		}
		objects++
	}
	for u := range s3.ListIncompleteUploads(t.Context(), stack.S3Bucket, "", true) {
		if u.Err != nil {
			t.Fatal(u.Err)
		}
		objects++
	}
	return rows, objects
}

// The documents flow as an integration sees it, through the gateway with
// real tokens: upload, metadata, download whole and in part, revalidate,
// delete, and every way an upload can be refused without leaving anything.
func TestDocumentsThroughGateway(t *testing.T) {
	// Serial: it counts every document row and object in the shared schema and bucket.
	rw, ro := readWrite(t), readOnly(t)
	gw := gateway()
	rowsBefore, objectsBefore := stored(t)

	content := strings.Repeat("inspection report line\n", 200)
	body, ctype := testkit.Multipart(t, testkit.Field("document_type", "expert_control_report"),
		testkit.FormPart{Name: "file", Filename: "kontroll-2026.txt", ContentType: "text/plain; charset=utf-8", Content: content})
	created := testkit.Expect(t, gw.Do(t, "POST", "/documents", rw, body, "Content-Type", ctype), 201)
	doc := created.JSON()
	id := doc["id"].(string)
	if doc["size"] != float64(len(content)) || doc["created_by"] != creds.ClientID || created.Header.Get("Location") != "/documents/"+id {
		t.Fatalf("created: %s", created.Raw)
	}
	got := testkit.Expect(t, gw.Do(t, "GET", "/documents/"+id+"/", ro, nil), 200).JSON()
	if got["sha256"] != doc["sha256"] || got["action_documents"] == nil {
		t.Errorf("metadata: %v", got)
	}
	// Found by its bytes' sum; a sum in upper case is not one.
	sum := doc["sha256"].(string)
	if found := testkit.Expect(t, gw.Do(t, "GET", "/documents?sha256="+sum, ro, nil), 200).List(); len(found) == 0 || found[len(found)-1]["id"] != id {
		t.Errorf("GET /documents?sha256=%s: %v, want %s last", sum, found, id)
	}
	if r := testkit.Expect(t, gw.Do(t, "GET", "/documents?sha256="+strings.ToUpper(sum), ro, nil), 422); strings.Join(r.Fields(), ",") != "sha256" {
		t.Errorf("GET /documents with an upper-case sum names %v, want sha256", r.Fields())
	}
	file := testkit.Expect(t, gw.Do(t, "GET", "/documents/"+id+"/file", ro, nil), 200)
	etag := file.Header.Get("ETag")
	if string(file.Raw) != content || etag != `"`+doc["sha256"].(string)+`"` || file.Header.Get("Content-Type") != "text/plain; charset=utf-8" ||
		!strings.Contains(file.Header.Get("Content-Disposition"), "filename*=UTF-8''kontroll-2026.txt") {
		t.Errorf("download: %v", file.Header)
	}
	part := testkit.Expect(t, gw.Do(t, "GET", "/documents/"+id+"/file", ro, nil, "Range", "bytes=23-45"), 206)
	if string(part.Raw) != content[23:46] {
		t.Errorf("range: %q", part.Raw)
	}
	testkit.Expect(t, gw.Do(t, "GET", "/documents/"+id+"/file", ro, nil, "Range", fmt.Sprintf("bytes=%d-", len(content))), 416)
	testkit.Expect(t, gw.Do(t, "GET", "/documents/"+id+"/file", ro, nil, "If-None-Match", etag), 304)
	testkit.Expect(t, gw.Do(t, "POST", "/documents", ro, body, "Content-Type", ctype), 403)

	refused := []struct {
		name   string
		body   string
		ctype  string
		status int
	}{
		{"JSON body", `{"document_type":"x"}`, "application/json", 415},
		{"form-urlencoded body", "document_type=x", "application/x-www-form-urlencoded", 415},
	}
	for _, p := range []struct {
		name   string
		parts  []testkit.FormPart
		status int
	}{
		{"no file", []testkit.FormPart{testkit.Field("document_type", "report")}, 422},
		{"no document_type", []testkit.FormPart{{Name: "file", Filename: "a.txt", Content: "x"}}, 422},
		{"document_type not a token", []testkit.FormPart{testkit.Field("document_type", "Report!"), {Name: "file", Filename: "a.txt", Content: "x"}}, 422},
		{"two files", []testkit.FormPart{testkit.Field("document_type", "r"), {Name: "file", Filename: "a", Content: "x"}, {Name: "file", Filename: "b", Content: "y"}}, 422},
		{"over the limit", []testkit.FormPart{testkit.Field("document_type", "r"), {Name: "file", Filename: "big.bin", Content: strings.Repeat("x", maxUpload+1)}}, 413},
	} {
		b, c := testkit.Multipart(t, p.parts...)
		refused = append(refused, struct {
			name   string
			body   string
			ctype  string
			status int
		}{p.name, b, c, p.status})
	}
	for _, r := range refused {
		t.Run(r.name, func(t *testing.T) {
			testkit.Expect(t, gw.Do(t, "POST", "/documents", rw, r.body, "Content-Type", r.ctype), r.status)
		})
	}
	abortUpload(t, rw)

	testkit.Expect(t, gw.Do(t, "DELETE", "/documents/"+id, rw, nil), 204)
	testkit.Expect(t, gw.Do(t, "GET", "/documents/"+id+"/file", ro, nil), 404)
	// Nothing any refused or aborted upload sent, nor the deleted
	// document, is left: not a row, not an object, not an unfinished upload.
	deadline := time.Now().Add(10 * time.Second)
	for {
		rows, objects := stored(t)
		if rows == rowsBefore && objects == objectsBefore {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("left behind: %d rows, %d objects (before: %d, %d)", rows-rowsBefore, objects-objectsBefore, rowsBefore, objectsBefore)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// abortUpload sends the start of a large upload through the gateway and
// hangs up.
func abortUpload(t *testing.T, token string) {
	t.Helper()
	conn, err := net.Dial("tcp", strings.TrimPrefix(stack.RegistryURL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	const boundary = "hangup"
	head := "--" + boundary + "\r\nContent-Disposition: form-data; name=\"document_type\"\r\n\r\nreport\r\n" +
		"--" + boundary + "\r\nContent-Disposition: form-data; name=\"file\"; filename=\"big.bin\"\r\n\r\n"
	fmt.Fprintf(conn, "POST /documents HTTP/1.1\r\nHost: registry\r\nAuthorization: Bearer %s\r\n"+
		"Content-Type: multipart/form-data; boundary=%s\r\nContent-Length: %d\r\n\r\n%s", token, boundary, maxUpload, head)
	if _, err := conn.Write(bytes.Repeat([]byte("x"), maxUpload/2)); err != nil {
		t.Fatal(err)
	}
}
