// Problems: RFC 9457 problem details. Every error response of every
// service and of the gateway goes through WriteProblem, so the body shape, the
// type URIs and the status mapping live in exactly one place.

package httpx

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"strconv"

	"github.com/assetregistry/registry/pkg/apperr"
	"github.com/assetregistry/registry/pkg/model"
)

// ProblemContentType is the media type of every error body.
const ProblemContentType = "application/problem+json"

// ProblemTypePrefix starts every problem type URI. The URIs are fixed names, never
// built from the request's host, so clients can switch on them.
const ProblemTypePrefix = "urn:asset-registry:problem:"

// Problem is the RFC 9457 body.
type Problem struct {
	Type       string              `json:"type"`
	Title      string              `json:"title"`
	Status     int                 `json:"status"`
	Detail     string              `json:"detail,omitempty"`
	Instance   string              `json:"instance"`
	RequestID  string              `json:"request_id"`
	Errors     []apperr.FieldError `json:"errors,omitempty"`
	Extensions map[string]any      `json:"-"`
	Headers    map[string]string   `json:"-"`
}

// MarshalJSON flattens the extension members into the top-level object, as
// RFC 9457 section 3.2 prescribes.
func (p Problem) MarshalJSON() ([]byte, error) {
	type plain Problem
	base, err := model.Marshal(plain(p))
	if err != nil || len(p.Extensions) == 0 {
		return base, err
	}
	members := map[string]json.RawMessage{}
	if err := json.Unmarshal(base, &members); err != nil {
		return nil, err
	}
	for k, v := range p.Extensions {
		if _, taken := members[k]; taken {
			continue // standard members win over extensions
		}
		raw, err := model.Marshal(v)
		if err != nil {
			return nil, err
		}
		members[k] = raw
	}
	return model.Marshal(members)
}

type kindInfo struct {
	status int
	slug   string
	title  string
}

var kinds = map[apperr.Kind]kindInfo{
	apperr.KindBadRequest:          {http.StatusBadRequest, "bad-request", "Bad Request"},
	apperr.KindUnauthenticated:     {http.StatusUnauthorized, "unauthorized", "Unauthorized"},
	apperr.KindForbidden:           {http.StatusForbidden, "forbidden", "Forbidden"},
	apperr.KindNotFound:            {http.StatusNotFound, "not-found", "Not Found"},
	apperr.KindMethodNotAllowed:    {http.StatusMethodNotAllowed, "method-not-allowed", "Method Not Allowed"},
	apperr.KindConflict:            {http.StatusConflict, "conflict", "Conflict"},
	apperr.KindTooLarge:            {http.StatusRequestEntityTooLarge, "payload-too-large", "Content Too Large"},
	apperr.KindUnsupportedMedia:    {http.StatusUnsupportedMediaType, "unsupported-media-type", "Unsupported Media Type"},
	apperr.KindInvalid:             {http.StatusUnprocessableEntity, "validation-failed", "Unprocessable Content"},
	apperr.KindRateLimited:         {http.StatusTooManyRequests, "rate-limited", "Too Many Requests"},
	apperr.KindUnavailable:         {http.StatusServiceUnavailable, "unavailable", "Service Unavailable"},
	apperr.KindInternal:            {http.StatusInternalServerError, "internal", "Internal Server Error"},
	apperr.KindRangeNotSatisfiable: {http.StatusRequestedRangeNotSatisfiable, "range-not-satisfiable", "Range Not Satisfiable"},
	apperr.KindPreconditionFailed:  {http.StatusPreconditionFailed, "precondition-failed", "Precondition Failed"},
	apperr.KindRequestTimeout:      {http.StatusRequestTimeout, "request-timeout", "Request Timeout"},
	apperr.KindHeaderTooLarge:      {http.StatusRequestHeaderFieldsTooLarge, "header-too-large", "Request Header Fields Too Large"},
	apperr.KindGone:                {http.StatusGone, "gone", "Gone"},
	// 499 is no standard status; proxies (nginx first) use it for this, and
	// the client never sees it: it is for the access log and the metrics.
	apperr.KindClientClosed: {StatusClientClosedRequest, "client-closed-request", "Client Closed Request"},
}

