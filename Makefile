# The two commands that matter: `make run` and `make test`. Both install
# what they need (idempotently) on a fresh Debian machine with Go.

SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := help

# SERVICES, MODULES and DEPLOYABLE_COMMANDS come from pkg/catalog
# (`make generate` rewrites catalog.mk after the catalog changes).
include catalog.mk
# The longest packages first: go test starts packages in the order it is
# given them, two at a time on two cores, and the suites that start whole
# stacks (the fault suite, the end-to-end tests, the SDK's, the bench's
# short run, the charts') came last in the alphabet: the last of them ran
# on alone at the end while the other core had nothing left to do. Those
# suites mostly wait (a fault's window, a browser, a token's expiry, a helm
# process), while the service packages and the small ones (their links)
# keep a core busy. So the fault suite, the longest, goes first, beside
# the service packages; then the other suites come in turns with the
# gateway, the identity provider and pkg/, where two of them side by side
# left a core idle.
LONG_PACKAGES := ./tools/faults ./services/actions ./services/events ./services/assets \
                 ./services/documents ./tools/e2e ./api-gateway/... ./tools/sdktest ./idp/... \
                 ./tools/bench ./pkg/... ./tools/charttest ./tools/image ./tools/crossservice \
                 ./tools/devinfra
PACKAGES := $(LONG_PACKAGES) $(addprefix ./,$(addsuffix /...,$(MODULES)))
BIN      := $(CURDIR)/bin
COMMANDS := $(DEPLOYABLE_COMMANDS) \
            devstack=./tools/cmd/devstack \
            loadtest=./tools/cmd/loadtest \
            testinfra=./tools/devinfra/cmd/testinfra

# One set of build flags for everything the Makefile compiles: the binaries,
# the tests, vet, and the images' static binaries (tools/image builds them
# without cgo and with -trimpath). Cgo changes the build of net and of
# everything above it, so with two sets a cold make test compiled every
# dependency twice; with one, the images reuse the tests' compilation.
# -ldflags=-w: binaries go without DWARF, which only a debugger reads
# (stack traces and profiles use the symbol table, which stays); DWARF is a
# third of a link's CPU, and make test links some sixty binaries. The
# images' build sets its own, stricter, link flags.
export CGO_ENABLED := 0
export GOFLAGS := -trimpath -ldflags=-w

# -parallel 4: the tests that call t.Parallel mostly wait (a breaker's
# window, a lease running out, a helm or kubectl-validate process), so
# four of a package's at once overlap their waits; the two cores bound
# the CPU work anyway. go test's default is GOMAXPROCS, two here.
GO_TEST_FLAGS ?= -count=1 -timeout 15m -parallel 4
# Linking the fifty-odd test binaries is a fifth of make test's CPU. go
# test -o keeps each package's binary outside the work tree, like Go's
# build cache, and links it again only when something it is built from
# changed (Go's build ID, the same whatever the checkout's path, since
# -trimpath keeps paths out of it): a run after a change to one service
# links that service's binaries and what imports it, and a fresh clone
# elsewhere (CI's) links only what differs from the last run's. -o names
# each binary after its package's last element, so no two packages with
# tests may share one. The folders are shared by every checkout, as slots
# (LINK_CACHE/tests-N): a make test holds its slot's lock while it tests,
# so two at once, at different commits, never run or relink each other's
# binaries; the second takes the next slot. About 1.5 GB a slot; deleting
# them costs one run its links.
LINK_CACHE ?= $(or $(XDG_CACHE_HOME),$(HOME)/.cache)/asset-registry/links
TEST_SLOTS ?= 0 1 2 3
# The fault suite (tools/faults) builds only with this tag, so that `go test
# ./...` by hand stays quick; make test and make faults set it. The
# registry command's test hooks (a SIGKILL failpoint, profiles) build only
# with testhooks: tools/sdktest and make bench build the command so, the
# shipped one lacks them; make lint vets both.
TEST_TAGS := -tags faults
# FULL=1 is the one switch between the suites' two lengths (tools/testkit.Full):
# make test runs one short row of each kind of fault and of bench row, make
# faults runs the fault suite whole, make bench the bench whole, and
# `make test FULL=1` every row of both inside make test (docs/testing.md).

