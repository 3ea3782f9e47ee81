// Package apperr defines the errors a service layer returns. They carry a
// Kind that says what went wrong in domain terms (not found, invalid, ...)
// and nothing about HTTP, so services stay transport-free; the transport maps
// kinds to status codes in one place (package problem).
package apperr

import (
	"errors"
	"fmt"
)

// Kind classifies an error by what the caller can do about it.
type Kind int

const (
	KindInternal            Kind = iota // a bug or an unexpected failure; details stay in the log
	KindBadRequest                      // the request cannot be parsed at all
	KindUnauthenticated                 // no or invalid credentials
	KindForbidden                       // valid credentials without the needed permission
	KindNotFound                        // the addressed resource does not exist
	KindMethodNotAllowed                // the path exists, the method does not
	KindConflict                        // duplicates, still-referenced resources, ambiguous finds
	KindTooLarge                        // the request body is over its limit
	KindUnsupportedMedia                // wrong Content-Type
	KindInvalid                         // well-formed input with a problem in a particular field
	KindRateLimited                     // too many requests
	KindUnavailable                     // a dependency is down; retrying later may work
	KindRangeNotSatisfiable             // a byte range outside the representation
	KindPreconditionFailed              // If-Match names another representation than the current one
	KindRequestTimeout                  // the request body did not arrive in time
	KindHeaderTooLarge                  // the request's header fields are over their limit
	KindGone                            // what the request names existed once and is no longer kept (an expired feed cursor)
	KindClientClosed                    // the client hung up before the answer: nobody reads it, and it is no failure of the registry
)

// FieldError is a problem with one field of the input. Field is the JSON
// name, with a path for nested values (external_ids[0].source_system).
type FieldError struct {
	Field   string `json:"field"`
	Message string `json:"message"`
}

// Error is the error type services return.
type Error struct {
	Kind Kind
	// Code narrows the kind into a stable, documented problem type
	// ("duplicate", "still-referenced", ...); empty means the kind's default.
	Code   string
	Detail string       // safe to show to the caller
	Fields []FieldError // for KindInvalid (and KindBadRequest on query values)
	// Extensions are extra members of the problem body, e.g. existing_id on a
	// duplicate or candidates on an ambiguous find.
	Extensions map[string]any
	// Headers the transport should send, e.g. Allow or Retry-After.
	Headers map[string]string
	cause   error // for logs only, never shown to the caller
}

func (e *Error) Error() string {
	msg := e.Detail
	if msg == "" {
		msg = e.Kind.String()
	}
	for _, f := range e.Fields {
		msg += fmt.Sprintf("; %s: %s", f.Field, f.Message)
	}
	if e.cause != nil {
		msg += ": " + e.cause.Error()
	}
	return msg
}

func (e *Error) Unwrap() error { return e.cause }

// With adds a problem-body extension member and returns e.
func (e *Error) With(key string, value any) *Error {
	if e.Extensions == nil {
		e.Extensions = map[string]any{}
	}
	e.Extensions[key] = value
	return e
}

// WithHeader adds a response header and returns e.
func (e *Error) WithHeader(key, value string) *Error {
	if e.Headers == nil {
		e.Headers = map[string]string{}
	}
	e.Headers[key] = value
	return e
}

// New returns an error of the given kind with a caller-facing detail.
func New(kind Kind, detail string) *Error { return &Error{Kind: kind, Detail: detail} }

// Wrap returns an error of the given kind that keeps cause for the logs.
func Wrap(kind Kind, detail string, cause error) *Error {
	return &Error{Kind: kind, Detail: detail, cause: cause}
}

// NotFound says that the named resource does not exist.
func NotFound(resource, id string) *Error {
	return New(KindNotFound, fmt.Sprintf("%s %s does not exist", resource, id))
}

// Conflict is a duplicate, a still-referenced resource or an ambiguous find.
func Conflict(detail string) *Error { return New(KindConflict, detail) }

