package devinfra

import (
	"context"
	"os"
	"path/filepath"
	"testing"
)

// Two ephemeral clusters made from the one template are two clusters:
// what one holds, the other does not.
func TestEphemeralClustersAreCopiesOfOneTemplate(t *testing.T) {
	t.Parallel()
	dir := serverTempDir(t)
	a := startTestPostgres(t, PostgresOptions{DataDir: filepath.Join(dir, "a"), Ephemeral: true})
	b := startTestPostgres(t, PostgresOptions{DataDir: filepath.Join(dir, "b"), Ephemeral: true})
	ctx := context.Background()
	if _, err := connectPostgres(t, a.URL).Exec(ctx, "CREATE TABLE only_in_a (id int)"); err != nil {
		t.Fatal(err)
	}
	var found bool
	if err := connectPostgres(t, b.URL).QueryRow(ctx, "SELECT to_regclass('only_in_a') IS NOT NULL").Scan(&found); err != nil {
		t.Fatal(err)
	}
	if found {
		t.Error("a table made in one cluster is in the other: they share their files")
	}
	binDir, err := PostgresBinDir()
	if err != nil {
		t.Fatal(err)
	}
	template, err := templateDir(binDir, initdbArgs(true))
	if err != nil {
		t.Fatal(err)
	}
	if !ownTemplate(template, filepath.Join(template, "data")) {
		t.Errorf("no template of ours at %s after two ephemeral starts", template)
	}
}

// A template someone else could have written is never copied.
func TestTemplateOthersCanWriteIsNotOurs(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "template")
	if err := os.MkdirAll(filepath.Join(dir, "data"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "data", "PG_VERSION"), []byte("15\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if !ownTemplate(dir, filepath.Join(dir, "data")) {
		t.Fatal("a complete template of ours is not taken")
	}
	if err := os.Chmod(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	if ownTemplate(dir, filepath.Join(dir, "data")) {
		t.Error("a template directory anyone can write to is taken as ours")
	}
}
