package devstack

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"

	"github.com/assetregistry/registry/pkg/catalog"
)

// Binaries returns REGISTRY_BIN (make test and make faults build them
// first) or builds every deployable of pkg/catalog and devstack itself into
// tmp/bin, so that a test package run alone (go test ./tools/e2e) works too.
func Binaries(tmp string) (string, error) {
	if dir := os.Getenv("REGISTRY_BIN"); dir != "" {
		return dir, nil
	}
	root, err := RepoRoot()
	if err != nil {
		return "", err
	}
	out := filepath.Join(tmp, "bin")
	commands := map[string]string{"devstack": "./tools/cmd/devstack"}
	for _, d := range catalog.Deployables() {
		commands[d.Name] = "./" + d.Command
	}
	for name, pkg := range commands {
		cmd := exec.Command("go", "build", "-o", filepath.Join(out, name), pkg)
		cmd.Dir = root
		if b, err := cmd.CombinedOutput(); err != nil {
			return "", fmt.Errorf("go build %s: %w\n%s", pkg, err, b)
		}
	}
	return out, nil
}

// RepoRoot is the directory holding go.work above the working directory.
func RepoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.work")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("no go.work above %s", dir)
		}
		dir = parent
	}
}
