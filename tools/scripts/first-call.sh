#!/usr/bin/env bash
# The newcomer's first call, timed: a fresh clone of REPO (default: this
# repository) in DIR, `make run` there with empty Go build and module caches
# and an empty tool cache (the MinIO and NATS builds), all under DIR, and
# the seconds from `make run` to the README's first call answering 200 (a
# token from the identity provider, then GET /organizations through the
# gateway), with the load average before and after. Every port is a free
# one, so it runs beside another make run. Then it stops make run (Ctrl-C),
# kills what is left of the run's own process group and removes DIR.
#
#   tools/scripts/first-call.sh [DIR] [REPO]
#   KEEP=1   keep DIR (the caches, the clone, .local/logs)
#   LINGER=N keep make run going N seconds after the first call, so its
#            output shows what joined after it and when
set -euo pipefail
here=$(cd "$(dirname "$0")/../.." && pwd)
dir=${1:-/tmp/first-call}
repo=${2:-$here}
rm -rf "$dir"
mkdir -p "$dir"
git clone -q "$repo" "$dir/src"
export GOCACHE=$dir/gocache GOMODCACHE=$dir/gomod XDG_CACHE_HOME=$dir/xdg
ports=""
for name in api-gateway idp parties documents assets actions events postgres redis minio nats; do
	ports+="$name=0,"
	case $name in postgres | redis | minio | nats) ;; *) ports+="$name-metrics=0," ;; esac
done
ports+="minio-console=0"
log=$dir/run.log
load_before=$(cut -d' ' -f1-3 /proc/loadavg)
start=$(date +%s.%N)
(cd "$dir/src" && exec setsid make run RUN_ARGS="-ports $ports" >"$log" 2>&1) &
runner=$!
pgid=$runner # setsid made make the leader of a process group of its own
samples=()
stop() {
	[ -n "$pgid" ] && kill -INT -- "-$pgid" 2>/dev/null || true
	for _ in $(seq 60); do kill -0 "$runner" 2>/dev/null || break; sleep 1; done
	[ -n "$pgid" ] && kill -KILL -- "-$pgid" 2>/dev/null || true
	wait "$runner" 2>/dev/null || true
}
trap stop EXIT
env_file=$dir/src/.local/registry.env
first=""
while kill -0 "$runner" 2>/dev/null; do
	samples+=("$(cut -d' ' -f1 /proc/loadavg)")
	if [ -s "$env_file" ]; then
		# shellcheck disable=SC1090
		set -a; . "$env_file"; set +a
		token=$(curl -s --max-time 5 "$AUTH_URL/oidc/token" -d grant_type=client_credentials \
			-d client_id="$CLIENT_ID" -d client_secret="$CLIENT_SECRET" -d resource="$RESOURCE" |
			sed -nE 's/.*"access_token":"([^"]+)".*/\1/p' || true)
		if [ -n "$token" ]; then
			code=$(curl -s --max-time 5 -o /dev/null -w '%{http_code}' "$REGISTRY_URL/organizations" -H "Authorization: Bearer $token" || true)
			if [ "$code" = 200 ]; then
				first=$(echo "$(date +%s.%N) - $start" | bc)
				break
			fi
		fi
	fi
	sleep 1
done
if [ -z "$first" ]; then
	echo "make run ended before the first call answered; its output:" >&2
	tail -30 "$log" >&2
	exit 1
fi
mean=$(printf '%s\n' "${samples[@]}" | awk '{s+=$1} END {printf "%.1f", s/NR}')
printf 'first call 200 after %.0f s (load average before: %s; 1-minute load sampled each second while waiting: mean %s; after: %s)\n' \
	"$first" "$load_before" "$mean" "$(cut -d' ' -f1-3 /proc/loadavg)"
sleep "${LINGER:-0}"
echo "make run's output (without the summary's indented lines and go's downloads):"
grep -v -e '^  ' -e '^$' -e '^go: downloading' "$log" || true
stop
trap - EXIT
if [ "${KEEP:-}" != 1 ]; then
	chmod -R u+w "$dir" 2>/dev/null || true
	rm -rf "$dir"
fi
