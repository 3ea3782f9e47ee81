package housecount

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// TestSyntax counts a small tree: keys of our own types only, calls
// outside tools/ only, tests left out.
func TestSyntax(t *testing.T) {
	root := t.TempDir()
	files := map[string]string{
		"pkg/a/a.go": `package a

import "context"

type aKey struct{}

func With(ctx context.Context) context.Context {
	ctx = context.WithValue(ctx, aKey{}, 1)
	return context.WithValue(ctx, aKey{}, 2)
}
`,
		"pkg/a/a_test.go": `package a

import "context"

type testKey struct{}

var _ = context.WithValue(context.Background(), testKey{}, 1)
`,
		"tools/t/t.go": `package t

import "context"

type toolKey struct{}

var _ = context.WithValue(context.Background(), toolKey{}, 1)
`,
		"services/s/s.go": `package s

import (
	"context"

	"golang.org/x/oauth2"
)

func long() {
	_ = 1
	_ = 2
	_ = context.WithValue(context.Background(), oauth2.HTTPClient, nil)
}
`,
	}
	for name, src := range files {
		path := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var c Counts
	if err := Syntax(root, &c); err != nil {
		t.Fatal(err)
	}
	if len(c.ContextKeys) != 1 || c.ContextKeys[0] != "pkg/a.aKey" {
		t.Errorf("context keys = %v, want [pkg/a.aKey]", c.ContextKeys)
	}
	if c.WithValueCalls != 3 {
		t.Errorf("WithValue calls = %d, want 3 (two in pkg/a, one in services/s)", c.WithValueCalls)
	}
	if c.LargestFile != "services/s/s.go" || c.LargestFileSize != 13 {
		t.Errorf("largest file = %s (%d), want services/s/s.go (13)", c.LargestFile, c.LargestFileSize)
	}
	if c.LongestFunc != "services/s/s.go: long" || c.LongestFuncSize != 5 {
		t.Errorf("longest function = %s (%d), want services/s/s.go: long (5)", c.LongestFunc, c.LongestFuncSize)
	}
}

// TestDuplicatesLeaveMigrationsOut: two migrations that repeat each other
// are no pair (applied history is never edited, so it cannot be folded);
// the same lines in code files still are.
func TestDuplicatesLeaveMigrationsOut(t *testing.T) {
	if _, err := exec.LookPath("duplicates"); err != nil {
		t.Skip("no duplicates command on PATH")
	}
	table := func(name string) string {
		return "CREATE TABLE " + name + " (\n    id uuid PRIMARY KEY,\n    name text NOT NULL,\n" +
			"    country text,\n    created_at timestamptz NOT NULL DEFAULT now(),\n" +
			"    created_by text NOT NULL,\n    updated_at timestamptz NOT NULL DEFAULT now(),\n" +
			"    updated_by text NOT NULL\n);\n"
	}
	code := func(name string) string {
		return "package " + name + "\n\nfunc Sum(xs []int) (n int) {\n\tfor _, x := range xs {\n\t\tif x > 0 {\n" +
			"\t\t\tn += x\n\t\t} else {\n\t\t\tn -= x\n\t\t}\n\t\tn *= 2\n\t}\n\treturn n\n}\n"
	}
	for _, tc := range []struct {
		name  string
		files map[string]string
		want  int
	}{
		{"migrations", map[string]string{
			"services/a/migrations/001_a.sql": table("a"),
			"services/b/migrations/001_b.sql": table("b"),
			"services/a/a.go":                 code("a"),
		}, 0},
		{"code", map[string]string{
			"services/a/a.go": code("a"),
			"services/b/b.go": code("b"),
		}, 1},
		{"SQL outside migrations", map[string]string{
			"services/a/schema/a.sql": table("a"),
			"services/b/schema/b.sql": table("b"),
		}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			for name, text := range tc.files {
				p := filepath.Join(root, filepath.FromSlash(name))
				if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			var c Counts
			Duplicates(root, &c, "services")
			if got := c.Duplicates["services"]; got != tc.want {
				t.Errorf("pairs = %d, want %d", got, tc.want)
			}
		})
	}
}

func TestBlankGoImports(t *testing.T) {
	for _, tc := range []struct {
		name, rel, in, want string
	}{
		{"a group blanked, lines kept", "a.go", "package a\n\nimport (\n\t\"fmt\"\n\n\tx \"os\"\n)\n\nfunc f() {}\n",
			"package a\n\nimport (\n\n\n\n)\n\nfunc f() {}\n"},
		{"a single import left (the command passes over it)", "a.go", "package a\n\nimport \"fmt\"\n", "package a\n\nimport \"fmt\"\n"},
		{"code after the group kept, parentheses and all", "a.go", "import (\n\t\"a\"\n)\nvar v = f(\n)\n",
			"import (\n\n)\nvar v = f(\n)\n"},
		{"not Go: untouched", "a.sql", "import (\n\"a\"\n)\n", "import (\n\"a\"\n)\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := string(blankGoImports(tc.rel, []byte(tc.in))); got != tc.want {
				t.Errorf("blankGoImports(%q) = %q, want %q", tc.in, got, tc.want)
			}
		})
	}
}
