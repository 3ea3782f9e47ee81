#!/usr/bin/env bash
# The restore drill (make restore-drill): what production's Barman Cloud
# backups (charts/registry, datastores.postgres.backup) promise, done on
# loopback with the same tools and restored, so the promise is one that has
# been kept at least once on this machine.
#
# A private PostgreSQL archives its WAL with barman-cloud-wal-archive into a
# private MinIO and gets a base backup with barman-cloud-backup. A writer
# appends to a table that plays the events log's writes (an append-only hash
# chain, every 100th entry recorded as a checkpoint), one acknowledged
# transaction at a time, noting when each was acknowledged. Halfway the drill
# notes a target time; then the primary is killed (SIGKILL, as if its disks
# were gone). Two restores into fresh data directories follow, each with
# barman-cloud-restore and barman-cloud-wal-restore:
#
#   1. to the target time (recovery_target_time): every write acknowledged
#      before it must be there, none begun after it, the chain and every
#      checkpoint must verify. The time from the first restore command to a
#      promoted server is the RTO printed.
#   2. to the end of the archive, as after losing every instance: the
#      acknowledged writes missing are the RPO (bounded by archive_timeout).
#
# The registry's own schemas are not used: the drill proves the archive and
# the restore, which do not depend on what the tables hold.
#
# Needs root (it installs barman-cli-cloud when missing and runs PostgreSQL
# as the postgres user). DRILL_SECONDS (default 15) is the length of each
# half of the writes.
set -euo pipefail

root=$(cd "$(dirname "$0")/../.." && pwd)
seconds=${DRILL_SECONDS:-15}
archive_timeout=5

if ((EUID != 0)); then
	echo "restore-drill: run as root (it installs barman-cli-cloud and runs PostgreSQL as postgres)" >&2
	exit 1
fi
if ! dpkg -s barman-cli-cloud >/dev/null 2>&1; then
	DEBIAN_FRONTEND=noninteractive apt-get install -y -q barman-cli-cloud >/dev/null
fi
pgbin=$(dirname "$(ls -d /usr/lib/postgresql/*/bin/initdb | sort -V | tail -1)")
minio=$(cd "$root" && go run ./tools/devinfra/cmd/ensure-server minio)

work=$(mktemp -d /tmp/restore-drill.XXXXXX)
chmod 755 "$work"
pids=()
pgdirs=()
cleanup() {
	local d p
	for d in "${pgdirs[@]}"; do
		[[ -f $d/postmaster.pid ]] && runuser -u postgres -- "$pgbin/pg_ctl" -D "$d" -m immediate stop >/dev/null 2>&1 || true
	done
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
	rm -rf "$work"
}
trap cleanup EXIT

