// Conditions are what a read says about the representation it has: its
// If-None-Match, so that the response encoder can answer "not modified"
// (304). It knows no HTTP: the transport puts the conditions into the
// context. What a write must obey (If-Match) reaches the service as a
// value instead (model.Guard), and the ETags are model's (model.ETagOf).

package httpx

import "context"

// Conditions are what a request says about the representation it expects
// back (RFC 9110 section 13).
type Conditions struct {
	Method      string
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
