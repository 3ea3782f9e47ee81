package devinfra

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
)

// HydraVersion pins ORY Hydra, the independent OAuth 2.0 / OpenID Connect
// server that the end-to-end tests check the registry against (a second
// implementation next to tools/idp, so that the registry is known to work
// with an issuer it was not written with). It is a version of the Go module
// github.com/ory/hydra/v2, built from source by EnsureHydraServer.
//
// Hydra's go.mod replaces its API client module with a directory
// (./internal/httpclient) that is a module of its own and so not in the
// module zip; `go install module@version` refuses any replace. The build
// therefore copies the module, drops that one replace, and takes the client
// module at the version Hydra requires from the module proxy, its checksum
// pinned below. Hydra's other replace (pop, to a fork of ORY's) stays, so
// every other dependency is exactly what Hydra's own go.mod and go.sum
// select.
//
// A cold build (empty module and build caches) costs about 3.6 CPU-minutes
// (179 s user, 38 s system, 550 MB peak memory) and downloads 300 MB of
// modules; see docs/testing.md. A new pin needs new checksums: `go mod
// download -json github.com/ory/hydra/v2@<version>` gives the module's Sum,
// and the client module's lines come from a build with the checksum
// database reachable.
const HydraVersion = "v2.3.0"

const (
	hydraModule = "github.com/ory/hydra/v2"
	// hydraModuleSum is the checksum (go.sum's h1:) of the Hydra module
	// zip, checked before anything in it is used.
	hydraModuleSum = "h1:bPs5MOWmYLZ9C3oQFhhjnaBrExUgF/zf3u1AJVlR//4="
	// hydraClientModule is the replace the build drops.
	hydraClientModule = "github.com/ory/hydra-client-go/v2"
	// hydraClientSums are the go.sum lines of the client module version
	// Hydra requires, so the build needs no checksum database.
	hydraClientSums = "github.com/ory/hydra-client-go/v2 v2.2.1 h1:m1821pIX6ybG/3oSAn2wtrbBKNwe9q5A8fLljYuLpBk=\n" +
		"github.com/ory/hydra-client-go/v2 v2.2.1/go.mod h1:K83R+iK40+5uF2uQ34yRUrf9izRvFsza9pG2Se5qMmk=\n"
)

// HydraServerPath returns where EnsureHydraServer keeps the pinned Hydra:
// ${XDG_CACHE_HOME:-$HOME/.cache}/asset-registry/tools/hydra-<version>/hydra.
func HydraServerPath() (string, error) { return toolPath("hydra", HydraVersion) }

// EnsureHydraServer returns the path of the pinned Hydra server, building it
// first if it is not cached yet (minutes, once per version and machine;
// progress, which may be nil, hears of the start and end). Concurrent
// callers wait for one build.
func EnsureHydraServer(ctx context.Context, progress io.Writer) (string, error) {
	bin, err := HydraServerPath()
	if err != nil {
		return "", err
	}
	if err := buildToolOnce(ctx, bin, "ORY Hydra "+HydraVersion, progress, buildHydra); err != nil {
		return "", err
	}
	return bin, nil
}

// buildHydra builds scratch/hydra from a copy of the Hydra module.
func buildHydra(ctx context.Context, scratch string, log io.Writer) error {
	var out bytes.Buffer
	if err := runGo(ctx, scratch, io.MultiWriter(&out, log), "mod", "download", "-json", hydraModule+"@"+HydraVersion); err != nil {
		return err
	}
	var mod struct{ Dir, Sum string }
	if err := json.Unmarshal(out.Bytes(), &mod); err != nil {
		return fmt.Errorf("read go mod download's answer: %w", err)
	}
	if mod.Sum != hydraModuleSum {
		return fmt.Errorf("%s@%s has checksum %s, want the pinned %s", hydraModule, HydraVersion, mod.Sum, hydraModuleSum)
	}
	src := filepath.Join(scratch, "src")
	if err := copyTree(mod.Dir, src); err != nil {
		return fmt.Errorf("copy the Hydra module: %w", err)
	}
	if err := runGo(ctx, src, log, "mod", "edit", "-dropreplace="+hydraClientModule); err != nil {
		return err
	}
	sums, err := os.OpenFile(filepath.Join(src, "go.sum"), os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		return err
	}
	_, err = sums.WriteString(hydraClientSums)
	if closeErr := sums.Close(); err == nil {
		err = closeErr
	}
	if err != nil {
		return fmt.Errorf("pin the client module's checksums: %w", err)
	}
	// Without cgo there is no SQLite (Hydra's "memory" DSN), so the tests
	// give it PostgreSQL; nor its HSM support, which nothing here needs.
	return runGo(ctx, src, log, "build", "-trimpath",
		"-ldflags=-s -w -X github.com/ory/hydra/v2/driver/config.Version="+HydraVersion,
		"-o", filepath.Join(scratch, "hydra"), ".")
}

// copyTree copies the regular files and directories under from (a module in
// the read-only module cache) to a new, writable to.
func copyTree(from, to string) error {
	return filepath.WalkDir(from, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(from, path)
		if err != nil {
			return err
		}
		target := filepath.Join(to, rel)
		switch {
		case d.IsDir():
			return os.MkdirAll(target, 0o755)
		case !d.Type().IsRegular():
			return nil // module zips hold no links or devices
		}
		raw, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(target, raw, 0o644)
	})
}
