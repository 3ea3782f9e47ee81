// ETags and request conditions are the registry's validators: a single resource's strong
// ETag (a hash of exactly the JSON a GET answers), and the conditions a
// request carries (If-Match, If-None-Match), so that a write can refuse to
// change a resource its client has not seen in its current state (412) and
// a read can answer "not modified" (304). It knows no HTTP: the transport
// puts the conditions into the context.

package httpx

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"strings"

	"github.com/assetregistry/registry/pkg/apperr"
)

// Conditions are what a request says about the representation it expects
// (RFC 9110 section 13).
type Conditions struct {
	Method      string
	IfMatch     string
	IfNoneMatch string
}

type conditionsKey struct{}

// ContextWithConditions returns ctx carrying c.
func ContextWithConditions(ctx context.Context, c Conditions) context.Context {
	return context.WithValue(ctx, conditionsKey{}, c)
}

// ConditionsFrom returns the request's conditions (none outside a request).
func ConditionsFrom(ctx context.Context) Conditions {
	c, _ := ctx.Value(conditionsKey{}).(Conditions)
	return c
}

// ETagOf is a single resource's JSON body with its strong ETag: a hash of
// exactly those bytes, so the ETag changes whenever anything a GET would
// show changes (an organization's people included).
func ETagOf(v any) (body []byte, tag string, err error) {
	body, err = Marshal(v)
	if err != nil {
		return nil, "", err
	}
	return body, ETagForBody(body), nil
}

// ETagForBody is the strong ETag of a JSON body.
func ETagForBody(body []byte) string {
	sum := sha256.Sum256(body)
	return `"` + base64.RawURLEncoding.EncodeToString(sum[:18]) + `"`
}

// CheckIfMatch is the precondition of a write: when the request carries
// If-Match, current (the resource as a GET would show it now, read under
// the write's lock) must have one of the ETags it names, or the write is a
// 412 and changes nothing. Without If-Match it always passes.
func CheckIfMatch(ctx context.Context, current any) error {
	ifMatch := ConditionsFrom(ctx).IfMatch
	if ifMatch == "" {
		return nil
	}
	_, tag, err := ETagOf(current)
	if err != nil {
		return err
	}
	if !StrongMatch(ifMatch, tag) {
		return apperr.New(apperr.KindPreconditionFailed,
			"the resource has changed since the representation If-Match names; read it again").WithHeader("ETag", tag)
	}
	return nil
}

// IfMatchWanted reports whether the request states a precondition to check.
func IfMatchWanted(ctx context.Context) bool { return ConditionsFrom(ctx).IfMatch != "" }

// StrongMatch is If-Match's comparison: "*" or an identical strong ETag.
func StrongMatch(header, tag string) bool {
	for _, candidate := range splitTags(header) {
		if candidate == "*" || candidate == tag {
			return true
		}
	}
	return false
}

// WeakMatch is If-None-Match's comparison: "*" matches anything, and W/
// prefixes are ignored.
func WeakMatch(header, tag string) bool {
	for _, candidate := range splitTags(header) {
		if candidate == "*" || strings.TrimPrefix(candidate, "W/") == strings.TrimPrefix(tag, "W/") {
			return true
		}
	}
	return false
}

func splitTags(header string) []string {
	parts := strings.Split(header, ",")
	for i := range parts {
		parts[i] = strings.TrimSpace(parts[i])
	}
	return parts
}
