package httpx

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"mime"
	"net/http"
	"os"
	"time"

	"github.com/assetregistry/registry/pkg/apperr"
)

// ReadLimits bound what reading one request may cost: the size of its
// header and how long its body may take to arrive. Without a bound on the
// body, a client that stalls mid-body holds its connection (and, through
// the gateway, an upstream connection) for as long as it likes.
type ReadLimits struct {
	// MaxHeaderBytes bounds the request line and header fields (431 above).
	MaxHeaderBytes int
	// BodyTimeout is how long a body that is not an upload may take to
	// arrive, counted from its first read. JSON bodies are at most 1 MiB,
	// so a fixed time fits them.
	BodyTimeout time.Duration
	// An upload (a multipart/form-data body) may take as long as it needs
	// at a useful pace: at least UploadMinRate bytes per second, averaged
	// over each UploadRateWindow.
	UploadMinRate    int64
	UploadRateWindow time.Duration
}

// The defaults of ReadLimits.
const (
	DefaultMaxHeaderBytes   = 64 << 10
	DefaultBodyTimeout      = 30 * time.Second
	DefaultUploadMinRate    = 16 << 10
	DefaultUploadRateWindow = 30 * time.Second
)

// UploadFormOverhead is what an upload body may hold beyond its file: the
// other form fields, part headers and boundaries. The documents service
// and the gateway both add it to the file size limit.
const UploadFormOverhead = 64 << 10

// RegisterFlags adds http.max-header-bytes, http.body-timeout,
// http.upload-min-rate and http.upload-rate-window.
func (l *ReadLimits) RegisterFlags(fs *flag.FlagSet) {
	fs.IntVar(&l.MaxHeaderBytes, "http.max-header-bytes", DefaultMaxHeaderBytes,
		"largest request line and header fields, in bytes (over it: 431)")
	fs.DurationVar(&l.BodyTimeout, "http.body-timeout", DefaultBodyTimeout,
		"how long a request body other than an upload may take to arrive (over it: 408, connection closed)")
	fs.Int64Var(&l.UploadMinRate, "http.upload-min-rate", DefaultUploadMinRate,
		"slowest pace of an upload (multipart/form-data body), in bytes per second averaged over http.upload-rate-window (slower: 408, connection closed)")
	fs.DurationVar(&l.UploadRateWindow, "http.upload-rate-window", DefaultUploadRateWindow,
		"the window over which an upload's pace is averaged")
}

// Validate refuses limits that would refuse every request.
func (l ReadLimits) Validate() error {
	if l.MaxHeaderBytes < 0 || l.BodyTimeout < 0 || l.UploadMinRate < 0 || l.UploadRateWindow < 0 {
		return errors.New("http read limits must not be negative")
	}
	if l.UploadRateWindow > 0 && l.UploadRateWindow < time.Second {
		return fmt.Errorf("http.upload-rate-window %s is shorter than a second", l.UploadRateWindow)
	}
	return nil
}

// withDefaults fills what is unset (zero), so tests and tools that build
// a stack without flags get the production limits.
func (l ReadLimits) withDefaults() ReadLimits {
	if l.MaxHeaderBytes <= 0 {
		l.MaxHeaderBytes = DefaultMaxHeaderBytes
	}
	if l.BodyTimeout <= 0 {
		l.BodyTimeout = DefaultBodyTimeout
	}
	if l.UploadMinRate <= 0 {
		l.UploadMinRate = DefaultUploadMinRate
	}
	if l.UploadRateWindow <= 0 {
		l.UploadRateWindow = DefaultUploadRateWindow
	}
	return l
}

// IsUpload reports whether r's body is an upload: multipart/form-data.
// Uploads have their own size limit and are read at a minimum pace
// rather than within a fixed time.
func IsUpload(r *http.Request) bool {
	mediaType, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	return err == nil && mediaType == "multipart/form-data"
}

