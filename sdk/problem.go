package registry

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"
)

// Problem is an RFC 9457 answer of the registry, as an error:
//
//	var p *registry.Problem
//	if errors.As(err, &p) && p.Status == http.StatusConflict && p.ExistingID != "" { ... }
type Problem struct {
	Type      string       `json:"type"`
	Title     string       `json:"title"`
	Status    int          `json:"status"`
	Detail    string       `json:"detail,omitempty"`
	Instance  string       `json:"instance,omitempty"`
	RequestID string       `json:"request_id,omitempty"`
	Errors    []FieldError `json:"errors,omitempty"`
	// ErrorsOmitted is how many field problems beyond those in Errors
	// (the registry lists 50) there were.
	ErrorsOmitted int              `json:"errors_omitted,omitempty"`
	ExistingID    string           `json:"existing_id,omitempty"`
	Owner         string           `json:"owner,omitempty"`
	ReferencedBy  []Reference      `json:"referenced_by,omitempty"`
	Candidates    []map[string]any `json:"candidates,omitempty"`
	// Limit is, on a subscription-limit, how many webhook subscriptions
	// one client may have.
	Limit int `json:"limit,omitempty"`
	// RedactionEntry is, on a log entry whose event was redacted (gone),
	// the leaf of the entry that records the redaction.
	RedactionEntry *uint64 `json:"redaction_entry,omitempty"`
	// RetryAfter is the wait the registry asked for (429, 503), if any.
	RetryAfter time.Duration `json:"-"`
}

// FieldError is one field's problem; Field is the JSON name, with a path
// for nested values (external_ids[0].source_system).
type FieldError struct {
	Field   string `json:"field"`
	Message string `json:"message"`
}

// Reference is something that still points at a resource a delete refused.
type Reference struct {
	Kind string `json:"kind"`
	ID   string `json:"id"`
}

func (p *Problem) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "registry: %d %s", p.Status, p.Title)
	if p.Detail != "" {
		b.WriteString(": " + p.Detail)
	}
	for i, e := range p.Errors {
		if i == 0 {
			b.WriteString(" (")
		} else {
			b.WriteString("; ")
		}
		b.WriteString(e.Field + ": " + e.Message)
		if i == len(p.Errors)-1 {
			b.WriteString(")")
		}
	}
	if p.RequestID != "" {
		b.WriteString(" [request " + p.RequestID + "]")
	}
	return b.String()
}

// Kind is the last part of the problem's type: not-found, duplicate,
// validation-failed, still-referenced, not-owner, rate-limited, ...
func (p *Problem) Kind() string {
	return p.Type[strings.LastIndexByte(p.Type, ':')+1:]
}

// IsNotFound reports whether err is a registry 404.
func IsNotFound(err error) bool { return statusOf(err) == http.StatusNotFound }

// IsConflict reports whether err is a registry 409 (a duplicate names the
// holder in ExistingID).
func IsConflict(err error) bool { return statusOf(err) == http.StatusConflict }

func statusOf(err error) int {
	var p *Problem
	if asProblem(err, &p) {
		return p.Status
	}
	return 0
}

// problemFrom reads a non-2xx answer. A body that is not a problem (a
// proxy's page) still becomes one, with the status.
func problemFrom(resp *http.Response, body []byte) *Problem {
	p := &Problem{}
	if err := json.Unmarshal(body, p); err != nil || p.Status == 0 {
		p = &Problem{Status: resp.StatusCode, Title: http.StatusText(resp.StatusCode)}
		if s := strings.TrimSpace(string(body)); s != "" && len(s) < 200 {
			p.Detail = s
		}
	}
	if p.RequestID == "" {
		p.RequestID = resp.Header.Get("X-Request-Id")
	}
	p.RetryAfter = retryAfter(resp.Header)
	return p
}
