package bench

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"mime/multipart"
	"time"

	"github.com/minio/minio-go/v7"

	"github.com/assetregistry/registry/pkg/objectstore"
	"github.com/assetregistry/registry/services/documents"
)

// upload is what the upload rows send: one file of Options.UploadSize
// random bytes, the multipart/form-data body an integration would send
// with it, and the parts around a file to stream a larger one.
type upload struct {
	file        []byte // the file: what PutObject stores
	body        []byte // the whole form holding file
	contentType string // multipart/form-data with the form's boundary
	head, tail  []byte // the form around a file of any size
}

// documentType is the upload's document_type part.
const documentType = "bench_upload"

func newUpload(size int64) (upload, error) {
	u := upload{file: make([]byte, size)}
	fillRandom(u.file, 1)
	var buf bytes.Buffer
	form := multipart.NewWriter(&buf)
	u.contentType = form.FormDataContentType()
	if err := form.WriteField("document_type", documentType); err != nil {
		return upload{}, err
	}
	if _, err := form.CreateFormFile("file", "bench.bin"); err != nil {
		return upload{}, err
	}
	u.head = bytes.Clone(buf.Bytes())
	buf.Reset()
	if err := form.Close(); err != nil {
		return upload{}, err
	}
	u.tail = bytes.Clone(buf.Bytes())
	u.body = append(append(append([]byte{}, u.head...), u.file...), u.tail...)
	return u, nil
}

// stream is the form holding a file of size bytes, generated as it is
// read.
func (u upload) stream(size int64) io.Reader {
	return io.MultiReader(bytes.NewReader(u.head), newFileReader(size), bytes.NewReader(u.tail))
}

func (u upload) streamLength(size int64) int64 { return int64(len(u.head)) + size + int64(len(u.tail)) }

// newFileReader yields size bytes that neither compress nor repeat within
// a part: a 1 MiB random block, each pass through it shifted by one byte.
func newFileReader(size int64) io.Reader {
	return io.LimitReader(&fileReader{block: randomBlock}, size)
}

var randomBlock = func() []byte {
	b := make([]byte, 1<<20)
	fillRandom(b, 2)
	return b
}()

type fileReader struct {
	block []byte
	off   int64 // bytes read so far
}

// Read makes byte i of the file block[(i + i/len(block)) % len(block)].
func (f *fileReader) Read(p []byte) (int, error) {
	size := int64(len(f.block))
	n := 0
	for n < len(p) {
		pass, pos := f.off/size, f.off%size
		start := (pos + pass) % size
		k := copy(p[n:], f.block[start:min(size, start+size-pos)])
		n += k
		f.off += int64(k)
	}
	return n, nil
}

func fillRandom(b []byte, seed uint64) {
	r := rand.New(rand.NewPCG(seed, seed))
	for i := 0; i+8 <= len(b); i += 8 {
		v := r.Uint64()
		for k := range 8 {
			b[i+k] = byte(v >> (8 * k))
		}
	}
}

// documentsBucket is the documents service's bucket (s3.bucket defaults
// to the service's name).
const documentsBucket = "documents"

// connectS3 is the client the documents service makes for the stack's
// object store (objectstore.Open, the bucket included).
func connectS3(ctx context.Context, endpoint, accessKey, secretKey, region string) (*minio.Client, error) {
	b, err := objectstore.Open(ctx, objectstore.Config{Endpoint: "http://" + endpoint, Bucket: documentsBucket,
		Region: region, AccessKey: accessKey, SecretKey: secretKey, StartupWait: time.Minute})
	if err != nil {
		return nil, err
	}
	return b.Client, nil
}

// putObject stores size bytes of r under key in the documents bucket with
// the options the documents service puts its files with.
func (e *Env) putObject(ctx context.Context, key string, r io.Reader, size int64) error {
	_, err := e.s3.PutObject(ctx, documentsBucket, key, r, size, documents.StorageOptions("application/octet-stream"))
	return err
}

// emptyBucket removes every object of the documents bucket, the documents
// service's and PutObject's alike, so that the upload rows do not fill the
// disk over the rounds. (The documents' rows stay; nothing reads them.)
func emptyBucket(ctx context.Context, e *Env) error {
	objects := e.s3.ListObjects(ctx, documentsBucket, minio.ListObjectsOptions{Recursive: true})
	var errs []error
	for r := range e.s3.RemoveObjects(ctx, documentsBucket, objects, minio.RemoveObjectsOptions{}) {
		errs = append(errs, r.Err)
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("empty the documents bucket: %w", err)
	}
	return nil
}

func uploadBytes(e *Env) int64 { return int64(len(e.upload.file)) }
func largeBytes(e *Env) int64  { return e.LargeUpload }
