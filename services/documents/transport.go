package documents

import (
	"bufio"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"hash"
	"hash/crc32"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"strconv"
	"strings"

	"github.com/go-kit/kit/endpoint"
	kithttp "github.com/go-kit/kit/transport/http"
	"github.com/google/uuid"

	"github.com/assetregistry/registry/pkg/apperr"
	"github.com/assetregistry/registry/pkg/endpoints"
	"github.com/assetregistry/registry/pkg/httpx"
)

// FileRoutes is the route table of an upload and a download, which run as
// long as their bytes take: they are bounded by their own limits (maxSize,
// the body deadlines of process.Stack, the upload timeout), not by the
// request timeout, so spec.go mounts them without it.
func FileRoutes(s Service, maxSize int64) []endpoints.Route {
	return []endpoints.Route{
		endpoints.On("POST", "/documents", endpoints.ByCaller(endpoints.Created(s.Upload, documentLocation)),
			uploadDecoder(maxSize), endpoints.IdempotencyKey),
		endpoints.OnServer("GET", "/documents/{id}/file", downloadFile(s), func(e endpoint.Endpoint) http.Handler {
			return kithttp.NewServer(e, func(_ context.Context, r *http.Request) (any, error) { return decodeDownload(r) },
				encodeFile, kithttp.ServerErrorEncoder(httpx.WriteProblem))
		}),
	}
}

// Routes is the route table of documents' metadata: per route the
// operation's endpoint, its decoder and its rules. spec.go mounts it under
// the request timeout.
func Routes(s Service) []endpoints.Route {
	return []endpoints.Route{
		endpoints.On("GET", "/documents", endpoints.ByCaller(endpoints.ListBy(s.FindBySHA256)), decodeFind),
		endpoints.On("GET", "/documents/{id}", endpoints.ByCaller(s.Get), httpx.PathID),
		endpoints.On("GET", "/documents/{id}/action_documents", endpoints.ByCaller(endpoints.ListBy(s.ActionDocuments)), decodeActionDocuments),
		endpoints.On("DELETE", "/documents/{id}", endpoints.Guarded(endpoints.NoContent(s.Delete)), httpx.PathID, endpoints.IfMatch, endpoints.OwnerOnly),
		endpoints.On("POST", VisiblePath, endpoints.ByCaller(s.Visible), httpx.Body[VisibleRequest]),
	}
}

// uploadDecoder reads an upload as a stream of parts: nothing of the file
// is read here; the service reads it straight into storage. The body may
// hold the file and httpx.UploadFormOverhead (the document_type part,
// part headers, boundaries); it is read at the pace process.Stack's body
// deadlines demand of uploads (a stalled client: 408).
func uploadDecoder(maxSize int64) httpx.Decoder[UploadForm] {
	return func(r *http.Request) (UploadForm, error) {
		if err := httpx.NoQuery(r); err != nil {
			return nil, err
		}
		mediaType, params, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
		if err != nil || mediaType != "multipart/form-data" || params["boundary"] == "" {
			return nil, apperr.New(apperr.KindUnsupportedMedia, fmt.Sprintf(
				"an upload is multipart/form-data with parts %s and %s (got Content-Type %q)",
				fieldDocumentType, fieldFile, r.Header.Get("Content-Type")))
		}
		limit := maxSize + httpx.UploadFormOverhead
		if r.ContentLength > limit {
			return nil, apperr.New(apperr.KindTooLarge, fmt.Sprintf("the upload is larger than %d bytes", limit))
		}
		// multipart reads 4 KiB at a time, and so would net/http from the
		// connection, a system call each (half the service's CPU while
		// uploads streamed in): the buffer in between reads the body in
		// large pieces.
		body := bufio.NewReaderSize(&limitedBody{r: r.Body, left: limit}, uploadReadBuffer)
		return &multipartForm{r: multipart.NewReader(body, params["boundary"]), fingerprint: sha256.New()}, nil
	}
}

// uploadReadBuffer is how much of an upload's body is read from the
// connection at a time (at most).
const uploadReadBuffer = 256 << 10

// limitedBody fails once more than its limit is read, whatever the
// framing (a chunked body has no Content-Length to refuse early).
type limitedBody struct {
	r    io.Reader
	left int64
}

func (l *limitedBody) Read(p []byte) (int, error) {
	if l.left <= 0 {
		return 0, &http.MaxBytesError{}
	}
	if int64(len(p)) > l.left {
		p = p[:l.left]
	}
	n, err := l.r.Read(p)
	l.left -= int64(n)
	return n, err
}

// multipartForm yields an upload's parts as they stream in, and
// fingerprints them on the way for Idempotency-Key (names, filenames,
// types, lengths and a CRC-32C of each part's bytes: what makes two uploads
// the same request, whatever their boundaries).
type multipartForm struct {
	r           *multipart.Reader
	parts       int
	fingerprint hash.Hash
	current     *countingCRC
}

func (f *multipartForm) Next() (Part, error) {
	f.closePart()
	p, err := f.r.NextPart()
	if errors.Is(err, io.EOF) {
		if f.parts == 0 {
			return Part{}, apperr.BadRequest("the body holds no multipart part; an upload has " +
				fieldDocumentType + " and " + fieldFile)
		}
		return Part{}, io.EOF
	}
	f.parts++
	if err != nil {
		return Part{}, uploadError(bodyError{err})
	}
	name := p.FormName()
	if name == "" {
		name = "(a part without a form-data name)"
	}
	part := Part{Name: name, Filename: p.FileName(), ContentType: p.Header.Get("Content-Type")}
	fmt.Fprintf(f.fingerprint, "%q %q %q ", part.Name, part.Filename, part.ContentType)
	f.current = &countingCRC{r: p, crc: crc32.New(crc32.MakeTable(crc32.Castagnoli))}
	part.Body = f.current
	return part, nil
}

