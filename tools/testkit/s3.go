package testkit

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"

	"github.com/assetregistry/registry/tools/devinfra"
)

// minioBuildTimeout bounds building the MinIO server, which a cold machine
// does once (minutes); `make test` has it built before the tests start.
const minioBuildTimeout = 30 * time.Minute

// S3Server is the test object store and the credentials to sign in with.
type S3Server struct {
	Endpoint  string // host:port, as minio.New takes it
	Secure    bool   // https rather than http
	AccessKey string
	SecretKey string
	Region    string
}

// S3Config is one test's bucket on the test object store.
type S3Config struct {
	S3Server
	// Bucket exists, is empty and is this test's alone; it is removed with
	// everything in it when the test ends.
	Bucket string
}

// NewClient returns a minio-go client for the server.
func (s S3Server) NewClient() (*minio.Client, error) {
	c, err := minio.New(s.Endpoint, &minio.Options{
		Creds:  credentials.NewStaticV4(s.AccessKey, s.SecretKey, ""),
		Secure: s.Secure,
		Region: s.Region,
	})
	if err != nil {
		return nil, fmt.Errorf("s3 client for %s: %w", s.Endpoint, err)
	}
	return c, nil
}

// S3 returns a new bucket, such as "t-3f2a9c1b0d4e5f67", on the test object
// store, starting the store on first use. The bucket and every object in it
// (including unfinished multipart uploads) are removed when the test ends.
func S3(t testing.TB) S3Config {
	t.Helper()
	h.requireMain(t)
	srv := h.s3Server.url(t, h.startS3)
	cfg := S3Config{S3Server: srv, Bucket: "t-" + randomHex(t)}
	client, err := srv.NewClient()
	if err != nil {
		t.Fatalf("testharness: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), cleanupTimeout)
	defer cancel()
	if err := client.MakeBucket(ctx, cfg.Bucket, minio.MakeBucketOptions{Region: srv.Region}); err != nil {
		t.Fatalf("testharness: create bucket %s: %v", cfg.Bucket, err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), cleanupTimeout)
		defer cancel()
		if err := removeBucket(ctx, client, cfg.Bucket); err != nil {
			t.Errorf("testharness: %v", err)
		}
	})
	return cfg
}

// removeBucket empties the bucket and removes it, and makes sure it stays
// removed. The pinned MinIO can bring a bucket back a moment after a
// removal it answered with success, while other buckets are made and
// removed at the same time: in TestS3BucketIsolatesAndIsRemoved's
// parallel subtests (make bucket, remove bucket, with or without objects)
// one bucket in a few runs was listed again 26 to 105 ms after its
// DELETE, and stayed, writable. So a removed bucket is watched for
// removalSettles and removed again if it comes back.
func removeBucket(ctx context.Context, c *minio.Client, bucket string) error {
	const maxRemovals = 5
	for removal := 1; ; removal++ {
		if err := removeBucketOnce(ctx, c, bucket); err != nil {
			return err
		}
		back, err := comesBack(ctx, c, bucket)
		if err != nil {
			return fmt.Errorf("remove bucket %s: %w", bucket, err)
		}
		if !back {
			return nil
		}
		if removal == maxRemovals {
			return fmt.Errorf("remove bucket %s: it was there again after each of %d removals", bucket, maxRemovals)
		}
	}
}

// removalSettles is how long a removed bucket is watched; removalPoll how
// often it is looked for meanwhile.
const (
	removalSettles = 500 * time.Millisecond
	removalPoll    = 50 * time.Millisecond
)

// comesBack says whether the bucket exists again within removalSettles.
func comesBack(ctx context.Context, c *minio.Client, bucket string) (bool, error) {
	for deadline := time.Now().Add(removalSettles); time.Now().Before(deadline); {
		select {
		case <-ctx.Done():
			return false, ctx.Err()
		case <-time.After(removalPoll):
		}
		exists, err := c.BucketExists(ctx, bucket)
		if err != nil || exists {
			return exists, err
		}
	}
	return false, nil
}

