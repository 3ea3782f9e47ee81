// Package objectstore connects a service to its bucket in S3-compatible
// object storage (MinIO locally; any S3 in production) through minio-go,
// creates the bucket at start if it is missing, and classifies failures so
// that storage that is down reaches clients as a 503, never a 500.
package objectstore

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/url"
	"strings"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"

	"github.com/assetregistry/registry/pkg/apperr"
)

// Config of the object storage.
type Config struct {
	Endpoint    string // http(s)://host:port
	Bucket      string
	Region      string
	AccessKey   string
	SecretKey   string
	StartupWait time.Duration
}

// RegisterFlags adds the s3.* flags (env S3_ENDPOINT, S3_BUCKET, ...).
func (c *Config) RegisterFlags(fs *flag.FlagSet, defaultBucket string) {
	fs.StringVar(&c.Endpoint, "s3.endpoint", "", "S3 endpoint URL, e.g. https://s3.eu-north-1.amazonaws.com or http://127.0.0.1:9000 (required)")
	fs.StringVar(&c.Bucket, "s3.bucket", defaultBucket, "bucket this service owns; created at start if missing")
	fs.StringVar(&c.Region, "s3.region", "us-east-1", "region of the bucket")
	fs.StringVar(&c.AccessKey, "s3.access-key", "", "access key id")
	fs.StringVar(&c.SecretKey, "s3.secret-key", "", "secret access key")
	fs.DurationVar(&c.StartupWait, "s3.startup-wait", time.Minute, "how long to wait for object storage at start")
}

// Bucket is a client bound to one bucket.
type Bucket struct {
	Client *minio.Client
	Name   string
}

// Open connects and makes sure the bucket exists (idempotent: replicas
// starting together may all try), retrying until cfg.StartupWait passes
// while the storage does not answer.
func Open(ctx context.Context, cfg Config) (*Bucket, error) {
	u, err := url.Parse(cfg.Endpoint)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("objectstore: s3.endpoint %q must be an http(s) URL", cfg.Endpoint)
	}
	if cfg.Bucket == "" {
		return nil, errors.New("objectstore: s3.bucket is required")
	}
	client, err := minio.New(u.Host, &minio.Options{
		Creds:  credentials.NewStaticV4(cfg.AccessKey, cfg.SecretKey, ""),
		Secure: u.Scheme == "https",
		Region: cfg.Region,
		// Uploads carry a CRC32C of their bytes (in a trailer, or per
		// part), which the store checks: integrity that costs next to
		// nothing, where a signed payload would hash every byte with
		// SHA-256 on both sides (see documents.StorageOptions). S3 and
		// MinIO both take trailers.
		TrailingHeaders: true,
	})
	if err != nil {
		return nil, fmt.Errorf("objectstore: %w", err)
	}
	b := &Bucket{Client: client, Name: cfg.Bucket}
	deadline := time.Now().Add(cfg.StartupWait)
	for {
		err = b.ensure(ctx, cfg.Region)
		if err == nil {
			return b, nil
		}
		if !apperr.Is(err, apperr.KindUnavailable) || time.Now().After(deadline) {
			return nil, err
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(time.Second):
		}
	}
}

func (b *Bucket) ensure(ctx context.Context, region string) error {
	err := b.Client.MakeBucket(ctx, b.Name, minio.MakeBucketOptions{Region: region})
	if err == nil {
		return nil
	}
	switch minio.ToErrorResponse(err).Code {
	case "BucketAlreadyOwnedByYou", "BucketAlreadyExists":
		// BucketAlreadyExists is also what a bucket of another account
		// says; the readiness check finds out whether we can use it.
		return nil
	}
	return Classify(err, "create bucket "+b.Name)
}

// Ready is the readiness check: the bucket answers.
func (b *Bucket) Ready(ctx context.Context) error {
	ok, err := b.Client.BucketExists(ctx, b.Name)
	if err != nil {
		return Classify(err, "check bucket")
	}
	if !ok {
		return fmt.Errorf("objectstore: bucket %s does not exist", b.Name)
	}
	return nil
}

// Classify wraps a storage error with the operation's name; failures that
// mean the storage cannot serve right now (unreachable, timeouts, 5xx,
// throttling) become apperr "unavailable" (a 503 with Retry-After).
func Classify(err error, op string) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, context.Canceled) {
		return fmt.Errorf("%s: %w", op, err)
	}
	var netErr net.Error
	resp := minio.ToErrorResponse(err)
	switch {
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &netErr),
		resp.StatusCode >= 500, resp.StatusCode == 429,
		resp.Code == "SlowDown", resp.Code == "ServiceUnavailable", resp.Code == "XMinioServerNotInitialized",
		strings.Contains(err.Error(), "connection refused"):
		return apperr.Unavailable("object storage", fmt.Errorf("%s: %w", op, err))
	}
	return fmt.Errorf("%s: %w", op, err)
}
