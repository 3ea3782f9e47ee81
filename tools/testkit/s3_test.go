package testkit

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/minio/minio-go/v7"
)

const childExpectS3Env = "TESTHARNESS_CHILD_EXPECT_S3"

func s3Client(t *testing.T, srv S3Server) *minio.Client {
	t.Helper()
	c, err := srv.NewClient()
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestS3BucketIsolatesAndIsRemoved(t *testing.T) {
	ctx := context.Background()
	buckets := make(chan S3Config, 3)
	t.Run("group", func(t *testing.T) {
		for i := range cap(buckets) {
			t.Run(fmt.Sprint(i), func(t *testing.T) {
				t.Parallel()
				cfg := S3(t)
				buckets <- cfg
				c := s3Client(t, cfg.S3Server)
				// Every test writes the same key; buckets keep them apart.
				body := fmt.Sprintf("test %d", i)
				if _, err := c.PutObject(ctx, cfg.Bucket, "same/key", strings.NewReader(body), int64(len(body)), minio.PutObjectOptions{}); err != nil {
					t.Fatal(err)
				}
				var keys []string
				for o := range c.ListObjectsIter(ctx, cfg.Bucket, minio.ListObjectsOptions{Recursive: true}) {
					if o.Err != nil {
						t.Fatal(o.Err)
					}
					keys = append(keys, o.Key)
				}
				if len(keys) != 1 {
					t.Errorf("bucket holds %v, want only this test's object", keys)
				}
				obj, err := c.GetObject(ctx, cfg.Bucket, "same/key", minio.GetObjectOptions{})
				if err != nil {
					t.Fatal(err)
				}
				defer obj.Close()
				if got, err := io.ReadAll(obj); err != nil || string(got) != body {
					t.Errorf("read %q, %v; want this test's %q", got, err, body)
				}
			})
		}
	})
	close(buckets)
	seen := map[string]bool{}
	for cfg := range buckets {
		if seen[cfg.Bucket] {
			t.Errorf("bucket %s handed out twice", cfg.Bucket)
		}
		seen[cfg.Bucket] = true
		if exists, err := s3Client(t, cfg.S3Server).BucketExists(ctx, cfg.Bucket); err != nil || exists {
			t.Errorf("bucket %s still exists after its test ended (%v)", cfg.Bucket, err)
		}
	}
}

// TestS3CleanupRemovesEverything leaves behind objects under nested
// prefixes, an object and a "directory" of the same name ("a/b" and "a/b/c",
// of which MinIO lists only one at a time) and an unfinished multipart upload
// (which no listing of objects shows); the bucket must still go.
func TestS3CleanupRemovesEverything(t *testing.T) {
	ctx := context.Background()
	var cfg S3Config
	t.Run("inner", func(t *testing.T) {
		cfg = S3(t)
		c := s3Client(t, cfg.S3Server)
		for _, key := range []string{"top", "a/b", "a/b/c", "x/y/z/deep"} {
			if _, err := c.PutObject(ctx, cfg.Bucket, key, strings.NewReader("x"), 1, minio.PutObjectOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := (&minio.Core{Client: c}).NewMultipartUpload(ctx, cfg.Bucket, "unfinished", minio.PutObjectOptions{}); err != nil {
			t.Fatal(err)
		}
	})
	if exists, err := s3Client(t, cfg.S3Server).BucketExists(ctx, cfg.Bucket); err != nil || exists {
		t.Errorf("bucket %s still exists after its test ended (%v)", cfg.Bucket, err)
	}
}

// TestUsesProvidedS3 runs this binary with TEST_S3_* pointing at our server,
// as `make test` does, and checks that the child uses it rather than
// starting its own.
func TestUsesProvidedS3(t *testing.T) {
	if want := os.Getenv(childExpectS3Env); want != "" {
		cfg := S3(t)
		if cfg.Endpoint != want {
			t.Fatalf("S3 endpoint %q, want %q from %s", cfg.Endpoint, want, s3EndpointEnv)
		}
		if h.minio != nil {
			t.Fatal("started a private server although one was provided")
		}
		if _, err := s3Client(t, cfg.S3Server).BucketExists(context.Background(), cfg.Bucket); err != nil {
			t.Fatal(err)
		}
		return
	}
	srv := S3(t).S3Server
	cmd := exec.Command(os.Args[0], "-test.run=^TestUsesProvidedS3$", "-test.v")
	cmd.Env = append(os.Environ(),
		s3EndpointEnv+"=http://"+srv.Endpoint, s3AccessKeyEnv+"="+srv.AccessKey, s3SecretKeyEnv+"="+srv.SecretKey,
		childExpectS3Env+"="+srv.Endpoint)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("child: %v\n%s", err, out)
	}
}

func TestS3ServerFromEnv(t *testing.T) {
	tests := []struct {
		name, endpoint, access, secret, region string
		want                                   S3Server
		wantErr                                string
	}{
		{name: "host:port is plain HTTP", endpoint: "127.0.0.1:9000", access: "a", secret: "s",
			want: S3Server{Endpoint: "127.0.0.1:9000", AccessKey: "a", SecretKey: "s", Region: "us-east-1"}},
		{name: "http URL", endpoint: "http://minio.test:9000/", access: "a", secret: "s", region: "eu-north-1",
			want: S3Server{Endpoint: "minio.test:9000", AccessKey: "a", SecretKey: "s", Region: "eu-north-1"}},
		{name: "https URL", endpoint: "https://s3.test", access: "a", secret: "s",
			want: S3Server{Endpoint: "s3.test", Secure: true, AccessKey: "a", SecretKey: "s", Region: "us-east-1"}},
		{name: "URL with a path", endpoint: "http://s3.test/bucket", access: "a", secret: "s", wantErr: "neither host:port"},
		{name: "other scheme", endpoint: "ftp://s3.test", access: "a", secret: "s", wantErr: "neither host:port"},
		{name: "no secret key", endpoint: "127.0.0.1:9000", access: "a", wantErr: s3SecretKeyEnv},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv(s3AccessKeyEnv, tt.access)
			t.Setenv(s3SecretKeyEnv, tt.secret)
			t.Setenv(s3RegionEnv, tt.region)
			got, err := s3ServerFromEnv(tt.endpoint)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("got %+v, %v; want an error mentioning %q", got, err, tt.wantErr)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("got %+v, %v; want %+v", got, err, tt.want)
			}
		})
	}
}
