package model

import (
	"crypto/sha256"
	"encoding/base64"
	"strings"

	"github.com/assetregistry/registry/pkg/apperr"
)

// Caller is who makes a request, as the operations that record it take
// it: created_by and updated_by, a change event's actor and request id.
type Caller struct {
	// Subject is the token's sub; for a service calling on an
	// integration's behalf, the integration's.
	Subject string
	// Admin: the client holds registry:admin in a token of its own (a
	// service calling a peer never passes it on).
	Admin bool
	// RequestID is the request's id (X-Request-Id), for change events.
	RequestID string
	// Organization is the organization whose equipment the caller sees
	// (the token's organization claim): empty when it sees every row, as
	// a client bound to no organization and an admin do. See Access.
	Organization string
}

// Guard is what a write must obey, as its route declares it (a service's
// transport.go: endpoints.IfMatch, endpoints.OwnerOnly, endpoints.Private),
// handed to the service method and on to the store as a value, the way
// Kubernetes' storage takes its preconditions: a method that takes a Guard
// may answer 412 (IfMatch), 403 not-owner (OwnerOnly) or 404 (Private).
type Guard struct {
	Caller
	// IfMatch is the request's If-Match on a route that takes it: the
	// write changes nothing unless the resource, as a GET shows it, has
	// one of the ETags it names (412). Empty: no precondition.
	IfMatch string
	// OwnerOnly: only the client that created the row, or an admin, may
	// change or delete it; anyone else gets a 403 not-owner.
	OwnerOnly bool
	// Private: only the client that created the row, or an admin, sees
	// it at all; anyone else is told it does not exist (404).
	Private bool
}

// MayChange is the owner rule for a row of resource id that createdBy
// created: nil unless the route is OwnerOnly and the caller is neither the
// creator nor an admin, which is a 403 not-owner.
func (g Guard) MayChange(resource, id, createdBy string) error {
	if !g.OwnerOnly || g.owns(createdBy) {
		return nil
	}
	return apperr.NotOwner(resource, id, createdBy)
}

// Sees is the rule of a Private route: whether the caller may know of a
// row createdBy created (the creator or an admin); on other routes, every
// row is seen.
func (g Guard) Sees(createdBy string) bool { return !g.Private || g.owns(createdBy) }

func (g Guard) owns(createdBy string) bool {
	return g.Subject == createdBy || g.Admin
}

// Precondition checks If-Match against current, the resource as a GET
// shows it now (read under the write's lock): without If-Match it always
// passes; otherwise current must have one of the ETags it names, or the
// write is a 412 and changes nothing.
func (g Guard) Precondition(current any) error {
	if g.IfMatch == "" {
		return nil
	}
	_, tag, err := ETagOf(current)
	if err != nil {
		return err
	}
	if !StrongMatch(g.IfMatch, tag) {
		return apperr.New(apperr.KindPreconditionFailed,
			"the resource has changed since the representation If-Match names; read it again").WithHeader("ETag", tag)
	}
	return nil
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
