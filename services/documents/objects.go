package documents

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"net/http"
	"sync"
	"time"

	"github.com/minio/minio-go/v7"

	"github.com/assetregistry/registry/pkg/apperr"
	"github.com/assetregistry/registry/pkg/httpx"
	"github.com/assetregistry/registry/pkg/objectstore"
)

// Objects stores documents' bytes in the service's bucket, one object per
// document, named by its id.
type Objects struct {
	bucket *objectstore.Bucket
	cfg    ObjectsConfig
	// parts lends uploads the PartSize buffers they read the file's first
	// part into, so that uploads reuse them instead of making a new one
	// (and garbage) each.
	parts sync.Pool
}

// ObjectsConfig tunes how uploads stream to storage.
type ObjectsConfig struct {
	// PartSize is the size of one multipart part, and Threads how many
	// are in flight: memory per upload is about PartSize × Threads, which
	// is what bounds the service's memory whatever the file's size. A file
	// of at most PartSize bytes goes up in one request.
	PartSize uint64
	Threads  uint
	// UploadTimeout bounds one upload; an object still loose after it is
	// the sweeper's.
	UploadTimeout time.Duration
}

// DefaultObjectsConfig keeps a whole upload within about 16 MiB of buffers.
var DefaultObjectsConfig = ObjectsConfig{PartSize: 8 << 20, Threads: 2, UploadTimeout: time.Hour}

// NewObjects returns the object side of the service.
func NewObjects(bucket *objectstore.Bucket, cfg ObjectsConfig) *Objects {
	if cfg.PartSize == 0 {
		cfg = DefaultObjectsConfig
	}
	o := &Objects{bucket: bucket, cfg: cfg}
	o.parts.New = func() any { b := make([]byte, cfg.PartSize); return &b }
	return o
}

// UploadDeadline is when an upload starting now is given up.
func (o *Objects) UploadDeadline() time.Time { return time.Now().Add(o.cfg.UploadTimeout) }

// Stored is what a finished upload measured while streaming.
type Stored struct {
	Size        int64
	SHA256      string // lowercase hex
	ContentType string
	Filename    *string
	// Sniffed is what the first bytes say the file is
	// (http.DetectContentType), whatever its declared type.
	Sniffed string
}

// sniffBytes is what content sniffing looks at (http.DetectContentType).
const sniffBytes = 512

// Put streams body to the object key, measuring its size and sha256 as it
// goes and stopping at max bytes (a 413; the partial object is removed by
// the caller). contentType "" is sniffed from the first bytes. A file of
// at most PartSize bytes (most documents: reports, photos) goes up in one
// request, which saves a multipart upload's extra round trips; a larger
// one streams in parts, PartSize × Threads bytes in memory at a time.
func (o *Objects) Put(ctx context.Context, key string, body io.Reader, contentType string, max int64) (Stored, error) {
	in := &measured{r: body, hash: sha256.New(), max: max}
	first := o.parts.Get().(*[]byte)
	release := sync.OnceFunc(func() { o.parts.Put(first) })
	defer release()
	n, err := io.ReadFull(in, *first)
	whole := errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF)
	if err != nil && !whole {
		return Stored{}, uploadError(err)
	}
	// A full first part is the whole file when nothing follows it.
	var next [1]byte
	var more int
	if !whole {
		more, err = io.ReadFull(in, next[:])
		if whole = errors.Is(err, io.EOF); err != nil && !whole {
			return Stored{}, uploadError(err)
		}
	}
	sniffed := http.DetectContentType((*first)[:min(n, sniffBytes)])
	if contentType == "" {
		contentType = sniffed
	}
	// Storage calls outlive a client that went away, so that a failed
	// multipart upload can still be aborted; the body read fails anyway.
	putCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), o.cfg.UploadTimeout)
	defer cancel()
	opts := StorageOptions(contentType)
	if whole {
		_, err = o.bucket.Client.PutObject(putCtx, o.bucket.Name, key, bytes.NewReader((*first)[:n]), int64(n), opts)
	} else {
		// minio-go copies the stream into Threads part buffers of its
		// own; the first part's buffer goes back to the pool as soon as it
		// has been copied.
		opts.PartSize, opts.ConcurrentStreamParts, opts.NumThreads = o.cfg.PartSize, o.cfg.Threads > 1, o.cfg.Threads
		stream := io.MultiReader(&releasingReader{r: bytes.NewReader((*first)[:n]), release: release}, bytes.NewReader(next[:more]), in)
		_, err = o.bucket.Client.PutObject(putCtx, o.bucket.Name, key, stream, -1, opts)
	}
	if err != nil {
		return Stored{}, uploadError(err)
	}
	return Stored{Size: in.n, SHA256: hex.EncodeToString(in.hash.Sum(nil)), ContentType: contentType, Sniffed: sniffed}, nil
}

