// Command images builds the registry's container images without a container
// engine (see package image): `make images` writes every deployable's image
// to build/images/oci (one OCI layout) and build/images/<name>.tar (for
// docker load, kind load image-archive or crane push).
//
// With -skaffold it is skaffold's custom builder: it builds the one image
// named by -only as $IMAGE and pushes it when $PUSH_IMAGE is true, or else
// loads it into a local docker when there is one.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"

	"github.com/assetregistry/registry/pkg/catalog"
	"github.com/assetregistry/registry/tools/image"
)

func main() {
	var cfg config
	flag.StringVar(&cfg.root, "root", ".", "repository root")
	flag.StringVar(&cfg.out, "out", "build/images", "output folder (git-ignored)")
	flag.StringVar(&cfg.only, "only", "", "comma-separated deployables to build; empty builds every one")
	flag.StringVar(&cfg.arch, "arch", image.HostArch(), "GOARCH of the images")
	flag.BoolVar(&cfg.skaffold, "skaffold", false, "act as skaffold's custom builder ($IMAGE, $PUSH_IMAGE)")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, cfg); err != nil {
		fmt.Fprintln(os.Stderr, "images:", err)
		os.Exit(1)
	}
}

type config struct {
	root, out, only, arch string
	skaffold              bool
}

func run(ctx context.Context, cfg config) error {
	var chosen []catalog.Deployable
	for _, d := range catalog.Deployables() {
		if cfg.only == "" || slices.Contains(strings.Split(cfg.only, ","), d.Name) {
			chosen = append(chosen, d)
		}
	}
	if len(chosen) == 0 {
		return fmt.Errorf("no deployable named %q in pkg/catalog", cfg.only)
	}
	if cfg.skaffold && len(chosen) != 1 {
		return errors.New("-skaffold builds exactly one deployable (-only)")
	}
	binDir := filepath.Join(cfg.out, "bin", cfg.arch)
	if err := os.MkdirAll(binDir, 0o755); err != nil {
		return err
	}
	version := image.Version(ctx, cfg.root)
	if cfg.skaffold {
		if ref, err := name.ParseReference(os.Getenv("IMAGE")); err == nil {
			version = ref.Identifier()
		}
	}
	revision := image.Revision(ctx, cfg.root)
	created := image.SourceDate(ctx, cfg.root)
	var commands []string
	for _, d := range chosen {
		commands = append(commands, d.Command)
	}
	bins, err := image.Binaries(ctx, cfg.root, commands, cfg.arch, binDir)
	if err != nil {
		return err
	}
	built := map[string]v1.Image{}
	for i, d := range chosen {
		spec := image.Spec{Name: d.Name, Binary: bins[i], Version: version, Revision: revision, Created: created, Arch: cfg.arch}
		img, err := image.Build(spec)
		if err != nil {
			return err
		}
		if cfg.skaffold {
			return deliver(ctx, img)
		}
		if err := image.WriteTarball(filepath.Join(cfg.out, d.Name+".tar"), spec.Ref(), img); err != nil {
			return err
		}
		built[spec.Ref()] = img
		digest, err := img.Digest()
		if err != nil {
			return err
		}
		fmt.Printf("%s %s\n", spec.Ref(), digest)
	}
	return image.WriteLayout(filepath.Join(cfg.out, "oci"), built)
}

// deliver hands the image to skaffold: pushed to $IMAGE when skaffold
// pushes, else loaded into the local docker (a kind or minikube cluster
// takes it from there).
func deliver(ctx context.Context, img v1.Image) error {
	target := os.Getenv("IMAGE")
	if target == "" {
		return errors.New("-skaffold needs $IMAGE")
	}
	if os.Getenv("PUSH_IMAGE") == "true" {
		ref, err := name.ParseReference(target)
		if err != nil {
			return err
		}
		return remote.Write(ref, img, remote.WithContext(ctx), remote.WithAuthFromKeychain(authn.DefaultKeychain))
	}
	docker, err := exec.LookPath("docker")
	if err != nil {
		return fmt.Errorf("skaffold did not ask to push %s and there is no docker to load it into: "+
			"push to a registry (skaffold --default-repo=… or build.local.push: true)", target)
	}
	tag, err := name.NewTag(target)
	if err != nil {
		return err
	}
	r, w := io.Pipe()
	go func() { w.CloseWithError(tarball.Write(tag, img, w)) }()
	cmd := exec.CommandContext(ctx, docker, "load")
	cmd.Stdin, cmd.Stdout, cmd.Stderr = r, os.Stderr, os.Stderr
	return cmd.Run()
}
