// Package layers enforces the registry's import rules, so the layering
// that lets services deploy alone, and keeps tests out of what ships, stays
// true as code is added. The repository has three shelves: pkg/ (the
// runtime kit every deployable builds on), tools/testkit (the test kit) and
// the rest of tools/ (dev and CI infrastructure: the launcher, the
// generators, the bench, the cross-service and end-to-end tests):
//
//   - production code (not _test.go) of pkg/, the deployables (the gateway,
//     the identity provider, every service) imports nothing under tools/;
//   - their tests may import the test kit (tools/testkit), and nothing else
//     under tools/;
//   - pkg/ imports no deployable; the test kit imports only pkg/ and the dev
//     infrastructure; the dev infrastructure imports nothing of the registry;
//   - the gateway imports no service, and a service neither the gateway nor
//     another service (services talk over HTTP, through pkg/peer);
//   - no deployable's binary links a tools/ package or a test-only library,
//     nor a datastore client it does not use (pkg/process is the gateway's
//     and the identity provider's main, not pkg/servicekit; the gateway
//     links go-redis for its rate limits and no other datastore client).
package layers

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os/exec"
	"slices"
	"strings"

	"github.com/assetregistry/registry/pkg/catalog"
)

// ModulePath is the registry's module path prefix.
const ModulePath = "github.com/assetregistry/registry/"

// The shelves and deployables a package can belong to.
const (
	areaPkg      = "pkg"
	areaTestKit  = "tools/testkit"
	areaDevInfra = "tools/devinfra"
	areaTools    = "tools"
	areaGateway  = "api-gateway"
	areaIdP      = "idp"
	areaSDK      = "sdk"
)

// Package is what `go list -json` says of one package.
type Package struct {
	ImportPath   string
	Imports      []string
	TestImports  []string
	XTestImports []string
	Deps         []string
}

// area names the part of the repository a package belongs to: "pkg",
// "tools/testkit", "tools/devinfra", "tools", "api-gateway", "idp",
// "services/<name>", or "" for third parties.
func area(importPath string) string {
	rest, ok := strings.CutPrefix(importPath, ModulePath)
	if !ok {
		return ""
	}
	parts := strings.SplitN(rest, "/", 3)
	if (parts[0] == "services" || parts[0] == "tools") && len(parts) > 1 {
		switch sub := parts[0] + "/" + parts[1]; {
		case parts[0] == "services", sub == areaTestKit, sub == areaDevInfra:
			return sub
		}
	}
	return parts[0]
}

// deployable reports whether an area ships as a binary.
func deployable(a string) bool {
	return a == areaGateway || a == areaIdP || strings.HasPrefix(a, "services/")
}

// mayImport reports whether production code in area from may import code
// in area to.
func mayImport(from, to string) bool {
	switch {
	case to == "" || from == to:
		return true
	case from == areaTools:
		return true // the launcher, the cross-service tests and the tools see everything
	case from == areaDevInfra:
		return false
	case from == areaTestKit:
		return to == areaPkg || to == areaDevInfra
	case from == areaPkg:
		return false
	case from == areaSDK:
		return false // the integration kit is used alone: go get .../sdk brings nothing of ours
	case deployable(from):
		return to == areaPkg // not tools/, not the gateway, not another service
	}
	return false
}

// mayTestImport reports whether the tests of area from may import area to:
// what its production code may, and the test kit for pkg/ and deployables.
func mayTestImport(from, to string) bool {
	return mayImport(from, to) || (to == areaTestKit && (from == areaPkg || deployable(from)))
}

// TestOnly are libraries that exist for tests; a deployable's binary that
// links one carries test code into production.
var TestOnly = []string{"testing", "net/http/httptest", "github.com/pb33f/libopenapi-validator"}

// Forbidden links: datastore clients a binary must not contain. The
// gateway owns no data, but keeps the rate-limit budgets in Redis, so that
// every replica draws on one budget per client: it links go-redis (for
// the limiter alone), never PostgreSQL's or S3's client.
var Forbidden = map[string][]string{
	ModulePath + catalog.Gateway.Command:          {"github.com/jackc/pgx/v5", "github.com/minio/minio-go/v7"},
	ModulePath + catalog.IdentityProvider.Command: {"github.com/redis/go-redis/v9", "github.com/minio/minio-go/v7"},
}

// binaries are the deployables' main packages.
func binaries() map[string]bool {
	out := map[string]bool{}
	for _, d := range catalog.Deployables() {
		out[ModulePath+d.Command] = true
	}
	return out
}

