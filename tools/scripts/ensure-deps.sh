#!/usr/bin/env bash
# Makes sure the datastore server binaries that tools/devinfra starts privately
# (PostgreSQL, Redis and Redis Sentinel) are installed. Idempotent and silent when nothing is
# missing. Installing must never leave a system-wide server running or a
# PostgreSQL cluster created: ours run from private data dirs on private ports.
set -euo pipefail

have_postgres() {
	local f
	for f in /usr/lib/postgresql/*/bin/initdb; do
		[[ -x $f && -x ${f%/initdb}/postgres ]] && return 0
	done
	command -v initdb >/dev/null 2>&1 && command -v postgres >/dev/null 2>&1
}

have_redis() {
	command -v redis-server >/dev/null 2>&1 || [[ -x /usr/bin/redis-server ]]
}

have_sentinel() {
	command -v redis-sentinel >/dev/null 2>&1 || [[ -x /usr/bin/redis-sentinel ]]
}

missing=()
have_postgres || missing+=(postgresql)
have_redis || missing+=(redis-server)
have_sentinel || missing+=(redis-sentinel)
((${#missing[@]} == 0)) && exit 0

sudo=()
if ((EUID != 0)); then
	if command -v sudo >/dev/null 2>&1; then
		sudo=(sudo)
	else
		echo "ensure-deps: missing ${missing[*]}; install as root with:" >&2
		echo "  apt-get install -y --no-install-recommends ${missing[*]}" >&2
		exit 1
	fi
fi
if ! command -v apt-get >/dev/null 2>&1; then
	echo "ensure-deps: missing ${missing[*]} and no apt-get here; install them with your package manager" >&2
	exit 1
fi

apt_install() {
	"${sudo[@]}" env DEBIAN_FRONTEND=noninteractive \
		apt-get install -y -q --no-install-recommends "$@"
}

# invoke-rc.d consults policy-rc.d; exit 101 means "do not start services".
# An existing policy is the machine owner's choice, so only add one if absent.
policy=/usr/sbin/policy-rc.d
if [[ ! -e $policy ]]; then
	printf '#!/bin/sh\nexit 101\n' | "${sudo[@]}" tee "$policy" >/dev/null
	"${sudo[@]}" chmod 0755 "$policy"
	trap '"${sudo[@]}" rm -f "$policy"' EXIT
fi

echo "ensure-deps: installing ${missing[*]}" >&2
"${sudo[@]}" apt-get update -q

if [[ " ${missing[*]} " == *" postgresql "* ]]; then
	# The server package's postinst creates a "main" cluster unless
	# postgresql-common says not to, and that setting lives in a conffile that
	# only exists once postgresql-common is installed.
	apt_install postgresql-common
	conf=/etc/postgresql-common/createcluster.conf
	if grep -Eq '^[#[:space:]]*create_main_cluster' "$conf"; then
		"${sudo[@]}" sed -Ei 's/^[#[:space:]]*create_main_cluster.*/create_main_cluster = false/' "$conf"
	else
		echo 'create_main_cluster = false' | "${sudo[@]}" tee -a "$conf" >/dev/null
	fi
fi
apt_install "${missing[@]}"

# policy-rc.d stops the services starting now, but on a systemd host the units
# are still enabled and would come up (on the default ports) at next boot.
if [[ -d /run/systemd/system ]]; then
	units=()
	for pkg in "${missing[@]}"; do units+=("$pkg.service"); done
	"${sudo[@]}" systemctl disable --now "${units[@]}" >/dev/null 2>&1 || true
fi

have_postgres || { echo "ensure-deps: PostgreSQL still not found after install" >&2; exit 1; }
have_redis || { echo "ensure-deps: redis-server still not found after install" >&2; exit 1; }
have_sentinel || { echo "ensure-deps: redis-sentinel still not found after install" >&2; exit 1; }