.PHONY: help
help: ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | sed 's/:.*## /\t/' | column -t -s "$$(printf '\t')"

.PHONY: deps
deps: ## install the PostgreSQL and Redis server binaries if missing
	@tools/scripts/ensure-deps.sh

# MinIO has no Debian package: tools/devinfra builds the pinned server from
# source into the user's cache (~/.cache/asset-registry/tools), once per
# machine and version, which takes minutes; NATS (JetStream, the stream of
# change events; tools/devinfra.NatsVersion) and ORY Hydra (the independent
# token issuer the end-to-end tests run the registry against,
# TestExternalIssuer; tools/devinfra.HydraVersion) are built the same way.
# servers and servers-for-test start the builds a target needs first
# thing, in the background, so they overlap lint and build; whatever needs a
# binary later waits for its build under its lock. One ensure-server builds
# them all: three `go run`s compiled ensure-server three times at once on a
# cold machine. make test, faults and bench need MinIO before they start and
# build it at normal priority. make run builds neither before the first call
# answers (see run).
# When the binaries are cached this costs a cached `go run`.
.PHONY: minio
minio: ## build the pinned MinIO server into the user's cache if missing
	@go run ./tools/devinfra/cmd/ensure-server minio >/dev/null

.PHONY: nats
nats: ## build the pinned NATS server into the user's cache if missing
	@go run ./tools/devinfra/cmd/ensure-server nats >/dev/null

.PHONY: servers
servers:
	@go run ./tools/devinfra/cmd/ensure-server minio nats >/dev/null &

.PHONY: servers-for-test
servers-for-test:
	@go run ./tools/devinfra/cmd/ensure-server minio nats hydra >/dev/null &

# One go build for every binary: it compiles each dependency once, using
# every core. A go build per binary, in parallel, compiled the shared ones
# (pgx, OpenTelemetry, go-kit, ...) once per binary at the same time: 828
# CPU-seconds and 7 minutes from an empty build cache, against 167 and 1.5.
# Each binary is named after its package's folder, as COMMANDS names it.
# go build -o links a binary again only when the one already there is out
# of date (Go's build ID says), so the binaries are built into the
# checkouts' shared cache (LINK_CACHE/bin) and hard-linked into bin/ from
# there: a fresh clone links none of them again (12 s of the serial part
# of make test, 22 CPU-seconds). Go replaces a binary it relinks (a new
# file, never written in place), so another checkout's bin/ keeps the one
# it linked; the lock keeps two builds from replacing each other's between
# the build and the links.
.PHONY: build
build: ## build every binary into bin/
	@mkdir -p $(BIN) $(LINK_CACHE)/bin
	@flock $(LINK_CACHE)/bin.lock sh -c 'go build -o $(LINK_CACHE)/bin/ $(foreach c,$(COMMANDS),$(lastword $(subst =, ,$(c)))) && \
		for c in $(foreach c,$(COMMANDS),$(firstword $(subst =, ,$(c)))); do \
			ln -f $(LINK_CACHE)/bin/$$c $(BIN)/$$c 2>/dev/null || cp --remove-destination $(LINK_CACHE)/bin/$$c $(BIN)/$$c || exit 1; \
		done'