// removeBucketOnce empties the bucket and removes it, with plain S3 calls
// (no MinIO force-delete), so that it works on any S3 that TEST_S3_ENDPOINT
// names.
func removeBucketOnce(ctx context.Context, c *minio.Client, bucket string) error {
	// MinIO lists only one of an object and a "directory" of the same name
	// ("a/b" and "a/b/c"), so one pass can leave objects behind; the next
	// pass sees them. Each pass removes at least one level.
	const maxPasses = 20
	for pass := 1; ; pass++ {
		removed, err := removeListedObjects(ctx, c, bucket)
		if err != nil {
			return fmt.Errorf("remove bucket %s: %w", bucket, err)
		}
		if removed == 0 {
			break
		}
		if pass == maxPasses {
			return fmt.Errorf("remove bucket %s: objects still listed after %d passes", bucket, maxPasses)
		}
	}
	for u := range c.ListIncompleteUploads(ctx, bucket, "", true) {
		if u.Err != nil {
			return fmt.Errorf("remove bucket %s: list uploads: %w", bucket, u.Err)
		}
		if err := c.RemoveIncompleteUpload(ctx, bucket, u.Key); err != nil {
			return fmt.Errorf("remove bucket %s: abort upload of %s: %w", bucket, u.Key, err)
		}
	}
	if err := c.RemoveBucket(ctx, bucket); err != nil {
		return fmt.Errorf("remove bucket %s: %w", bucket, err)
	}
	return nil
}

// removeListedObjects removes every object version the bucket lists and
// returns how many there were.
func removeListedObjects(ctx context.Context, c *minio.Client, bucket string) (int, error) {
	// List first, then delete: deleting while the same listing pages on
	// would skip objects on some servers.
	var objects []minio.ObjectInfo
	for o := range c.ListObjectsIter(ctx, bucket, minio.ListObjectsOptions{Recursive: true, WithVersions: true}) {
		if o.Err != nil {
			return 0, fmt.Errorf("list objects: %w", o.Err)
		}
		objects = append(objects, o)
	}
	if len(objects) == 0 {
		return 0, nil
	}
	toRemove := make(chan minio.ObjectInfo, len(objects))
	for _, o := range objects {
		toRemove <- o
	}
	close(toRemove)
	var errs []error
	for e := range c.RemoveObjects(ctx, bucket, toRemove, minio.RemoveObjectsOptions{}) {
		errs = append(errs, fmt.Errorf("%s: %w", e.ObjectName, e.Err))
	}
	if err := errors.Join(errs...); err != nil {
		return 0, fmt.Errorf("remove objects: %w", err)
	}
	return len(objects), nil
}

func (h *harness) startS3() (S3Server, error) {
	if endpoint := os.Getenv(s3EndpointEnv); endpoint != "" {
		return s3ServerFromEnv(endpoint)
	}
	dir, err := h.dataDir()
	if err != nil {
		return S3Server{}, err
	}
	buildCtx, cancel := context.WithTimeout(context.Background(), minioBuildTimeout)
	defer cancel()
	if _, err := devinfra.EnsureMinioServer(buildCtx, os.Stderr); err != nil {
		return S3Server{}, fmt.Errorf("%w (or set %s, %s and %s)", err, s3EndpointEnv, s3AccessKeyEnv, s3SecretKeyEnv)
	}
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	m, err := devinfra.StartMinio(ctx, devinfra.MinioOptions{DataDir: filepath.Join(dir, "minio")})
	if err != nil {
		return S3Server{}, fmt.Errorf("%w (or set %s, %s and %s)", err, s3EndpointEnv, s3AccessKeyEnv, s3SecretKeyEnv)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.shutDown {
		return S3Server{}, errors.Join(errors.New("shutting down"), m.Stop())
	}
	h.minio = m
	return S3Server{Endpoint: m.Endpoint, AccessKey: m.AccessKey, SecretKey: m.SecretKey, Region: m.Region}, nil
}

// s3ServerFromEnv reads the TEST_S3_* variables. The endpoint is host:port
// (plain HTTP) or a URL, whose scheme says whether to use TLS.
func s3ServerFromEnv(endpoint string) (S3Server, error) {
	srv := S3Server{
		Endpoint:  endpoint,
		AccessKey: os.Getenv(s3AccessKeyEnv),
		SecretKey: os.Getenv(s3SecretKeyEnv),
		Region:    os.Getenv(s3RegionEnv),
	}
	if strings.Contains(endpoint, "://") {
		u, err := url.Parse(endpoint)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || strings.Trim(u.Path, "/") != "" {
			return S3Server{}, fmt.Errorf("%s=%q is neither host:port nor http(s)://host:port", s3EndpointEnv, endpoint)
		}
		srv.Endpoint, srv.Secure = u.Host, u.Scheme == "https"
	}
	if srv.AccessKey == "" || srv.SecretKey == "" {
		return S3Server{}, fmt.Errorf("%s is set but %s or %s is not", s3EndpointEnv, s3AccessKeyEnv, s3SecretKeyEnv)
	}
	if srv.Region == "" {
		srv.Region = "us-east-1"
	}
	return srv, nil
}
