package housecount

import (
	"os"
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
