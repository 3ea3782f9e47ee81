// Package faults is the fault suite (`make faults`, and part of `make
// test`): it starts the whole registry (tools/devstack) with toxiproxy
// between the registry's processes and their datastores and, under a
// bounded mixed load, pauses and kills PostgreSQL, kills Redis, kills a
// service, stops the gateway, feeds slow and oversized clients and cuts or
// slows the datastores' connections. For each fault it checks that every
// answer is the right problem (a 503 with Retry-After for a dependency
// that is down, never a 500, never a hang), that the registry recovers
// without a restart, that no acknowledged write is lost, that nothing is
// half-written and that a create retried with its Idempotency-Key is never
// duplicated. Its tests build only with the faults tag: `go test -tags
// faults ./tools/faults`. With -clusters (make cluster-faults) it runs the
// registry on clusters of PostgreSQL, Redis and NATS instead and fails each
// over under the same load and checks (cluster_test.go).
package faults