// StatusClientClosedRequest is the status logged and counted for a request
// whose client hung up before the answer.
const StatusClientClosedRequest = 499

// MaxFieldErrors bounds the errors a problem body lists: a body of
// thousands of unknown members would otherwise answer with a body larger
// than itself. The rest are counted in errors_omitted.
const MaxFieldErrors = 50

// codeTitles name the narrower conflict problems.
var codeTitles = map[string]string{
	"duplicate":          "Duplicate",
	"still-referenced":   "Still Referenced",
	"ambiguous-match":    "Ambiguous Match",
	"not-owner":          "Not Owner",
	"cursor-expired":     "Cursor Expired",
	"subscription-limit": "Subscription Limit",
}

// defaultRetryAfter is sent when an error asks to retry without saying when.
var defaultRetryAfter = map[apperr.Kind]int{
	apperr.KindUnavailable: 5,
	apperr.KindRateLimited: 1,
}

// StatusOf returns the HTTP status for err.
func StatusOf(err error) int { return kinds[apperr.KindOf(err)].status }

// ProblemFrom builds the problem for err in the context of a request. Errors that
// are not *apperr.Error become a bare 500: their text may hold SQL, hosts or
// other internals, so it goes to the log only.
func ProblemFrom(ctx context.Context, err error) Problem {
	info := RequestInfoFrom(ctx)
	var e *apperr.Error
	if !errors.As(err, &e) {
		e = &apperr.Error{Kind: apperr.KindInternal}
	}
	k, ok := kinds[e.Kind]
	if !ok {
		k = kinds[apperr.KindInternal]
	}
	p := Problem{
		Type:       ProblemTypePrefix + k.slug,
		Title:      k.title,
		Status:     k.status,
		Detail:     e.Detail,
		Instance:   info.Path,
		RequestID:  info.ID,
		Errors:     e.Fields,
		Extensions: e.Extensions,
		Headers:    e.Headers,
	}
	if e.Code != "" {
		p.Type = ProblemTypePrefix + e.Code
		if t, ok := codeTitles[e.Code]; ok {
			p.Title = t
		}
	}
	if omitted := len(p.Errors) - MaxFieldErrors; omitted > 0 {
		p.Errors = p.Errors[:MaxFieldErrors:MaxFieldErrors]
		p.Detail += fmt.Sprintf(" (the first %d problems are listed; %d more are not)", MaxFieldErrors, omitted)
		ext := make(map[string]any, len(p.Extensions)+1)
		maps.Copy(ext, p.Extensions)
		ext["errors_omitted"] = omitted
		p.Extensions = ext
	}
	if e.Kind == apperr.KindInternal {
		p.Detail = "an unexpected error occurred; quote the request_id when reporting it"
	}
	if secs, ok := defaultRetryAfter[e.Kind]; ok {
		if _, set := p.Headers["Retry-After"]; !set {
			h := map[string]string{"Retry-After": strconv.Itoa(secs)}
			for k, v := range p.Headers {
				h[k] = v
			}
			p.Headers = h
		}
	}
	return p
}

// clientClosed is err, or, when the request's client hung up and err is
// only what that cancelled below (a query, a peer's call), a
// KindClientClosed that keeps err for the log: such a request is no
// internal error, and counting it as a 500 would page someone for a
// client's impatience.
func clientClosed(ctx context.Context, err error) error {
	if ctx.Err() == nil || !errors.Is(err, context.Canceled) || apperr.KindOf(err) != apperr.KindInternal {
		return err
	}
	return apperr.Wrap(apperr.KindClientClosed, "the client closed the request before it was answered", err)
}

// WriteProblem sends err as a problem response and records it for the access log.
// It is also the go-kit ServerErrorEncoder of every service.
func WriteProblem(ctx context.Context, err error, w http.ResponseWriter) {
	err = clientClosed(ctx, err)
	RequestInfoFrom(ctx).SetErr(err)
	p := ProblemFrom(ctx, err)
	h := w.Header()
	for k, v := range p.Headers {
		h.Set(k, v)
	}
	h.Set("Content-Type", ProblemContentType)
	h.Set("Cache-Control", "no-store")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Del("Content-Length")
	w.WriteHeader(p.Status)
	_ = writeJSON(w, p)
}