// BodyDeadlines bounds the time a request body takes to arrive, by
// limits: an upload must keep up UploadMinRate over every
// UploadRateWindow, any other body must be complete within BodyTimeout.
// Time the handler spends between reads (waiting for storage, say) is
// not counted against the client. A client that falls behind has its
// next body read fail with a *BodyTimeoutError (BodyProblem makes it a
// 408); the connection is closed after the answer. The bound is a read
// deadline on the connection (http.ResponseController), so a stalled
// read is interrupted, not just noticed at the next byte.
func BodyDeadlines(limits ReadLimits) func(http.Handler) http.Handler {
	limits = limits.withDefaults()
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Body == nil || r.Body == http.NoBody {
				next.ServeHTTP(w, r)
				return
			}
			b := &pacedBody{body: r.Body, rc: http.NewResponseController(w)}
			if IsUpload(r) {
				b.window = limits.UploadRateWindow
				b.windowBytes = int64(float64(limits.UploadMinRate) * limits.UploadRateWindow.Seconds())
				b.rule = fmt.Sprintf("arrived slower than %d bytes/s over %s", limits.UploadMinRate, limits.UploadRateWindow)
			} else {
				b.timeout = limits.BodyTimeout
				b.rule = fmt.Sprintf("did not arrive within %s", limits.BodyTimeout)
			}
			r.Body = b
			next.ServeHTTP(w, r)
		})
	}
}

// BodyTimeoutError is the error of a body read cut by BodyDeadlines.
type BodyTimeoutError struct{ Rule string }

func (e *BodyTimeoutError) Error() string { return "the request body " + e.Rule }

// Timeout marks the error as a timeout (net.Error's convention).
func (e *BodyTimeoutError) Timeout() bool { return true }

// pacedBody sets and moves the connection's read deadline as the body is
// read. A body of fixed time has one deadline, timeout after the first
// read; an upload has windows: each time windowBytes have arrived within
// one, the next starts. Only the client's time counts: when the handler
// pauses between reads (storage is slow to take the last part), the
// pause moves the deadline too.
type pacedBody struct {
	body io.ReadCloser
	rc   *http.ResponseController
	rule string

	timeout     time.Duration // a fixed time, or
	window      time.Duration // a pace: windowBytes in every window,
	windowBytes int64
	left        int64 // of which the current window still needs this many

	deadline time.Time
	lastRead time.Time // when the last read returned; zero before the first
	err      error
}

func (b *pacedBody) Read(p []byte) (int, error) {
	if b.err != nil {
		return 0, b.err
	}
	now := time.Now()
	switch {
	case b.lastRead.IsZero() && b.window > 0:
		b.left, b.deadline = b.windowBytes, now.Add(b.window)
	case b.lastRead.IsZero():
		b.deadline = now.Add(b.timeout)
	default:
		b.deadline = b.deadline.Add(now.Sub(b.lastRead))
	}
	// Best effort: a ResponseWriter that cannot set one (a recorder in
	// tests) leaves the body unbounded, as it was.
	_ = b.rc.SetReadDeadline(b.deadline)
	n, err := b.body.Read(p)
	b.lastRead = time.Now()
	if b.window > 0 && n > 0 {
		if b.left -= int64(n); b.left <= 0 {
			b.left, b.deadline = b.windowBytes, b.lastRead.Add(b.window)
		}
	}
	// When the body is complete, net/http lifts the deadline itself before
	// it starts watching the connection for the client going away (so the
	// deadline never cancels the request's context after the body).
	if err != nil && errors.Is(err, os.ErrDeadlineExceeded) {
		b.err = &BodyTimeoutError{Rule: b.rule}
		return n, b.err
	}
	return n, err
}

func (b *pacedBody) Close() error { return b.body.Close() }

// BodyProblem classifies an error from reading a request body: over its
// limit (413), cut by BodyDeadlines (408, closing the connection), or nil
// for any other error (the client went away, a malformed chunk).
func BodyProblem(err error) *apperr.Error {
	var maxBytes *http.MaxBytesError
	var timeout *BodyTimeoutError
	switch {
	case errors.As(err, &maxBytes):
		if maxBytes.Limit > 0 {
			return apperr.New(apperr.KindTooLarge, fmt.Sprintf("the request body is larger than %d bytes", maxBytes.Limit))
		}
		return apperr.New(apperr.KindTooLarge, "the request body is larger than its limit")
	case errors.As(err, &timeout):
		return apperr.Wrap(apperr.KindRequestTimeout, timeout.Error(), err).WithHeader("Connection", "close")
	}
	return nil
}