// releasingReader calls release once r is read to its end.
type releasingReader struct {
	r       io.Reader
	release func()
}

func (r *releasingReader) Read(p []byte) (int, error) {
	n, err := r.r.Read(p)
	if errors.Is(err, io.EOF) {
		r.release()
	}
	return n, err
}

// StorageOptions are what every file is put into storage with, whatever
// its size and however it streams. make bench puts the same bytes straight
// into the same bucket with them, so that its limit does the same work.
//
// The payload is not signed. Over plain HTTP minio-go would otherwise sign
// it in 64 KiB chunks, each a SHA-256 of the bytes and an HMAC, and the
// store would check every one: a second SHA-256 of every byte beside the
// one the service computes for the document's sha256 (a quarter of the
// service's CPU under uploads, and per-chunk garbage that took a 1 GiB
// upload's resident set past 80 MiB). Over HTTPS, as against S3 in
// production, minio-go never signs payloads anyway. Integrity is the CRC32C
// the client sends with every upload (objectstore turns trailers on), which
// the store checks; authenticity, the signed request and TLS.
func StorageOptions(contentType string) minio.PutObjectOptions {
	return minio.PutObjectOptions{ContentType: contentType, DisableContentSha256: true}
}

// measured counts and hashes what is read through it and fails once more
// than max bytes arrive. Errors of the underlying body (a client gone,
// a body over the transport's limit) come back as bodyError, so they are
// not mistaken for storage failures.
type measured struct {
	r    io.Reader
	hash hash.Hash
	n    int64
	max  int64
}

var errTooLarge = errors.New("the file is over the size limit")

type bodyError struct{ err error }

func (e bodyError) Error() string { return "reading the upload: " + e.err.Error() }
func (e bodyError) Unwrap() error { return e.err }

func (m *measured) Read(p []byte) (int, error) {
	n, err := m.r.Read(p)
	m.hash.Write(p[:n])
	m.n += int64(n)
	if m.n > m.max {
		return n, errTooLarge
	}
	if err != nil && !errors.Is(err, io.EOF) {
		err = bodyError{err}
	}
	return n, err
}

// uploadError says whose fault a failed upload was.
func uploadError(err error) error {
	var maxBytes *http.MaxBytesError
	var body bodyError
	switch {
	case errors.Is(err, errTooLarge), errors.As(err, &maxBytes):
		return apperr.New(apperr.KindTooLarge, "the file is over the size limit")
	case httpx.BodyProblem(err) != nil: // too slow
		return httpx.BodyProblem(err)
	case errors.As(err, &body):
		return apperr.Wrap(apperr.KindBadRequest, "the upload could not be read to its end", err)
	}
	return objectstore.Classify(err, "store the file")
}

// Read streams an object, or the range r of it.
func (o *Objects) Read(ctx context.Context, key string, r *ByteRange) (io.ReadCloser, error) {
	var opts minio.GetObjectOptions
	if r != nil {
		if err := opts.SetRange(r.First, r.Last); err != nil {
			return nil, fmt.Errorf("range %v: %w", *r, err)
		}
	}
	obj, err := o.bucket.Client.GetObject(ctx, o.bucket.Name, key, opts)
	if err != nil {
		return nil, objectstore.Classify(err, "read the file")
	}
	// GetObject is lazy: read one byte now so that storage being down is
	// a 503 before any header is sent, not a truncated 200.
	head := make([]byte, 1)
	n, err := obj.Read(head)
	if err != nil && !errors.Is(err, io.EOF) {
		obj.Close()
		if minio.ToErrorResponse(err).Code == "NoSuchKey" {
			return nil, fmt.Errorf("object %s of a committed document is missing: %w", key, err)
		}
		return nil, objectstore.Classify(err, "read the file")
	}
	return readCloser{Reader: io.MultiReader(bytes.NewReader(head[:n]), obj), Closer: obj}, nil
}

type readCloser struct {
	io.Reader
	io.Closer
}

// Remove deletes an object and any unfinished multipart upload of it;
// one that does not exist is removed already.
func (o *Objects) Remove(ctx context.Context, key string) error {
	err := o.bucket.Client.RemoveObject(ctx, o.bucket.Name, key, minio.RemoveObjectOptions{})
	if err != nil && minio.ToErrorResponse(err).Code != "NoSuchKey" {
		return objectstore.Classify(err, "remove object")
	}
	if err := o.bucket.Client.RemoveIncompleteUpload(ctx, o.bucket.Name, key); err != nil &&
		minio.ToErrorResponse(err).Code != "NoSuchUpload" {
		return objectstore.Classify(err, "remove unfinished upload")
	}
	return nil
}
