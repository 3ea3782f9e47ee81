#!/usr/bin/env bash
# Builds the chart tools at pinned versions, once per machine, into a cache
# outside the work tree, and prints where they are as shell assignments:
#
#   HELM=…/helm-unittest-v1.1.2/helm
#   HELM_PLUGINS=…/helm-unittest-v1.1.2/plugins   (holds the unittest plugin)
#   KUBECTL_VALIDATE=…/kubectl-validate-v0.0.4/kubectl-validate
#
# Every tool is a Go program fetched through the module proxy: no download
# of a prebuilt binary, no network beyond the proxy. helm is built inside
# helm-unittest's module, so it is the Helm release helm-unittest renders
# with (v3.21.3 for helm-unittest v1.1.2) and the two share one compilation
# of Helm and the Kubernetes libraries: half the cold cost of building them
# apart, and unit tests, lint and template run the same Helm code.
# kubectl-validate builds beside them, in parallel (they compile slowly;
# `make test` starts this script in the background before linting). Each tool has its own lock, so concurrent runs
# (make test's head start and the chart test asking for the tools) wait for
# one build instead of racing; a finished tool is a directory renamed into
# place at the end, so a killed build leaves nothing half-made behind.
set -euo pipefail

KUBECTL_VALIDATE_VERSION=v0.0.4
HELM_UNITTEST_VERSION=v1.1.2

cache=${XDG_CACHE_HOME:-$HOME/.cache}/asset-registry/tools
mkdir -p "$cache"

# build NAME VERSION BINARY RECIPE: runs RECIPE (a function taking the
# output directory) under NAME's lock unless $cache/NAME-VERSION/BINARY exists.
build() {
	local name=$1 version=$2 binary=$3 recipe=$4
	local dir=$cache/$name-$version
	[[ -x $dir/$binary ]] && return 0
	(
		flock 9
		[[ -x $dir/$binary ]] && exit 0
		local tmp
		tmp=$(mktemp -d "$cache/.$name-$version.XXXXXX")
		trap 'rm -rf "$tmp"' EXIT
		if ! "$recipe" "$tmp" >"$tmp.log" 2>&1; then
			echo "chart-tools: building $name $version failed:" >&2
			cat "$tmp.log" >&2
			rm -f "$tmp.log"
			exit 1
		fi
		rm -f "$tmp.log"
		rm -rf "$dir"
		mv "$tmp" "$dir"
		trap - EXIT
	) 9>"$cache/$name-$version.lock"
}

# Static, trimmed builds: the binaries do not depend on the machine's C library.
export CGO_ENABLED=0 GOFLAGS=-trimpath GOWORK=off

kubectl_validate_recipe() {
	GOBIN=$1 go install "sigs.k8s.io/kubectl-validate@$KUBECTL_VALIDATE_VERSION"
}

# helm-unittest's go.mod has replace directives, which `go install pkg@v`
# refuses; so build in a copy of its module (writable, so that go.sum can
# take the hashes helm's own main package needs), then lay it out as a helm
# plugin of its own private HELM_PLUGINS folder.
helm_unittest_recipe() {
	local out=$1 src
	src=$(go mod download -json "github.com/helm-unittest/helm-unittest@$HELM_UNITTEST_VERSION" |
		sed -n 's/^\t"Dir": "\(.*\)",$/\1/p')
	[[ -n $src ]]
	mkdir -p "$out/plugins/unittest" "$out/src"
	cp -R "$src/." "$out/src"
	chmod -R u+w "$out/src"
	(
		cd "$out/src"
		go build -mod=mod -o "$out/plugins/unittest/untt" ./cmd/helm-unittest
		go build -mod=mod -o "$out/helm" helm.sh/helm/v3/cmd/helm
	)
	rm -rf "$out/src"
	cat >"$out/plugins/unittest/plugin.yaml" <<-YAML
		name: unittest
		version: "${HELM_UNITTEST_VERSION#v}"
		usage: unittest for helm charts
		description: helm-unittest built from source by tools/scripts/chart-tools.sh
		ignoreFlags: false
		platformCommand:
		  - command: \$HELM_PLUGIN_DIR/untt
	YAML
}

pids=()
build kubectl-validate "$KUBECTL_VALIDATE_VERSION" kubectl-validate kubectl_validate_recipe & pids+=($!)
build helm-unittest "$HELM_UNITTEST_VERSION" helm helm_unittest_recipe & pids+=($!)
failed=0
for pid in "${pids[@]}"; do wait "$pid" || failed=1; done
((failed == 0)) || exit 1

echo "HELM=$cache/helm-unittest-$HELM_UNITTEST_VERSION/helm"
echo "HELM_PLUGINS=$cache/helm-unittest-$HELM_UNITTEST_VERSION/plugins"
echo "KUBECTL_VALIDATE=$cache/kubectl-validate-$KUBECTL_VALIDATE_VERSION/kubectl-validate"
