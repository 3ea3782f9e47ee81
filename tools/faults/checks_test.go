//go:build faults

package faults

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
)

// admin is the launcher's connection, straight to PostgreSQL (not through
// the proxy), for counting what the services wrote.
func admin(t *testing.T) *pgx.Conn {
	t.Helper()
	conn, err := pgx.Connect(t.Context(), stack.DatabaseURL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	return conn
}

// countRows runs a count on conn (admin's; one for all of a check's
// counts, not a connection each).
func countRows(t *testing.T, conn *pgx.Conn, query string, args ...any) int {
	t.Helper()
	var n int
	if err := conn.QueryRow(t.Context(), query, args...).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// waitRecovered calls until a create, a read, a find, an upload, an asset
// type, an asset and an action on it all succeed, for 90 s at most.
func waitRecovered(t *testing.T, c *client, tag string) bool {
	t.Helper()
	deadline := time.Now().Add(90 * time.Second)
	for n := 0; time.Now().Before(deadline); n++ {
		name := fmt.Sprintf("probe-%s-%d", tag, n)
		if probe(c, name) {
			return true
		}
		time.Sleep(500 * time.Millisecond)
	}
	return false
}

// probe makes one call of each kind the load makes. Its last, an action on
// the asset it just created, makes the actions service ask the assets
// service: the registry has not recovered while a peer breaker a fault
// opened still refuses (the next fault's load would meet it).
func probe(c *client, name string) bool {
	ctx := context.Background()
	org := c.do(ctx, orgCreate(name, "k-"+name))
	if !org.ok() {
		return false
	}
	body, _ := json.Marshal(map[string]string{"registration_number": name})
	for _, r := range []request{
		{method: "GET", path: "/organizations/" + org.id},
		{method: "POST", path: "/organizations/find", body: body, contentType: "application/json"},
		upload(name, "k-"+name, 1024),
	} {
		if !c.do(ctx, r).ok() {
			return false
		}
	}
	created := func(path, key string, fields map[string]string) string {
		body, _ := json.Marshal(fields)
		a := c.do(ctx, request{method: "POST", path: path, body: body, contentType: "application/json", key: key, create: true})
		if !a.ok() {
			return ""
		}
		return a.id
	}
	assetType := created("/asset_types", "k-"+name, map[string]string{"brand": "Probe", "model": name})
	if assetType == "" {
		return false
	}
	asset := created("/assets", "k-asset-"+name, map[string]string{"serial_number": name, "asset_type_id": assetType})
	if asset == "" {
		return false
	}
	return created("/actions", "k-action-"+name, map[string]string{"asset_id": asset, "action_type": "repair", "performed_at": "2025-01-01",
		"source_system": "probe", "source_reference": name}) != ""
}

// checkDocuments waits for the sweeper to have removed what failed
// uploads left (loose_objects empty), then checks that the bucket and the
// rows agree: every row has its object, every object its row, no upload
// is left unfinished, and the fault's rows add up: each acknowledged
// upload is there, and nothing else but uploads whose answer was lost.
func checkDocuments(t *testing.T, tag string, calls, acked []call) (halfWritten int) {
	t.Helper()
	conn := admin(t)
	deadline := time.Now().Add(uploadTimeout + time.Minute)
	for countRows(t, conn, "SELECT count(*) FROM documents.loose_objects") > 0 {
		if time.Now().After(deadline) {
			t.Errorf("loose objects still listed %s after the fault", uploadTimeout+time.Minute)
			break
		}
		time.Sleep(500 * time.Millisecond)
	}
	rows := map[string]bool{}
	ids, err := conn.Query(t.Context(), "SELECT id::text FROM documents.documents")
	if err != nil {
		t.Fatal(err)
	}
	for ids.Next() {
		var id string
		if err := ids.Scan(&id); err != nil {
			t.Fatal(err)
		}
		rows[id] = true
	}
	if err := ids.Err(); err != nil {
		t.Fatal(err)
	}
	s3, err := minio.New(stack.S3Endpoint, &minio.Options{Creds: credentials.NewStaticV4(stack.S3AccessKey, stack.S3SecretKey, ""), Region: stack.S3Region})
	if err != nil {
		t.Fatal(err)
	}
	objects := map[string]bool{}
	for o := range s3.ListObjects(t.Context(), stack.S3Bucket, minio.ListObjectsOptions{Recursive: true}) {
		if o.Err != nil {
			t.Fatal(o.Err)
		}
		objects[o.Key] = true
		if !rows[o.Key] {
			halfWritten++
			t.Errorf("object %s has no document row", o.Key)
		}
	}
	for id := range rows {
		if !objects[id] {
			halfWritten++
			t.Errorf("document %s has no object", id)
		}
	}
	for u := range s3.ListIncompleteUploads(t.Context(), stack.S3Bucket, "", true) {
		if u.Err != nil {
			t.Fatal(u.Err)
		}
		halfWritten++
		t.Errorf("an unfinished multipart upload is left: %s", u.Key)
	}
	checkCount(t, "documents", countRows(t, conn, "SELECT count(*) FROM documents.documents WHERE filename LIKE $1", tag+"-%"), "/documents", calls, acked)
	return halfWritten
}

// checkOrganizations checks that the fault's organizations add up.
func checkOrganizations(t *testing.T, tag string, calls, acked []call) {
	t.Helper()
	checkCount(t, "organizations", countRows(t, admin(t), "SELECT count(*) FROM parties.organizations WHERE registration_number LIKE $1", tag+"-%"),
		"/organizations", calls, acked)
}

// checkCount holds what is stored for one kind of create to what the load
// knows: at least every acknowledged create, at most those and the creates
// without a key whose answer never came or was a failure (they may have
// committed all the same; that is what keys are for).
func checkCount(t *testing.T, what string, stored int, path string, calls, acked []call) {
	t.Helper()
	ok, unknown := 0, 0
	for _, a := range acked {
		if a.path == path {
			ok++
		}
	}
	for _, c := range calls {
		if c.path == path && c.create && c.key == "" && !c.ok() {
			unknown++
		}
	}
	if stored < ok || stored > ok+unknown {
		t.Errorf("%s: %d stored, want between %d acknowledged and %d (with %d creates of unknown outcome)", what, stored, ok, ok+unknown, unknown)
	}
}

// misbehavingClients run beside the load: bodies and headers over their
// limits, a JSON body and an upload that stall, connections that dribble
// their headers. Each must get its problem (413, 431, 408) and none may
// slow the load into failures.
func misbehavingClients(t *testing.T) []call {
	t.Helper()
	c := newClient(t)
	ctx := context.Background()
	var calls []call
	expect := func(r request, a answer, want int) {
		calls = append(calls, call{r, a})
		if a.status != want || !a.problem {
			t.Errorf("%s: %d (problem %v, %v), want a %d problem", r.op, a.status, a.problem, a.err, want)
		}
	}
	big := request{op: "JSON body over 1 MiB", method: "POST", path: "/organizations", contentType: "application/json",
		body: []byte(`{"name":"` + strings.Repeat("x", 2<<20) + `","registration_number":"big","organization_type":"private"}`)}
	expect(big, c.do(ctx, big), 413)
	over := upload("oversized", "", maxUpload+1)
	over.op = "upload over the limit"
	expect(over, c.do(ctx, over), 413)
	header := request{op: "header over 64 KiB", method: "GET", path: "/organizations"}
	expect(header, headerOver(c), 431)

	// Connections that send their request line and headers a byte at a
	// time take no worker from anyone.
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for range 8 {
		wg.Go(func() { dribbleHeaders(stop) })
	}
	// The two stalls each wait for the server's deadline: side by side,
	// on their own connections.
	var stalled, slow answer
	var stalls sync.WaitGroup
	stalls.Go(func() {
		stalled = stall(c, "POST /organizations", "application/json", `{"name":"stalled","registration_number":"stalled",`, 200)
	})
	stalls.Go(func() {
		slow = stall(c, "POST /documents", "multipart/form-data; boundary=b",
			"--b\r\nContent-Disposition: form-data; name=\"document_type\"\r\n\r\nr\r\n--b\r\nContent-Disposition: form-data; name=\"file\"; filename=\"slow.txt\"\r\n\r\n", 1<<20)
	})
	stalls.Wait()
	expect(request{op: "JSON body that stalls", method: "POST", path: "/organizations"}, stalled, 408)
	expect(request{op: "upload below the minimum rate", method: "POST", path: "/documents"}, slow, 408)
	close(stop)
	wg.Wait()
	return calls
}

// headerOver sends a header field past http.max-header-bytes.
func headerOver(c *client) answer {
	req, _ := http.NewRequest("GET", stack.RegistryURL+"/organizations", nil)
	req.Header.Set("Authorization", "Bearer "+c.token)
	req.Header.Set("X-Padding", strings.Repeat("p", 70<<10))
	resp, err := c.http.Do(req)
	if err != nil {
		return answer{err: err}
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	return answer{status: resp.StatusCode, problem: strings.HasPrefix(resp.Header.Get("Content-Type"), "application/problem+json")}
}

// stall sends a request whose body announces length bytes, sends the
// first part, then nothing, and reads the answer: the server must give up
// on it (408) within its body deadline.
func stall(c *client, line, contentType, first string, length int) answer {
	conn, err := net.Dial("tcp", strings.TrimPrefix(stack.RegistryURL, "http://"))
	if err != nil {
		return answer{err: err}
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(hangBound))
	fmt.Fprintf(conn, "%s HTTP/1.1\r\nHost: registry\r\nAuthorization: Bearer %s\r\nContent-Type: %s\r\nContent-Length: %d\r\n\r\n%s",
		line, c.token, contentType, length, first)
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		return answer{err: err}
	}
	defer resp.Body.Close()
	return answer{status: resp.StatusCode, problem: strings.HasPrefix(resp.Header.Get("Content-Type"), "application/problem+json")}
}

// dribbleHeaders sends a request's head a byte every 200 ms until stop
// is closed or the server hangs up.
func dribbleHeaders(stop <-chan struct{}) {
	conn, err := net.Dial("tcp", strings.TrimPrefix(stack.RegistryURL, "http://"))
	if err != nil {
		return
	}
	defer conn.Close()
	head := "GET /organizations HTTP/1.1\r\nHost: registry\r\nX-Slow: " + strings.Repeat("s", 1000)
	for i := 0; i < len(head); i++ {
		select {
		case <-stop:
			return
		case <-time.After(200 * time.Millisecond):
		}
		if _, err := conn.Write([]byte{head[i]}); err != nil {
			return
		}
	}
}
