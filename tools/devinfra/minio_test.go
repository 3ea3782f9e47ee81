package devinfra

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
)

// startTestMinio builds the server first if need be (minutes, once per
// machine) without the start timeout, which is only for the start itself.
func startTestMinio(t *testing.T, o MinioOptions) *Minio {
	t.Helper()
	if _, err := EnsureMinioServer(context.Background(), os.Stderr); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	m, err := StartMinio(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = m.Stop() })
	return m
}

// startMinioExpectingFailure is StartMinio for a start that must fail: a
// server that starts all the same is stopped before the test ends, so it
// writes nothing into the test's directory while that is removed.
func startMinioExpectingFailure(o MinioOptions) error {
	m, err := StartMinio(context.Background(), o)
	if err == nil {
		_ = m.Stop()
	}
	return err
}

func minioClient(t *testing.T, m *Minio, accessKey, secretKey string) *minio.Client {
	t.Helper()
	c, err := minio.New(m.Endpoint, &minio.Options{
		Creds:  credentials.NewStaticV4(accessKey, secretKey, ""),
		Region: m.Region,
	})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestMinioKeepsObjectsAndCredentialsAcrossRestart(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dataDir := filepath.Join(t.TempDir(), "minio")

	m := startTestMinio(t, MinioOptions{DataDir: dataDir})
	if m.CredentialsFile != dataDir+".credentials" {
		t.Errorf("credentials file %s, want %s beside the data dir", m.CredentialsFile, dataDir+".credentials")
	}
	fi, err := os.Stat(m.CredentialsFile)
	if err != nil {
		t.Fatal(err)
	}
	if mode := fi.Mode().Perm(); mode != 0o600 {
		t.Errorf("credentials file mode %o, want 600", mode)
	}
	if len(m.SecretKey) < 32 {
		t.Errorf("generated secret key %q is short", m.SecretKey)
	}
	if m.ConsoleURL != "" {
		t.Errorf("console at %s although no ConsolePort was given", m.ConsoleURL)
	}

	const bucket, key, body = "kept", "dir/file.txt", "still here"
	c := minioClient(t, m, m.AccessKey, m.SecretKey)
	if err := c.MakeBucket(ctx, bucket, minio.MakeBucketOptions{Region: m.Region}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.PutObject(ctx, bucket, key, strings.NewReader(body), int64(len(body)),
		minio.PutObjectOptions{ContentType: "text/plain"}); err != nil {
		t.Fatal(err)
	}
	if got := readObject(t, c, bucket, key); got != body {
		t.Fatalf("read back %q, want %q", got, body)
	}
	wrong := minioClient(t, m, m.AccessKey, m.SecretKey+"x")
	if _, err := wrong.BucketExists(ctx, bucket); minio.ToErrorResponse(err).Code != "SignatureDoesNotMatch" {
		t.Errorf("a wrong secret key got %v, want SignatureDoesNotMatch", err)
	}

	first := *m
	if err := m.Stop(); err != nil {
		t.Fatal(err)
	}
	requireGone(t, "after Stop", []int{first.srv.pid()}, first.Port)

	m = startTestMinio(t, MinioOptions{DataDir: dataDir})
	if m.AccessKey != first.AccessKey || m.SecretKey != first.SecretKey {
		t.Fatal("a restart on the same data dir changed the credentials")
	}
	if got := readObject(t, minioClient(t, m, m.AccessKey, m.SecretKey), bucket, key); got != body {
		t.Errorf("after restart read %q, want %q", got, body)
	}
}

func readObject(t *testing.T, c *minio.Client, bucket, key string) string {
	t.Helper()
	obj, err := c.GetObject(context.Background(), bucket, key, minio.GetObjectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer obj.Close()
	b, err := io.ReadAll(obj)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestMinioListensOnLoopbackOnly dials the API and console ports on every
// other address of this machine.
func TestMinioListensOnLoopbackOnly(t *testing.T) {
	t.Parallel()
	consolePort, err := FreePort()
	if err != nil {
		t.Fatal(err)
	}
	m := startTestMinio(t, MinioOptions{DataDir: filepath.Join(t.TempDir(), "minio"), ConsolePort: consolePort})
	resp, err := http.Get(m.ConsoleURL)
	if err != nil {
		t.Fatalf("console: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("console answered %s", resp.Status)
	}

	addrs, err := net.InterfaceAddrs()
	if err != nil {
		t.Fatal(err)
	}
	checked := 0
	for _, a := range addrs {
		ip, _, err := net.ParseCIDR(a.String())
		if err != nil || ip.IsLoopback() || ip.IsLinkLocalUnicast() {
			continue
		}
		for _, port := range []int{m.Port, consolePort} {
			conn, err := net.DialTimeout("tcp", net.JoinHostPort(ip.String(), strconv.Itoa(port)), time.Second)
			if err == nil {
				conn.Close()
				t.Errorf("port %d answers on %s", port, ip)
			}
		}
		checked++
	}
	if checked == 0 {
		t.Log("no non-loopback address to check against")
	}
}

func TestMinioCredentials(t *testing.T) {
	t.Parallel()
	t.Run("given file is used", func(t *testing.T) {
		dir := t.TempDir()
		credFile := filepath.Join(dir, "elsewhere", "s3.env")
		if err := os.MkdirAll(filepath.Dir(credFile), 0o755); err != nil {
			t.Fatal(err)
		}
		// A restored copy with a loose mode, which StartMinio tightens.
		content := "# restored\nMINIO_ROOT_USER=someone\nMINIO_ROOT_PASSWORD=a-long-password\n"
		if err := os.WriteFile(credFile, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		m := startTestMinio(t, MinioOptions{DataDir: filepath.Join(dir, "minio"), CredentialsFile: credFile})
		if m.AccessKey != "someone" || m.SecretKey != "a-long-password" {
			t.Errorf("credentials %q/%q, want the file's", m.AccessKey, m.SecretKey)
		}
		if fi, err := os.Stat(credFile); err != nil || fi.Mode().Perm() != 0o600 {
			t.Errorf("credentials file not tightened to 0600: %v, %v", fi.Mode(), err)
		}
		if _, err := minioClient(t, m, "someone", "a-long-password").ListBuckets(context.Background()); err != nil {
			t.Errorf("the file's credentials do not sign in: %v", err)
		}
	})
	t.Run("data without its credentials is refused", func(t *testing.T) {
		dataDir := filepath.Join(t.TempDir(), "minio")
		m := startTestMinio(t, MinioOptions{DataDir: dataDir})
		if err := m.Stop(); err != nil {
			t.Fatal(err)
		}
		if err := os.Remove(m.CredentialsFile); err != nil {
			t.Fatal(err)
		}
		err := startMinioExpectingFailure(MinioOptions{DataDir: dataDir})
		if err == nil || !strings.Contains(err.Error(), "credentials file") {
			t.Fatalf("got %v, want an error about the missing credentials file", err)
		}
	})
	t.Run("unusable file is refused", func(t *testing.T) {
		dir := t.TempDir()
		credFile := filepath.Join(dir, "minio.credentials")
		if err := os.WriteFile(credFile, []byte("MINIO_ROOT_USER=someone\nMINIO_ROOT_PASSWORD=short\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		err := startMinioExpectingFailure(MinioOptions{DataDir: filepath.Join(dir, "minio")})
		if err == nil || !strings.Contains(err.Error(), "MINIO_ROOT_PASSWORD") {
			t.Fatalf("got %v, want an error naming the bad entry", err)
		}
	})
}

// TestMinioIgnoresCallerEnvironment: MinIO's own variables in a developer's
// shell (credentials, a logger webhook, a subnet URL) never reach our server.
func TestMinioIgnoresCallerEnvironment(t *testing.T) {
	env := withoutMinioEnv([]string{
		"PATH=/usr/bin", "MINIO_ROOT_USER=admin", "MINIO_LOGGER_WEBHOOK_ENDPOINT=http://example.com",
		"_MINIO_SUBNET_URL=http://example.com", "CONSOLE_MINIO_SERVER=http://example.com", "HOME=/root",
	})
	if got := strings.Join(env, " "); got != "PATH=/usr/bin HOME=/root" {
		t.Errorf("kept %q, want only PATH and HOME", got)
	}
}

func TestMinioBuildEnv(t *testing.T) {
	env := minioBuildEnv([]string{"PATH=/usr/bin", "GOFLAGS=-mod=vendor", "GOOS=darwin", "GOWORK=/x/go.work", "GOBIN=/elsewhere"}, "/scratch")
	want := "PATH=/usr/bin GOBIN=/scratch GOWORK=off GOFLAGS=-mod=mod CGO_ENABLED=0"
	if got := strings.Join(env, " "); got != want {
		t.Errorf("build env %q, want %q", got, want)
	}
}

// TestMinioBuildLockWaits holds the build lock and checks that a second
// taker waits for it (and gives up when its context ends), as a process
// that finds a build under way must.
func TestMinioBuildLockWaits(t *testing.T) {
	path := filepath.Join(t.TempDir(), "build.lock")
	unlock, err := lockFile(context.Background(), path, func() { t.Error("first taker waited") })
	if err != nil {
		t.Fatal(err)
	}
	waited := false
	ctx, cancel := context.WithTimeout(context.Background(), 600*time.Millisecond)
	defer cancel()
	if _, err := lockFile(ctx, path, func() { waited = true }); !errors.Is(err, context.DeadlineExceeded) || !waited {
		t.Fatalf("second taker while held: waited=%v err=%v, want a wait ended by the deadline", waited, err)
	}

	got := make(chan error, 1)
	go func() {
		unlock2, err := lockFile(context.Background(), path, func() {})
		if err == nil {
			unlock2()
		}
		got <- err
	}()
	unlock()
	if err := <-got; err != nil {
		t.Fatalf("taker after release: %v", err)
	}
}

// TestStartMinioOnTakenPortFails: the port is another server's, one that
// says it is ready as any MinIO does (another test's, say, that took a
// port FreePort gave us before our server bound it). That server's answers
// are not taken for ours: the start fails as our server does.
func TestStartMinioOnTakenPortFails(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go func() { _ = http.Serve(l, http.HandlerFunc(func(http.ResponseWriter, *http.Request) {})) }()
	if _, err := EnsureMinioServer(context.Background(), os.Stderr); err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	err = startMinioExpectingFailure(MinioOptions{DataDir: filepath.Join(t.TempDir(), "minio"), Port: port})
	if !errors.Is(err, errPortInUse) || !strings.Contains(err.Error(), "server log") {
		t.Fatalf("got %v, want errPortInUse with the server log", err)
	}
}

func TestWritePrivateFileReplacesWhole(t *testing.T) {
	path := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(path, bytes.Repeat([]byte("x"), 100), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := writePrivateFile(path, "new"); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	fi, statErr := os.Stat(path)
	if err != nil || statErr != nil || string(b) != "new" || fi.Mode().Perm() != 0o600 {
		t.Fatalf("file holds %q with mode %v (%v, %v), want \"new\" with 0600", b, fi.Mode(), err, statErr)
	}
}