// KitOrder is what each package of pkg/ may import of pkg/: the kit's own
// layering, from the vocabulary (apperr, model) up to the service kit. It
// is a DAG (a test says so), and an import between kit packages that is
// not in it fails the check, so the kit's shape changes only on purpose.
// The store and the outbox speak SQL and events: they know neither HTTP
// nor tokens (what a write obeys reaches them as a model.Guard).
var KitOrder = map[string][]string{
	"apperr":      nil,
	"catalog":     nil,
	"job":         nil,
	"openapi":     nil,
	"model":       {"apperr"},
	"objectstore": {"apperr"},
	"httpx":       {"apperr", "model"},
	"auth":        {"apperr", "httpx", "job"},
	"telemetry":   {"apperr", "auth", "httpx"},
	"cache":       {"model", "telemetry"},
	"peer":        {"apperr", "auth", "httpx"},
	"process":     {"apperr", "httpx", "model", "telemetry"},
	"leader":      {"job"},
	"outbox":      {"job", "leader", "model"},
	"store":       {"apperr", "model", "outbox", "telemetry"},
	"endpoints":   {"apperr", "auth", "httpx", "leader", "model", "store"},
	// A service's copy of who sees which asset: read from the assets
	// service (peer), kept in the service's schema (store), read again
	// only when the assets' watermark in Redis (cache) says it changed.
	"access": {"cache", "model", "peer", "store"},
	"refs":   {"apperr", "catalog", "endpoints", "httpx", "job", "leader", "model", "outbox", "peer", "store"},
	"servicekit": {"auth", "cache", "catalog", "endpoints", "httpx", "job", "leader", "objectstore", "openapi", "outbox", "peer",
		"process", "refs", "store", "telemetry"},
}

// kitPackage is the name of a package of pkg/ ("store" for
// .../pkg/store, and for .../pkg/store/migrations), or "".
func kitPackage(importPath string) string {
	rest, ok := strings.CutPrefix(importPath, ModulePath+"pkg/")
	if !ok {
		return ""
	}
	name, _, _ := strings.Cut(rest, "/")
	return name
}

// kitImport reports whether production code of kit package from may
// import kit package to (KitOrder).
func kitImport(from, to string) bool {
	if from == "" || to == "" || from == to {
		return true
	}
	allowed, known := KitOrder[from]
	return known && slices.Contains(allowed, to)
}

// Check returns every rule the packages break.
func Check(pkgs []Package) []string {
	var problems []string
	bins := binaries()
	for _, p := range pkgs {
		from := area(p.ImportPath)
		for _, imp := range p.Imports {
			if to := area(imp); !mayImport(from, to) {
				problems = append(problems, fmt.Sprintf("%s imports %s: %s may not import %s", p.ImportPath, imp, from, to))
			}
			if kf, kt := kitPackage(p.ImportPath), kitPackage(imp); !kitImport(kf, kt) {
				problems = append(problems, fmt.Sprintf("%s imports %s: pkg/%s may import only %v of pkg/ (tools/layers.KitOrder)",
					p.ImportPath, imp, kf, KitOrder[kf]))
			}
		}
		tests := slices.Concat(p.TestImports, p.XTestImports)
		slices.Sort(tests)
		for _, imp := range slices.Compact(tests) {
			if to := area(imp); !mayTestImport(from, to) {
				problems = append(problems, fmt.Sprintf("%s's tests import %s: tests of %s may not import %s", p.ImportPath, imp, from, to))
			}
		}
		if bins[p.ImportPath] {
			problems = append(problems, shipped(p)...)
		}
		for _, banned := range Forbidden[p.ImportPath] {
			if linked(p.Deps, banned) {
				problems = append(problems, fmt.Sprintf("%s links %s, which it does not need", p.ImportPath, banned))
			}
		}
	}
	return problems
}

// shipped checks what a deployable's binary links: no tools/ package and
// no test-only library.
func shipped(p Package) []string {
	var problems []string
	for _, dep := range p.Deps {
		if a := area(dep); a == areaTools || a == areaTestKit || a == areaDevInfra {
			problems = append(problems, fmt.Sprintf("%s links %s: a deployable's binary ships nothing from tools/", p.ImportPath, dep))
		}
	}
	for _, lib := range TestOnly {
		if linked(p.Deps, lib) {
			problems = append(problems, fmt.Sprintf("%s links %s: a deployable's binary ships no test code", p.ImportPath, lib))
		}
	}
	return problems
}

func linked(deps []string, lib string) bool {
	return slices.ContainsFunc(deps, func(dep string) bool { return dep == lib || strings.HasPrefix(dep, lib+"/") })
}

// List runs `go list` in dir (the repository root, a go.work workspace)
// over patterns, with tags set (BuildTags), so that files behind a build
// constraint are checked too.
func List(dir string, tags []string, patterns ...string) ([]Package, error) {
	args := []string{"list", "-e", "-json=ImportPath,Imports,TestImports,XTestImports,Deps"}
	if len(tags) > 0 {
		args = append(args, "-tags", strings.Join(tags, ","))
	}
	args = append(args, patterns...)
	cmd := exec.Command("go", args...)
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("go list: %w: %s", err, stderr.String())
	}
	var pkgs []Package
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p Package
		if err := dec.Decode(&p); err == io.EOF {
			break
		} else if err != nil {
			return nil, fmt.Errorf("go list output: %w", err)
		}
		pkgs = append(pkgs, p)
	}
	return pkgs, nil
}