# make run compiles first only what the README's first call goes through
# (FIRST_CALL_COMMANDS, from tools/devstack.FirstCall: the identity provider,
# the service that answers it, the gateway) and the launcher, in one go
# build, and the launcher starts them on PostgreSQL and Redis and prints how
# to call. Only then do the other services (-build-later), NATS and MinIO
# (at nice 19) build, and each joins when it is ready; nothing competes with
# the first call's compile for the cores. RUN_ARGS passes more of the
# launcher's flags (bin/devstack -h), e.g. RUN_ARGS='-ports api-gateway=8081'.
.PHONY: run
run: deps ## run the whole registry locally (Ctrl-C stops it all)
	@mkdir -p $(BIN)
	@go build -o $(BIN)/ ./tools/cmd/devstack $(foreach c,$(FIRST_CALL_COMMANDS),$(lastword $(subst =, ,$(c))))
	@$(BIN)/devstack -dir $(CURDIR)/.local -bin $(BIN) -build-later $(RUN_ARGS)

.PHONY: test
test: servers-for-test chart-tools-head-start deps browser-head-start lint build ## lint, then every test: unit, integration (real PostgreSQL/Redis/MinIO/NATS), end-to-end (a second OIDC issuer included), charts and images
	@env_file=$$(mktemp -u /tmp/testinfra.XXXXXX.env); \
	$(BIN)/testinfra -env-file $$env_file & infra=$$!; \
	trap 'kill $$infra 2>/dev/null; wait $$infra 2>/dev/null || true' EXIT; \
	until [ -s $$env_file ]; do kill -0 $$infra 2>/dev/null || { echo "test datastores failed to start" >&2; exit 1; }; sleep 0.1; done; \
	set -a; . $$env_file; set +a; \
	rm -f bench/short-comparison.txt; \
	tested=$$(go list $(TEST_TAGS) -f '{{if or .TestGoFiles .XTestGoFiles}}{{.ImportPath}}{{end}}' $(PACKAGES)); \
	mkdir -p $(LINK_CACHE); slot=; \
	for n in $(TEST_SLOTS); do exec 9>$(LINK_CACHE)/tests-$$n.lock; if flock -n 9; then slot=$(LINK_CACHE)/tests-$$n; break; fi; done; \
	if [ -z "$$slot" ]; then slot=$$(mktemp -d /tmp/test-binaries.XXXXXX); echo "every test-binary slot is in use: linking into $$slot" >&2; fi; \
	status=0; REGISTRY_BIN=$(BIN) go test $(TEST_TAGS) $(GO_TEST_FLAGS) -o $$slot/ $$tested || status=$$?; \
	if [ -f bench/short-comparison.txt ]; then cat bench/short-comparison.txt; fi; \
	exit $$status

.PHONY: faults
faults: servers deps build ## the whole fault suite (FULL=1): the registry under load while its datastores, services and gateway fail (make test runs a short row of each kind)
	@FULL=1 REGISTRY_BIN=$(BIN) go test $(TEST_TAGS) -count=1 -timeout 45m -v ./tools/faults/ | grep -v '^=== RUN'

# Not part of make test: minutes of its own, and a second PostgreSQL, Redis
# and two NATS servers beside the first.
.PHONY: cluster-faults
cluster-faults: servers deps build ## the registry on clusters (PostgreSQL with two synchronous standbys, Redis with Sentinel, 3 NATS nodes), each failed over under load, with recovery times (ROWS=regexp of rows)
	@REGISTRY_BIN=$(BIN) go test $(TEST_TAGS) -count=1 -timeout 20m -v -run '^TestClusterFaults$$$(if $(ROWS),/$(ROWS))' ./tools/faults/ -args -clusters | grep -v '^=== RUN'

# Not part of make test: a few minutes, and it runs as root (it installs
# Debian's barman-cli-cloud when missing and runs PostgreSQL as postgres).
.PHONY: restore-drill
restore-drill: servers deps build ## the registry's PostgreSQL archived and base-backed-up to MinIO with Barman Cloud under load, restored to a point in time, the registry started on it and checked, with RPO and RTO (DRILL_SECONDS)
	@command -v barman-cloud-backup >/dev/null || { apt-get update -q >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -q barman-cli-cloud >/dev/null; }
	@REGISTRY_BIN=$(BIN) go test $(TEST_TAGS) -count=1 -timeout 20m -v -run '^TestRestoreDrill$$' ./tools/faults/ -args -restore | grep -v '^=== RUN'