free_port() { /usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
now() { date +%s.%N; }
elapsed() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1f", b - a }'; }

# MinIO, private, on loopback.
export AWS_ACCESS_KEY_ID=drill AWS_SECRET_ACCESS_KEY=$(openssl rand -hex 16) AWS_DEFAULT_REGION=us-east-1
mport=$(free_port)
s3=http://127.0.0.1:$mport
mkdir -p "$work/minio" "$work/minio.config"
env MINIO_ROOT_USER=$AWS_ACCESS_KEY_ID MINIO_ROOT_PASSWORD=$AWS_SECRET_ACCESS_KEY MINIO_UPDATE=off \
	MINIO_CALLHOME_ENABLE=off MINIO_BROWSER=off MINIO_CI_CD=on \
	"$minio" --config-dir "$work/minio.config" --certs-dir "$work/minio.config/certs" --anonymous \
	server --address "127.0.0.1:$mport" "$work/minio" >"$work/minio.log" 2>&1 &
pids+=($!)
for _ in $(seq 100); do curl -fs "$s3/minio/health/ready" >/dev/null && break; sleep 0.1; done
/usr/bin/python3 -c "import boto3; boto3.client('s3', endpoint_url='$s3').create_bucket(Bucket='drill')"

# The barman tools run as postgres (archive_command and restore_command run in
# the server's environment, which carries the object store's credentials).
as_pg() {
	runuser -u postgres -- env AWS_ACCESS_KEY_ID="$AWS_ACCESS_KEY_ID" AWS_SECRET_ACCESS_KEY="$AWS_SECRET_ACCESS_KEY" \
		AWS_DEFAULT_REGION="$AWS_DEFAULT_REGION" "$@"
}
sock=$work/sock
mkdir -p "$sock" "$work/logs" && chown postgres "$sock" "$work/logs"
sql() { local port=$1; shift; psql -XAtq -v ON_ERROR_STOP=1 -h "$sock" -p "$port" -U postgres -d drill "$@"; }
# start_pg DIR PORT: starts PostgreSQL on DIR, reachable only on the socket.
start_pg() {
	cat >>"$1/postgresql.auto.conf" <<-EOF
		port = $2
		listen_addresses = ''
		unix_socket_directories = '$sock'
	EOF
	pgdirs+=("$1")
	as_pg "$pgbin/pg_ctl" -D "$1" -l "$work/logs/$(basename "$1").log" -w -t 600 start >/dev/null
}

# The primary, archiving each WAL segment as it fills or archive_timeout passes.
primary=$work/primary
pport=$(free_port)
install -d -o postgres -m 700 "$primary"
as_pg "$pgbin/initdb" -D "$primary" -U postgres -A trust --no-sync >/dev/null
cat >>"$primary/postgresql.conf" <<EOF
wal_level = replica
archive_mode = on
archive_timeout = ${archive_timeout}s
archive_command = 'barman-cloud-wal-archive --endpoint-url $s3 --gzip s3://drill registry %p'
EOF
start_pg "$primary" "$pport"
psql -XAtq -h "$sock" -p "$pport" -U postgres -d postgres -c 'CREATE DATABASE drill' >/dev/null
sql "$pport" >/dev/null <<'EOF'
CREATE TABLE log (
  seq  bigint PRIMARY KEY,
  at   timestamptz NOT NULL DEFAULT clock_timestamp(),
  body text NOT NULL,
  hash bytea NOT NULL          -- sha256(previous hash || body): the chain
);
CREATE TABLE checkpoint (seq bigint PRIMARY KEY, hash bytea NOT NULL);
EOF

acked=$work/acked   # "seq time" of each write once the server answered it
started=$work/started
: >"$acked"
: >"$started"
next=1
# write_for SECONDS: one write after another, each a transaction of its own
# (the entry and, each 100th, its checkpoint), for that long.
write_for() {
	local until
	until=$(awk -v n="$(now)" -v s="$1" 'BEGIN { printf "%.3f", n + s }')
	while awk -v n="$(now)" -v u="$until" 'BEGIN { exit !(n < u) }'; do
		echo "$next $(now)" >>"$started"
		sql "$pport" >/dev/null <<-EOF
			BEGIN;
			INSERT INTO log (seq, body, hash)
			SELECT $next, 'action $next', sha256(coalesce((SELECT hash FROM log WHERE seq = $next - 1), ''::bytea) || convert_to('action $next', 'UTF8'));
			INSERT INTO checkpoint SELECT seq, hash FROM log WHERE seq = $next AND seq % 100 = 0;
			COMMIT;
		EOF
		echo "$next $(now)" >>"$acked"
		next=$((next + 1))
	done
}

write_for 3
t0=$(now)
as_pg barman-cloud-backup --endpoint-url "$s3" --gzip --immediate-checkpoint -h "$sock" -p "$pport" -U postgres s3://drill registry
backup_s=$(elapsed "$t0" "$(now)")
write_for "$seconds"
target=$(date -u +"%Y-%m-%d %H:%M:%S.%6N+00")
target_epoch=$(now)
sleep 0.2
write_for "$seconds"
# Losing the primary: its disks are gone, only the archive remains.
kill -9 "$(head -1 "$primary/postmaster.pid")"
rm -f "$primary/postmaster.pid"
pgdirs=("${pgdirs[@]/$primary/}")
total=$((next - 1))

# verify PORT: the chain recomputed from the first entry matches every stored
# hash and every checkpoint; prints "entries lastseq".
verify() {
	local bad
	bad=$(sql "$1" <<-'EOF'
		WITH RECURSIVE chain(seq, hash) AS (
		  SELECT seq, sha256(convert_to(body, 'UTF8')) FROM log WHERE seq = 1
		  UNION ALL
		  SELECT l.seq, sha256(c.hash || convert_to(l.body, 'UTF8')) FROM chain c JOIN log l ON l.seq = c.seq + 1
		)
		SELECT (SELECT count(*) FROM log) - (SELECT count(*) FROM chain c JOIN log l USING (seq) WHERE c.hash = l.hash)
		     + (SELECT count(*) FROM checkpoint k LEFT JOIN log l USING (seq) WHERE l.hash IS DISTINCT FROM k.hash);
	EOF
	)
	if [[ $bad != 0 ]]; then
		echo "restore-drill: FAIL: $bad entries or checkpoints do not verify" >&2
		exit 1
	fi
	sql "$1" -c "SELECT count(*), coalesce(max(seq), 0) FROM log" | tr '|' ' '
}

# restore DIR PORT [TARGET]: the latest base backup and the archived WAL into
# DIR, up to TARGET (or the archive's end), promoted; prints the seconds taken.
restore() {
	local dir=$1 port=$2 target=${3:-} t id
	t=$(now)
	install -d -o postgres -m 700 "$dir"
	id=$(as_pg barman-cloud-backup-list --endpoint-url "$s3" --format json s3://drill registry |
		/usr/bin/python3 -c 'import json, sys; print(json.load(sys.stdin)["backups_list"][-1]["backup_id"])')
	as_pg barman-cloud-restore --endpoint-url "$s3" s3://drill registry "$id" "$dir" >/dev/null
	cat >>"$dir/postgresql.auto.conf" <<-EOF
		archive_mode = off
		restore_command = 'barman-cloud-wal-restore --endpoint-url $s3 s3://drill registry %f %p'
		recovery_target_action = promote
	EOF
	[[ -n $target ]] && echo "recovery_target_time = '$target'" >>"$dir/postgresql.auto.conf"
	touch "$dir/recovery.signal" && chown postgres "$dir/recovery.signal"
	start_pg "$dir" "$port"
	until [[ $(sql "$port" -c 'SELECT pg_is_in_recovery()' 2>/dev/null) == f ]]; do sleep 0.1; done
	elapsed "$t" "$(now)"
}

# 1. To the target time.
rport=$(free_port)
rto=$(restore "$work/at-target" "$rport" "$target")
out=$(verify "$rport")
read -r entries last <<<"$out"
before=$(awk -v t="$target_epoch" '$2 < t { n = $1 } END { print n + 0 }' "$acked")
after=$(awk -v t="$target_epoch" '$2 > t { print $1; exit }' "$started")
if ((last < before)); then
	echo "restore-drill: FAIL: writes up to $before were acknowledged before $target; the restore holds $last" >&2
	exit 1
fi
if [[ -n $after ]] && ((last >= after)); then
	echo "restore-drill: FAIL: the restore to $target holds write $last, begun after it (from $after on)" >&2
	exit 1
fi
size=$(du -sm "$work/at-target" | cut -f1)

# 2. To the end of the archive.
eport=$(free_port)
rto_end=$(restore "$work/at-end" "$eport")
out=$(verify "$eport")
read -r _ last_end <<<"$out"
last_ack=$(tail -1 "$acked")
lost=$((total - last_end))
rpo=$(awk -v s="$last_end" -v last="${last_ack#* }" '$1 == s { t = $2 } END { printf "%.1f", (t ? last - t : 0) }' "$acked")

cat <<EOF
restore drill: $total acknowledged writes to a table playing the events log (hash chain, checkpoint every 100)
  base backup (barman-cloud-backup):          ${backup_s} s
  point in time ($target):
    restored $entries entries: every one of the $before acknowledged before it, none begun after it; chain and checkpoints verify
    RTO (barman-cloud-restore, WAL replay, promotion; ${size} MB): ${rto} s
  whole primary lost, restored to the end of the archive:
    restored up to write $last_end of $total; chain and checkpoints verify; RTO ${rto_end} s
    RPO: $lost acknowledged writes lost, the last ${rpo} s before the loss (archive_timeout ${archive_timeout} s bounds it)
EOF