func (f *multipartForm) closePart() {
	if f.current != nil {
		// Bytes the service did not read are skipped by NextPart; they
		// count as unread, which the same request repeats the same way.
		fmt.Fprintf(f.fingerprint, "%d %08x\n", f.current.n, f.current.crc.Sum32())
		f.current = nil
	}
}

// Fingerprint is the form's, once read to its end.
func (f *multipartForm) Fingerprint() (string, error) {
	f.closePart()
	return fmt.Sprintf("%x", f.fingerprint.Sum(nil)), nil
}

// Drain reads the form to its end without storing anything (a replayed
// request's file is compared, not kept).
func (f *multipartForm) Drain() error {
	for {
		p, err := f.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		if _, err := io.Copy(io.Discard, p.Body); err != nil {
			return uploadError(bodyError{err})
		}
	}
}

type countingCRC struct {
	r   io.Reader
	crc hash.Hash32
	n   int64
}

func (c *countingCRC) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.crc.Write(p[:n])
	c.n += int64(n)
	return n, err
}

func decodeDownload(r *http.Request) (downloadRequest, error) {
	id, err := httpx.PathID(r)
	return downloadRequest{
		ID:          id,
		Head:        isHead(r),
		Range:       ParseRange(r.Header.Get("Range")),
		IfNoneMatch: r.Header.Get("If-None-Match"),
		IfRange:     r.Header.Get("If-Range"),
	}, err
}

// encodeFile streams a download with the headers a client needs to cache
// it, resume it and save it under its name.
func encodeFile(_ context.Context, w http.ResponseWriter, response any) error {
	f := response.(fileResponse)
	h := w.Header()
	h.Set("ETag", etagOf(f.Document))
	// Documents never change; a client may keep them but asks again.
	h.Set("Cache-Control", "private, no-cache")
	h.Set("Accept-Ranges", "bytes")
	if f.NotModified {
		w.WriteHeader(http.StatusNotModified)
		return nil
	}
	if f.Body != nil {
		defer f.Body.Close()
	}
	h.Set("Content-Type", f.ContentType)
	// Client-supplied content served from an API host: never sniffed,
	// never run as a page.
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Content-Security-Policy", "default-src 'none'; sandbox")
	h.Set("Content-Disposition", contentDisposition(f.Document))
	status, length := http.StatusOK, f.Size
	if f.Range != nil {
		status, length = http.StatusPartialContent, f.Range.Length()
		h.Set("Content-Range", f.Range.ContentRange(f.Size))
	}
	h.Set("Content-Length", strconv.FormatInt(length, 10))
	w.WriteHeader(status)
	if f.Body == nil {
		return nil
	}
	_, err := io.Copy(w, f.Body)
	return err
}

// contentDisposition names the download safely for any filename (RFC
// 6266): an ASCII fallback in filename and the exact name, UTF-8 and
// percent-encoded, in filename*.
func contentDisposition(d Document) string {
	name := d.ID.String()
	if d.Filename != nil && *d.Filename != "" {
		name = *d.Filename
	}
	return `attachment; filename="` + asciiFallback(name) + `"; filename*=UTF-8''` + rfc5987(name)
}

func asciiFallback(name string) string {
	var b strings.Builder
	for _, c := range name {
		switch {
		case c == '"' || c == '\\' || c < 0x20 || c == 0x7f:
			b.WriteByte('_')
		case c > 0x7e:
			b.WriteByte('_')
		default:
			b.WriteRune(c)
		}
	}
	return b.String()
}

// rfc5987 percent-encodes every byte but the attr-chars of RFC 5987.
func rfc5987(s string) string {
	const hexDigits = "0123456789ABCDEF"
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if ('a' <= c && c <= 'z') || ('A' <= c && c <= 'Z') || ('0' <= c && c <= '9') ||
			strings.IndexByte("!#$&+-.^_`|~", c) >= 0 {
			b.WriteByte(c)
			continue
		}
		b.WriteByte('%')
		b.WriteByte(hexDigits[c>>4])
		b.WriteByte(hexDigits[c&0x0f])
	}
	return b.String()
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// decodeActionDocuments reads the document, the list's filter, from the
// path (checked first: a malformed id is a 400 whatever the query), then
// the page.
func decodeActionDocuments(r *http.Request) (req httpx.ListRequest[uuid.UUID], err error) {
	if req.Filter, err = httpx.PathUUID(r, "id"); err != nil {
		return req, err
	}
	q := httpx.ParseQuery(r, "limit", "cursor")
	req.Page = q.Page()
	return req, q.Err()
}

// decodeFind reads GET /documents: sha256, the list's filter, is required
// (the service checks its form).
func decodeFind(r *http.Request) (httpx.ListRequest[string], error) {
	q := httpx.ParseQuery(r, "sha256", "limit", "cursor")
	req := httpx.ListRequest[string]{Page: q.Page()}
	if v := q.String("sha256"); v != nil {
		req.Filter = *v
	} else {
		q.Invalid("sha256", "is required: the 64 lowercase hexadecimal digits of the SHA-256 sum of the documents' bytes")
	}
	return req, q.Err()
}