# The end-to-end tests check the passport page in Debian's chromium: on a
# fresh machine its install (apt-get, most of a minute) starts once deps
# has let go of apt, in the background, and the tests wait for it under
# its lock (devinfra.EnsureChromium) instead of installing it themselves.
.PHONY: browser-head-start
browser-head-start:
	@go run ./tools/devinfra/cmd/ensure-server chromium >/dev/null 2>&1 &

# The chart checks (tools/charttest) need helm, helm-unittest and kubectl-validate, built from
# source once per machine and cached outside the work tree. Start that build now, in the
# background, so it overlaps linting and the other tests; the chart test waits for it (one
# lock per tool) and finds the tools ready on every later run.
.PHONY: chart-tools-head-start
chart-tools-head-start:
	@tools/scripts/chart-tools.sh >/dev/null 2>&1 &

.PHONY: chart-tools
chart-tools: ## build the pinned chart tools (helm, helm-unittest, kubectl-validate) into the cache
	@tools/scripts/chart-tools.sh

.PHONY: generate
generate: ## rewrite what follows from pkg/catalog (catalog.mk, go.work, the gateway's copies of the services' API documents) and the chart value schema (charts, skaffold.yaml, Dockerfile, docs)
	@go run ./tools/cmd/catalog
	@go run ./tools/cmd/deploygen

.PHONY: images
images: ## build every deployable's image without a container engine into build/images
	@go run ./tools/cmd/images -out build/images

.PHONY: charts
charts: ## package every chart into build/charts
	@eval "$$(tools/scripts/chart-tools.sh)"; mkdir -p build/charts; \
	for c in $$(go run ./tools/cmd/deploygen -list) registry; do \
		$$HELM dependency update --skip-refresh charts/$$c >/dev/null; \
		$$HELM package charts/$$c --destination build/charts; \
	done

.PHONY: lint
lint: ## gofmt, go vet, the import rules between pkg/, the gateway, services and tools/, and the shape's limits (tools/housecount/limits.txt)
	@out=$$(gofmt -l $(MODULES)); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	@go vet $(TEST_TAGS) $(PACKAGES)
	@go vet -tags testhooks ./sdk/cmd/registry
	@go run ./tools/cmd/layercheck
	@go run ./tools/cmd/housecount -check

.PHONY: capacity
capacity: servers deps ## the capacity model's figures (docs/capacity.md): CAPACITY_ROWS events and actions (default 1000000; the model's is 10000000) seeded, maintenance and reads timed
	@for s in events actions; do (cd services/$$s && CAPACITY_ROWS=$${CAPACITY_ROWS:-1000000} go test -tags capacity -count=1 -timeout 4h -run TestCapacity -v . | grep -v '^=== RUN'); done

.PHONY: bench
bench: servers deps build ## the speed table, bench/results.json (QUICK=1 smoke run, PROFILE=1 profiles, ROWS=regexp)
	@tools/scripts/bench.sh

# Not part of make test: an hour by default. The stack as make bench starts
# it, the mixed load at half the capacity a probe measured first, and after
# a quiet phase one client at 10 × its rate-limit budget beside it.
.PHONY: soak
soak: servers deps build ## an hour (SOAK_DURATION) of the mixed load at half capacity beside a client over its budget: RSS flat, p99, nothing lost; bench/soak.json
	@$(BIN)/loadtest -soak $${SOAK_DURATION:-1h} -bin $(BIN) -out bench -root .

.PHONY: tidy
tidy: ## go mod tidy in every module
	@for m in $(MODULES); do (cd $$m && GOWORK=off go mod tidy); done

.PHONY: clean
clean: ## remove bin/ (keeps .local data, `rm -rf .local` to reset make run, and the checkouts' shared LINK_CACHE)
	rm -rf $(BIN)
