#!/usr/bin/env bash
# Refreshes the CRDs that the chart checks validate mesh, monitoring and
# datastore resources against (kubectl-validate --local-crds crds/). Run by hand when
# a pin below changes; `make test` only reads the committed files.
#
# Istio, the Prometheus Operator, CloudNativePG and the OT-Container-Kit Redis
# operator ship their CRDs in their Go modules, so the module proxy serves
# them. Linkerd's module is not served by the proxy;
# its CRDs come from a checkout of github.com/linkerd/linkerd2 at the pinned
# tag, given as LINKERD_REPO (a git directory), with the Helm template lines
# of its CRD chart removed.
set -euo pipefail
cd "$(dirname "$0")"

ISTIO_API=istio.io/api@v1.31.1
PROMETHEUS_OPERATOR=github.com/prometheus-operator/prometheus-operator@v0.85.0
LINKERD_TAG=edge-26.8.3
CLOUDNATIVE_PG=github.com/cloudnative-pg/cloudnative-pg@v1.30.0
REDIS_OPERATOR=github.com/OT-CONTAINER-KIT/redis-operator@v0.26.0

moddir() { go mod download -json "$1" | sed -n 's/^\t"Dir": "\(.*\)",$/\1/p'; }

# keep_crds FILE NAME... prints the CRD documents of FILE whose metadata.name
# is one of NAME.
keep_crds() {
	local file=$1; shift
	awk -v want=" $* " '
		function flush() { if (doc != "" && index(want, " " name " ")) printf "---\n%s", doc; doc = ""; name = "" }
		/^---/ { flush(); next }
		/^  name: / && name == "" && inmeta { name = $2 }
		/^metadata:/ { inmeta = 1 } /^spec:/ { inmeta = 0 }
		{ doc = doc $0 "\n" }
		END { flush() }' "$file"
}

mkdir -p istio prometheus-operator linkerd cloudnative-pg redis-operator

dir=$(moddir "$ISTIO_API")
keep_crds "$dir/kubernetes/customresourcedefinitions.gen.yaml" \
	peerauthentications.security.istio.io authorizationpolicies.security.istio.io > istio/security.istio.io.yaml

dir=$(moddir "$PROMETHEUS_OPERATOR")
for kind in servicemonitors podmonitors prometheusrules; do
	cp "$dir/example/prometheus-operator-crd/monitoring.coreos.com_$kind.yaml" prometheus-operator/
	chmod 644 "prometheus-operator/monitoring.coreos.com_$kind.yaml"
done

dir=$(moddir "$CLOUDNATIVE_PG")
for kind in clusters poolers scheduledbackups; do
	cp "$dir/config/crd/bases/postgresql.cnpg.io_$kind.yaml" cloudnative-pg/
	chmod 644 "cloudnative-pg/postgresql.cnpg.io_$kind.yaml"
done

# REDIS_OPERATOR_REPO (a git directory of the operator) where the module proxy does not serve it.
crd=config/crd/bases/redis.redis.opstreelabs.in_redisreplications.yaml
if [ -n "${REDIS_OPERATOR_REPO:-}" ]; then
	git --git-dir "$REDIS_OPERATOR_REPO" show "${REDIS_OPERATOR#*@}:$crd" > redis-operator/redis.redis.opstreelabs.in_redisreplications.yaml
else
	dir=$(moddir "$REDIS_OPERATOR")
	cp "$dir/$crd" redis-operator/
	chmod 644 redis-operator/redis.redis.opstreelabs.in_redisreplications.yaml
fi

if [ -n "${LINKERD_REPO:-}" ]; then
	for f in server authorization-policy meshtls-authentication network-authentication; do
		git --git-dir "$LINKERD_REPO" show "$LINKERD_TAG:charts/linkerd-crds/templates/policy/$f.yaml" |
			grep -v '{{' > "linkerd/$f.yaml"
	done
else
	echo "LINKERD_REPO not set: linkerd/ left as it is" >&2
fi
