// Package layers enforces the registry's import rules, so the layering
// that lets services deploy alone stays true as code is added:
//
//   - pkg/ imports no deployable module (api-gateway, services, tools);
//   - the gateway imports no service and nothing from tools/;
//   - a service imports neither the gateway, nor tools/, nor another
//     service (services talk over HTTP, through pkg/peer);
//   - the gateway and the identity provider link no datastore client they
//     do not use (pkg/process is their shared main, not pkg/servicekit).
package layers

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os/exec"
	"slices"
	"strings"
)

// ModulePath is the registry's module path prefix.
const ModulePath = "github.com/assetregistry/registry/"

// Package is what `go list -json` says of one package.
type Package struct {
	ImportPath   string
	Imports      []string
	TestImports  []string
	XTestImports []string
	Deps         []string
}

// area names the part of the repository a package belongs to: "pkg",
// "api-gateway", "tools", "services/<name>", or "" for third parties.
func area(importPath string) string {
	rest, ok := strings.CutPrefix(importPath, ModulePath)
	if !ok {
		return ""
	}
	parts := strings.SplitN(rest, "/", 3)
	if parts[0] == "services" && len(parts) > 1 {
		return "services/" + parts[1]
	}
	return parts[0]
}

// mayImport reports whether code in area from may import code in area to.
func mayImport(from, to string) bool {
	switch {
	case to == "" || from == to || to == "pkg":
		return true
	case from == "pkg":
		return false
	case from == "api-gateway":
		return false // neither services nor tools
	case strings.HasPrefix(from, "services/"):
		return false // neither the gateway, nor tools, nor another service
	case from == "tools":
		return true // the launcher, the tests and the tools see everything
	}
	return false
}

// Forbidden links: datastore clients a binary must not contain.
var Forbidden = map[string][]string{
	ModulePath + "api-gateway/cmd/api-gateway": {"github.com/jackc/pgx/v5", "github.com/redis/go-redis/v9", "github.com/minio/minio-go/v7"},
	ModulePath + "tools/cmd/idp":               {"github.com/redis/go-redis/v9", "github.com/minio/minio-go/v7"},
}

// Check returns every rule the packages break.
func Check(pkgs []Package) []string {
	var problems []string
	for _, p := range pkgs {
		from := area(p.ImportPath)
		imports := slices.Concat(p.Imports, p.TestImports, p.XTestImports)
		slices.Sort(imports)
		for _, imp := range slices.Compact(imports) {
			if to := area(imp); !mayImport(from, to) {
				problems = append(problems, fmt.Sprintf("%s imports %s: %s may not import %s", p.ImportPath, imp, from, to))
			}
		}
		for _, banned := range Forbidden[p.ImportPath] {
			for _, dep := range p.Deps {
				if dep == banned || strings.HasPrefix(dep, banned+"/") {
					problems = append(problems, fmt.Sprintf("%s links %s, which it does not need", p.ImportPath, banned))
					break
				}
			}
		}
	}
	return problems
}

// List runs `go list` in dir (the repository root, a go.work workspace)
// over patterns.
func List(dir string, patterns ...string) ([]Package, error) {
	args := append([]string{"list", "-e", "-json=ImportPath,Imports,TestImports,XTestImports,Deps"}, patterns...)
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
