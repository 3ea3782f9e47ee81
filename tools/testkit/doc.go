// Package testkit is what the registry's tests share, and only tests and
// test commands may import it (make lint refuses production code that
// does): private PostgreSQL, Redis and S3 servers per test run with a schema,
// key prefix and bucket per test (harness.go, s3.go), the API test client
// that checks every error is an RFC 9457 problem (client.go, bodies.go), the
// OpenAPI response checker (openapi.go), an OIDC issuer with real keys
// (issuer.go), and the waits, metric reads and TCP proxy several packages'
// tests share (wait.go, metrics.go, proxy.go). The service test kit built on it is testkit/servicetest.
package testkit
