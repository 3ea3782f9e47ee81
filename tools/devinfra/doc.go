// Package devinfra starts and stops private PostgreSQL, Redis and MinIO
// server processes for local development (make run) and integration tests.
//
// Servers listen on 127.0.0.1 only, on a port of our choosing, and keep all
// their state under a caller-chosen data dir, so they never touch a system
// installation or its default ports. Each server is started with
// Pdeathsig=SIGKILL, so a killed parent does not leave one behind.
//
// PostgreSQL and Redis come from Debian packages (see
// tools/scripts/ensure-deps.sh). MinIO has no such package, so the pinned
// server is built from source once per machine into the user's cache (see
// EnsureMinioServer).
//
// The package is Linux-only: it relies on Pdeathsig and on the Debian layout
// of the PostgreSQL binaries.
package devinfra
