package main

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A row's document_file names a file inside the documents folder, and
// nothing else: rows from someone else must not make the command upload a
// file of its user's elsewhere on the machine.
func TestDocumentFileStaysInItsFolder(t *testing.T) {
	outside := t.TempDir()
	secret := filepath.Join(outside, "id_ed25519")
	writeFile(t, secret, "private key")
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "report.pdf"), "report")
	writeFile(t, filepath.Join(dir, "2025", "march.pdf"), "march")
	symlink(t, secret, filepath.Join(dir, "key.pdf"))
	symlink(t, outside, filepath.Join(dir, "elsewhere"))
	symlink(t, "report.pdf", filepath.Join(dir, "latest.pdf"))
	folder, err := openDocumentsFolder(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { folder.Close() })

	tests := []struct {
		name, file string
		content    string // what is uploaded; "" when the row is refused
		problem    string // part of the row's problem
	}{
		{"a file in the folder", "report.pdf", "report", ""},
		{"a file in a subfolder", "2025/march.pdf", "march", ""},
		{"a .. that stays inside", "2025/../report.pdf", "report", ""},
		{"a symbolic link inside the folder", "latest.pdf", "report", ""},
		{"an absolute path", secret, "", "is an absolute path"},
		{"an absolute path to the folder's own file", filepath.Join(dir, "report.pdf"), "", "is an absolute path"},
		{"a .. that climbs out", "../" + filepath.Base(outside) + "/id_ed25519", "", "leaves the documents folder"},
		{"a .. further down that climbs out", "2025/../../x", "", "leaves the documents folder"},
		{"a symbolic link to a file outside", "key.pdf", "", "through a symbolic link"},
		{"a symbolic link to a folder outside", "elsewhere/id_ed25519", "", "through a symbolic link"},
		{"a missing file", "nope.pdf", "", "no such file in the documents folder"},
		{"a folder", "2025", "", "not a regular file"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := row{n: 1, values: map[string]string{"asset_type_brand": "B", "asset_type_model": "M", "asset_serial_number": "S",
				"action_type": "repair", "performed_at": "2025-01-01", "document_file": tt.file}}
			errs := validate(r, folder, builtinActionTypes)
			if tt.problem == "" {
				if len(errs) > 0 {
					t.Fatalf("refused: %v", errs)
				}
				f, err := folder.open(tt.file)
				if err != nil {
					t.Fatal(err)
				}
				defer f.Close()
				if got, _ := io.ReadAll(f); string(got) != tt.content {
					t.Errorf("uploads %q, want %q", got, tt.content)
				}
				return
			}
			if len(errs) != 1 || errs[0].Field != "document_file" || !strings.Contains(errs[0].Problem, tt.problem) {
				t.Fatalf("problems %v, want one of document_file saying %q", errs, tt.problem)
			}
			if f, err := folder.open(tt.file); err == nil {
				f.Close()
				t.Errorf("the upload opens %s", tt.file)
			}
		})
	}
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}

func symlink(t *testing.T, target, link string) {
	t.Helper()
	if err := os.Symlink(target, link); err != nil {
		t.Skip("symbolic links cannot be made here:", err)
	}
}
