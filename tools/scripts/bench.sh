#!/usr/bin/env bash
# make bench: Go benchmarks of the hot paths (over real PostgreSQL and Redis),
# then a load run against the real binaries. Results go to stdout and to
# .local/bench/ for comparison with benchstat.
set -euo pipefail
cd "$(dirname "$0")/../.."
out=.local/bench
mkdir -p "$out"
stamp=$(date -u +%Y%m%dT%H%M%SZ)

env_file=$(mktemp -u /tmp/testinfra.XXXXXX.env)
bin/testinfra -env-file "$env_file" & infra=$!
trap 'kill $infra 2>/dev/null; wait $infra 2>/dev/null || true' EXIT
until [ -s "$env_file" ]; do kill -0 $infra 2>/dev/null || { echo "datastores failed to start" >&2; exit 1; }; sleep 0.1; done
set -a; . "$env_file"; set +a

echo "== go test -bench (count ${BENCH_COUNT:-5})"
go test -run '^$' -bench . -benchmem -count "${BENCH_COUNT:-5}" \
	./pkg/httpx ./pkg/auth ./services/parties | tee "$out/go-$stamp.txt"

echo "== load run"
bin/loadtest -bin bin -duration "${LOAD_DURATION:-20s}" -workers "${LOAD_WORKERS:-16}" | tee "$out/load-$stamp.txt"
