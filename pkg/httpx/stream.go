package httpx

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"strconv"
)

// CostHeader is how a service tells the gateway what an answer cost, in
// requests of the client's rate-limit budget, when that is more than one:
// the gateway charges the difference and keeps the header from the
// client. An answer whose size depends on the data, not on the request (a
// passport), declares it, so that asking for it is not cheaper than
// reading as many bytes page by page.
const CostHeader = "Registry-Cost"

// CostPerRequest is the bytes an answer may carry for the price of one
// request: about what a page of a list or of the feed carries.
const CostPerRequest = 1 << 20

// CostOf is the requests an answer of about size bytes costs: one per
// started CostPerRequest, at least one.
func CostOf(size int64) int64 { return max(1, (size+CostPerRequest-1)/CostPerRequest) }

// Streamed is a 200 whose JSON body is written as it is produced rather
// than rendered whole first, so that an answer whose size depends on the
// data holds only its buffer in the process. Size is what the body will
// be, about (its cost, CostHeader); Write is called once the headers are
// sent, under the request's context. An error of Write after the first
// byte cannot become a problem any more: the connection is broken off, so
// the client sees a truncated body, never a body that looks whole.
type Streamed struct {
	Size  int64
	Write func(ctx context.Context, w io.Writer) error
}

// streamBuffer is what a streamed answer holds between writes.
const streamBuffer = 32 << 10

func encodeStreamed(ctx context.Context, w http.ResponseWriter, s Streamed) error {
	h := w.Header()
	h.Set("Content-Type", "application/json")
	if cost := CostOf(s.Size); cost > 1 {
		h.Set(CostHeader, strconv.FormatInt(cost, 10))
	}
	w.WriteHeader(http.StatusOK)
	buf := bufio.NewWriterSize(w, streamBuffer)
	err := s.Write(ctx, buf)
	if err == nil {
		err = buf.Flush()
	}
	if err != nil {
		RequestInfoFrom(ctx).SetErr(err)
		panic(http.ErrAbortHandler)
	}
	return nil
}
