#!/usr/bin/env bash
# Fetches the official NATS chart at the version charts/registry/nats-chart.yaml pins, once per
# machine, into the cache beside the chart tools (outside the work tree), and prints where it is:
#
#   NATS_CHART=…/nats-chart-2.14.2
#
# The first of these that works: NATS_CHART_REPO, a git directory of github.com/nats-io/k8s
# (the pinned commit's helm/charts/nats); the NATS Helm repository (helm pull); the Go module
# proxy (the same commit as a module, which the proxy serves for any public repository). A
# finished chart is a directory renamed into place, under a lock, as chart-tools.sh does. Exit
# status 3: no source could be reached (a closed network), as against 1 for anything else.
set -euo pipefail

root=$(cd "$(dirname "$0")/../.." && pwd)
pin=$root/charts/registry/nats-chart.yaml
field() { sed -n "s/^$1: *//p" "$pin"; }
version=$(field version) repository=$(field repository) source=$(field source) commit=$(field commit)
[[ -n $version && -n $repository && -n $source && -n $commit ]] || { echo "nats-chart: $pin lacks a field" >&2; exit 1; }

cache=${XDG_CACHE_HOME:-$HOME/.cache}/asset-registry/tools
dir=$cache/nats-chart-$version
mkdir -p "$cache"

fetch() {
	local out=$1 src
	if [[ -n ${NATS_CHART_REPO:-} ]]; then
		git --git-dir "$NATS_CHART_REPO" archive "$commit" helm/charts/nats | tar -x -C "$out" --strip-components 3
	elif eval "$("$root/tools/scripts/chart-tools.sh")" &&
		"$HELM" pull nats --repo "$repository" --version "$version" --untar --untardir "$out.pull" 2>/dev/null; then
		cp -R "$out.pull/nats/." "$out" && rm -rf "$out.pull"
	else
		rm -rf "$out.pull"
		src=$(GOFLAGS=-mod=mod GOWORK=off go mod download -json "$source@$commit" | sed -n 's/^\t"Dir": "\(.*\)",$/\1/p' || true)
		[[ -n $src ]] || { echo "nats-chart: neither $repository nor the module proxy gave the chart; set NATS_CHART_REPO to a git directory of $source" >&2; return 3; }
		cp -R "$src/helm/charts/nats/." "$out"
		chmod -R u+w "$out"
	fi
	grep -q "^version: $version\$" "$out/Chart.yaml" || { echo "nats-chart: the fetched chart is not version $version" >&2; return 1; }
}

if [[ ! -f $dir/Chart.yaml ]]; then
	(
		flock 9
		[[ -f $dir/Chart.yaml ]] && exit 0
		tmp=$(mktemp -d "$cache/.nats-chart-$version.XXXXXX")
		trap 'rm -rf "$tmp" "$tmp.pull"' EXIT
		fetch "$tmp"
		rm -rf "$dir"
		mv "$tmp" "$dir"
		trap - EXIT
	) 9>"$cache/nats-chart-$version.lock"
fi
echo "NATS_CHART=$dir"
