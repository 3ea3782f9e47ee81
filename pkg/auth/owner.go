package auth

// Object-level authorization: every row remembers the client that created
// it (created_by), and an operation that changes or deletes a row declares
// that only that client, or a client holding registry:admin, may do so
// (endpoints.OwnerOnly in a service's transport.go). The declaration
// reaches the service and the store as a value, model.Guard, whose
// MayChange applies the rule; its caller comes from the verified
// principal (endpoints.CallerOf), where an admin is a client's own token:
// a service calling a peer never passes the admin scope on.
