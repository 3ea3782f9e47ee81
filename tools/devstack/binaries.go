package devstack

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"

	"github.com/assetregistry/registry/pkg/catalog"
	"github.com/assetregistry/registry/tools/devinfra"
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

// Suite is the whole registry started for a test suite (tools/e2e,
// tools/faults): its stack, its machine clients, and where its binaries
// and files are.
type Suite struct {
	*Stack
	Creds Credentials
	Bin   string // the binaries' directory
	Dir   string // the suite's own temporary directory
}

// StartSuite makes a temporary directory (name-*), finds or builds the
// binaries (Binaries), starts the stack with o (its Dir and BinDir are
// set here) within ctx and makes its machine clients. stop stops the
// stack and removes the directory; it reports what went wrong stopping.
func StartSuite(ctx context.Context, name string, o Options) (s *Suite, stop func() error, err error) {
	dir, err := devinfra.MkdirTemp(name + "-")
	if err != nil {
		return nil, nil, err
	}
	removeDir := func() error { return devinfra.RemoveDir(dir) }
	bin, err := Binaries(dir)
	if err != nil {
		_ = removeDir()
		return nil, nil, fmt.Errorf("build binaries: %w", err)
	}
	o.Dir, o.BinDir = dir, bin
	stack, err := Start(ctx, o)
	if err != nil {
		_ = removeDir()
		return nil, nil, fmt.Errorf("start stack: %w", err)
	}
	stop = func() error { return errors.Join(stack.Stop(), removeDir()) }
	creds, err := stack.EnsureClients(ctx, filepath.Join(dir, "registry.env"))
	if err != nil {
		return nil, nil, errors.Join(fmt.Errorf("clients: %w", err), stop())
	}
	return &Suite{Stack: stack, Creds: creds, Bin: bin, Dir: dir}, stop, nil
}

// BuildInto builds the binaries of the named deployables of pkg/catalog
// into bin with one go build (each shared dependency compiled once), in
// the repository around the working directory, with the caller's Go
// environment (make run's flags, so its build cache serves both builds).
func BuildInto(ctx context.Context, bin string, names ...string) error {
	root, err := RepoRoot()
	if err != nil {
		return err
	}
	if bin, err = filepath.Abs(bin); err != nil {
		return err
	}
	args := []string{"build", "-o", bin + string(filepath.Separator)}
	for _, name := range names {
		i := slices.IndexFunc(catalog.Deployables(), func(d catalog.Deployable) bool { return d.Name == name })
		if i < 0 {
			return fmt.Errorf("build %s: no such deployable in pkg/catalog", name)
		}
		args = append(args, "./"+catalog.Deployables()[i].Command)
	}
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = root
	if b, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go %s: %w\n%s", strings.Join(args, " "), err, b)
	}
	return nil
}
