package layers

import (
	"slices"
	"testing"
)

func TestCheck(t *testing.T) {
	p := func(importPath string, imports ...string) Package {
		return Package{ImportPath: ModulePath + importPath, Imports: imports}
	}
	tests := []struct {
		name string
		pkg  Package
		bad  bool
	}{
		{"service uses pkg", p("services/assets", ModulePath+"pkg/store", "fmt"), false},
		{"service imports another service", p("services/assets", ModulePath+"services/parties"), true},
		{"service test imports another service", Package{ImportPath: ModulePath + "services/assets",
			XTestImports: []string{ModulePath + "services/parties/client"}}, true},
		{"service imports the gateway", p("services/assets", ModulePath+"api-gateway"), true},
		{"service imports tools", p("services/assets", ModulePath+"tools/devstack"), true},
		{"pkg imports a service", p("pkg/store", ModulePath+"services/parties"), true},
		{"pkg imports tools", p("pkg/store", ModulePath+"tools/idp"), true},
		{"gateway imports a service", p("api-gateway", ModulePath+"services/parties"), true},
		{"gateway uses pkg", p("api-gateway", ModulePath+"pkg/auth"), false},
		{"tools see everything", p("tools/e2e", ModulePath+"services/parties", ModulePath+"api-gateway"), false},
		{"gateway links pgx", Package{ImportPath: ModulePath + "api-gateway/cmd/api-gateway",
			Deps: []string{"github.com/jackc/pgx/v5/pgxpool"}}, true},
		{"idp links pgx, which it uses", Package{ImportPath: ModulePath + "tools/cmd/idp",
			Deps: []string{"github.com/jackc/pgx/v5"}}, false},
		{"idp links redis", Package{ImportPath: ModulePath + "tools/cmd/idp",
			Deps: []string{"github.com/redis/go-redis/v9/internal"}}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Check([]Package{tt.pkg}); (len(got) > 0) != tt.bad {
				t.Errorf("problems = %v, want a problem: %v", got, tt.bad)
			}
		})
	}
}

// The repository as it stands keeps the rules (make lint runs the same).
func TestRepositoryKeepsTheRules(t *testing.T) {
	pkgs, err := List("../..", "./pkg/...", "./api-gateway/...", "./services/...", "./tools/...")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(pkgs, func(p Package) bool { return p.ImportPath == ModulePath+"api-gateway/cmd/api-gateway" }) {
		t.Fatal("go list did not list the gateway's binary")
	}
	if problems := Check(pkgs); len(problems) > 0 {
		t.Errorf("layering broken:\n%v", problems)
	}
}
