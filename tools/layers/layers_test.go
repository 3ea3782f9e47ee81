package layers

import (
	"slices"
	"testing"

	"github.com/assetregistry/registry/tools/catalogfiles"
)

func TestCheck(t *testing.T) {
	p := func(importPath string, imports ...string) Package {
		return Package{ImportPath: ModulePath + importPath, Imports: imports}
	}
	test := func(importPath string, imports ...string) Package {
		return Package{ImportPath: ModulePath + importPath, XTestImports: imports}
	}
	binary := func(command string, deps ...string) Package {
		return Package{ImportPath: ModulePath + command, Deps: deps}
	}
	tests := []struct {
		name string
		pkg  Package
		bad  bool
	}{
		{"service uses pkg", p("services/assets", ModulePath+"pkg/store", "fmt"), false},
		{"service imports another service", p("services/assets", ModulePath+"services/parties"), true},
		{"service test imports another service", test("services/assets", ModulePath+"services/parties/client"), true},
		{"service imports the gateway", p("services/assets", ModulePath+"api-gateway"), true},
		{"service imports tools", p("services/assets", ModulePath+"tools/devstack"), true},
		{"service imports the test kit", p("services/assets", ModulePath+"tools/testkit"), true},
		{"service test uses the test kit", test("services/assets", ModulePath+"tools/testkit/servicetest"), false},
		{"service test imports the dev infrastructure", test("services/assets", ModulePath+"tools/devinfra"), true},
		{"service test imports other tools", test("services/assets", ModulePath+"tools/e2e"), true},
		{"pkg imports a service", p("pkg/store", ModulePath+"services/parties"), true},
		{"pkg imports tools", p("pkg/store", ModulePath+"tools/devstack"), true},
		{"pkg imports the test kit", p("pkg/store", ModulePath+"tools/testkit"), true},
		{"pkg imports the identity provider", p("pkg/store", ModulePath+"idp"), true},
		{"pkg test uses the test kit", Package{ImportPath: ModulePath + "pkg/store", TestImports: []string{ModulePath + "tools/testkit"}}, false},
		{"gateway imports a service", p("api-gateway", ModulePath+"services/parties"), true},
		{"gateway uses pkg", p("api-gateway", ModulePath+"pkg/auth"), false},
		{"gateway imports the test kit", p("api-gateway", ModulePath+"tools/testkit"), true},
		{"identity provider imports tools", p("idp", ModulePath+"tools/devstack"), true},
		{"identity provider test uses the test kit", test("idp", ModulePath+"tools/testkit"), false},
		{"sdk imports pkg", p("sdk", ModulePath+"pkg/httpx"), true},
		{"sdk imports tools", p("sdk", ModulePath+"tools/devstack"), true},
		{"sdk test uses the test kit", test("sdk", ModulePath+"tools/testkit"), true},
		{"sdk's command uses the sdk", p("sdk/cmd/registry", ModulePath+"sdk", "github.com/peterbourgon/ff/v3"), false},
		{"tools use the sdk", p("tools/e2e", ModulePath+"sdk"), false},
		{"test kit uses pkg and the dev infrastructure", p("tools/testkit", ModulePath+"pkg/auth", ModulePath+"tools/devinfra"), false},
		{"test kit imports a service", p("tools/testkit/servicetest", ModulePath+"services/parties"), true},
		{"dev infrastructure imports pkg", p("tools/devinfra", ModulePath+"pkg/store"), true},
		{"tools see everything", p("tools/e2e", ModulePath+"services/parties", ModulePath+"api-gateway", ModulePath+"tools/testkit"), false},
		{"gateway links pgx", binary("api-gateway/cmd/api-gateway", "github.com/jackc/pgx/v5/pgxpool"), true},
		{"gateway links redis, for its rate limits", binary("api-gateway/cmd/api-gateway", "github.com/redis/go-redis/v9"), false},
		{"gateway links minio", binary("api-gateway/cmd/api-gateway", "github.com/minio/minio-go/v7"), true},
		{"idp links pgx, which it uses", binary("idp/cmd/idp", "github.com/jackc/pgx/v5"), false},
		{"idp links redis", binary("idp/cmd/idp", "github.com/redis/go-redis/v9/internal"), true},
		{"a service's binary links the test kit", binary("services/assets/cmd/assets", ModulePath+"tools/testkit"), true},
		{"a service's binary links testing", binary("services/assets/cmd/assets", "testing"), true},
		{"the gateway's binary links the OpenAPI validator", binary("api-gateway/cmd/api-gateway", "github.com/pb33f/libopenapi-validator/paths"), true},
		{"a tool links testing", binary("tools/cmd/loadtest", "testing"), false},
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
	tags, err := BuildTags("../..")
	if err != nil {
		t.Fatal(err)
	}
	pkgs, err := List("../..", tags, catalogfiles.Patterns()...)
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

func TestTagsOf(t *testing.T) {
	tests := []struct {
		line string
		want []string
	}{
		{"//go:build faults", []string{"faults"}},
		{"//go:build linux && amd64", nil},
		{"//go:build !faults", []string{"faults"}},
		{"//go:build (faults || bench) && linux", []string{"bench", "faults"}},
		{"//go:build go1.22 && cgo", nil},
		{"//go:build ignore", nil},
	}
	for _, tt := range tests {
		got, err := TagsOf(tt.line)
		if err != nil {
			t.Fatalf("%s: %v", tt.line, err)
		}
		if !slices.Equal(got, tt.want) {
			t.Errorf("TagsOf(%q) = %v, want %v", tt.line, got, tt.want)
		}
	}
}

// TestRepositoryTags: the fault suite's files are behind a tag, and the
// check must list them with it.
func TestRepositoryTags(t *testing.T) {
	tags, err := BuildTags("../..")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(tags, "faults") {
		t.Errorf("BuildTags = %v, want faults among them (tools/faults)", tags)
	}
}

func TestCheckModules(t *testing.T) {
	m := func(path string, requires []string, replaces ...string) Module {
		return Module{Path: ModulePath + path, Requires: requires, Replaces: replaces}
	}
	r := func(paths ...string) []string {
		out := make([]string, len(paths))
		for i, p := range paths {
			out[i] = ModulePath + p
		}
		return out
	}
	tests := []struct {
		name string
		mods []Module
		bad  int
	}{
		{"a DAG", []Module{m("pkg", r("tools/testkit")), m("tools/testkit", nil), m("services/parties", r("pkg", "tools/testkit"))}, 0},
		{"two modules require each other", []Module{m("pkg", r("tools/testkit")), m("tools/testkit", r("pkg"))}, 1},
		{"a cycle through three", []Module{m("a", r("b")), m("b", r("c")), m("c", r("a"))}, 1},
		{"a replace of what is required", []Module{m("pkg", r("tools/testkit"), ModulePath+"tools/testkit"), m("tools/testkit", nil)}, 0},
		{"a replace of what nothing requires", []Module{m("pkg", nil, ModulePath+"idp")}, 1},
		{"third parties are not the registry's", []Module{m("pkg", []string{"github.com/x/y"}), m("tools/testkit", []string{"github.com/x/y"})}, 0},
	}
	for _, tt := range tests {
		if got := CheckModules(tt.mods); len(got) != tt.bad {
			t.Errorf("%s: %d problems %q, want %d", tt.name, len(got), got, tt.bad)
		}
	}
}

// TestRepositoryModules: the registry's own modules keep the rules.
func TestRepositoryModules(t *testing.T) {
	mods, err := ReadModules("../..", catalogfiles.Modules())
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range CheckModules(mods) {
		t.Error(p)
	}
}

func TestKitOrder(t *testing.T) {
	kit := func(name string, imports ...string) Package {
		p := Package{ImportPath: ModulePath + "pkg/" + name}
		for _, i := range imports {
			p.Imports = append(p.Imports, ModulePath+"pkg/"+i)
		}
		return p
	}
	tests := []struct {
		name string
		pkg  Package
		bad  bool
	}{
		{"the store on the outbox", kit("store", "outbox", "model"), false},
		{"the store on HTTP", kit("store", "httpx"), true},
		{"the store on tokens", kit("store", "auth"), true},
		{"the outbox on HTTP", kit("outbox", "httpx"), true},
		{"the outbox on tokens", kit("outbox", "auth"), true},
		{"the vocabulary upwards", kit("model", "store"), true},
		{"a package's own subpackage", kit("store/migrations", "store"), false},
		{"a package nobody ordered", kit("newthing", "apperr"), true},
		{"third parties are not the kit's", Package{ImportPath: ModulePath + "pkg/store", Imports: []string{"github.com/jackc/pgx/v5"}}, false},
	}
	for _, tt := range tests {
		if got := Check([]Package{tt.pkg}); (len(got) > 0) != tt.bad {
			t.Errorf("%s: problems = %v, want a problem: %v", tt.name, got, tt.bad)
		}
	}
	// The order is a DAG: no kit package may reach itself.
	var reaches func(from, to string, seen map[string]bool) bool
	reaches = func(from, to string, seen map[string]bool) bool {
		for _, next := range KitOrder[from] {
			if next == to || (!seen[next] && func() bool { seen[next] = true; return reaches(next, to, seen) }()) {
				return true
			}
		}
		return false
	}
	for name := range KitOrder {
		if reaches(name, name, map[string]bool{}) {
			t.Errorf("pkg/%s reaches itself through KitOrder", name)
		}
	}
}

// The kit's height and its arrows, as KitOrder allows them: the shape the
// lint's limits (tools/housecount/limits.txt) count.
func TestFloors(t *testing.T) {
	order := map[string][]string{"a": nil, "b": {"a"}, "c": {"a", "b"}, "d": {"a"}}
	if got := Floors(order); got != 3 {
		t.Errorf("Floors = %d, want 3 (c over b over a)", got)
	}
	if got := Arrows(order); got != 4 {
		t.Errorf("Arrows = %d, want 4", got)
	}
	if got := Floors(KitOrder); got < 1 || got > len(KitOrder) {
		t.Errorf("Floors(KitOrder) = %d", got)
	}
}