// Duplicate says that a resource with the same natural key exists already;
// existingID lets the caller go on with that one.
func Duplicate(detail, existingID string) *Error {
	e := Conflict(detail).With("existing_id", existingID)
	e.Code = "duplicate"
	return e
}

// NotPermitted is a 403 for a caller that sees what it addresses but whose
// organization's role does not let it do this (a read grant asked to record).
func NotPermitted(detail string) *Error {
	e := New(KindForbidden, detail)
	e.Code = "not-permitted"
	return e
}

// AssetNotVisible is the 409 of a create whose natural key is held by an
// asset the caller does not see: it names neither that asset nor its owner.
func AssetNotVisible(detail string) *Error {
	e := New(KindConflict, detail)
	e.Code = "asset-not-visible"
	return e
}

// NotOwner says that the caller may not change or delete what another
// client created (object-level authorization); owner is that client.
func NotOwner(resource, id, owner string) *Error {
	e := New(KindForbidden, fmt.Sprintf("%s %s was created by client %q: only that client or a client with registry:admin may change or delete it",
		resource, id, owner)).With("owner", owner)
	e.Code = "not-owner"
	return e
}

// StillReferenced says that a delete was refused because others point at the
// resource.
func StillReferenced(detail string) *Error {
	e := Conflict(detail)
	e.Code = "still-referenced"
	return e
}

// Ambiguous says that a find matched more than one resource.
func Ambiguous(detail string, candidates any) *Error {
	e := Conflict(detail).With("candidates", candidates)
	e.Code = "ambiguous-match"
	return e
}

// Invalid collects field problems of otherwise well-formed input.
func Invalid(fields ...FieldError) *Error {
	return &Error{Kind: KindInvalid, Detail: "the request has invalid fields", Fields: fields}
}

// BadRequest is input that cannot be parsed at all.
func BadRequest(detail string, fields ...FieldError) *Error {
	return &Error{Kind: KindBadRequest, Detail: detail, Fields: fields}
}

// Unavailable says that a dependency is down.
func Unavailable(what string, cause error) *Error {
	return Wrap(KindUnavailable, what+" is unavailable, retry later", cause)
}

// KindOf returns the kind of err; errors that are not *Error are internal.
func KindOf(err error) Kind {
	var e *Error
	if errors.As(err, &e) {
		return e.Kind
	}
	return KindInternal
}

// Is reports whether err is an *Error of the given kind.
func Is(err error, kind Kind) bool { return err != nil && KindOf(err) == kind }

func (k Kind) String() string {
	switch k {
	case KindBadRequest:
		return "bad request"
	case KindUnauthenticated:
		return "unauthenticated"
	case KindForbidden:
		return "forbidden"
	case KindNotFound:
		return "not found"
	case KindMethodNotAllowed:
		return "method not allowed"
	case KindConflict:
		return "conflict"
	case KindTooLarge:
		return "request too large"
	case KindUnsupportedMedia:
		return "unsupported media type"
	case KindInvalid:
		return "invalid input"
	case KindRateLimited:
		return "rate limited"
	case KindUnavailable:
		return "unavailable"
	case KindRangeNotSatisfiable:
		return "range not satisfiable"
	case KindPreconditionFailed:
		return "precondition failed"
	case KindRequestTimeout:
		return "request timeout"
	case KindHeaderTooLarge:
		return "header too large"
	case KindGone:
		return "gone"
	case KindClientClosed:
		return "client closed request"
	default:
		return "internal error"
	}
}

// Validation accumulates field errors; its zero value is ready to use.
type Validation struct{ fields []FieldError }

// Add records a problem with field.
func (v *Validation) Add(field, format string, args ...any) {
	v.fields = append(v.fields, FieldError{Field: field, Message: fmt.Sprintf(format, args...)})
}

// Fields returns what was recorded so far.
func (v *Validation) Fields() []FieldError { return v.fields }

// Err returns an Invalid error with the recorded fields, or nil if none.
func (v *Validation) Err() error {
	if len(v.fields) == 0 {
		return nil
	}
	return Invalid(v.fields...)
}
