package image_test

import (
	"archive/tar"
	"bytes"
	"debug/elf"
	"io"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/assetregistry/registry/pkg/catalog"
	"github.com/assetregistry/registry/tools/image"
)

// TestEveryDeployableImage builds the image of every catalog deployable the
// way `make images` does, writes it out, reads it back from the OCI layout
// and the tarball, and checks what an SRE checks before running it.
func TestEveryDeployableImage(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	created := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	built := map[string]v1.Image{}
	specs := map[string]image.Spec{}
	var commands []string
	for _, d := range catalog.Deployables() {
		commands = append(commands, d.Command)
	}
	bins, err := image.Binaries(t.Context(), root, commands, image.HostArch(), out)
	if err != nil {
		t.Fatal(err)
	}
	for i, d := range catalog.Deployables() {
		spec := image.Spec{Name: d.Name, Binary: bins[i], Version: "1.2.3-test", Revision: "0123456789abcdef", Created: created, Arch: image.HostArch()}
		img, err := image.Build(spec)
		if err != nil {
			t.Fatal(err)
		}
		if err := image.WriteTarball(filepath.Join(out, d.Name+".tar"), spec.Ref(), img); err != nil {
			t.Fatal(err)
		}
		built[spec.Ref()] = img
		specs[spec.Ref()] = spec
	}
	if err := image.WriteLayout(filepath.Join(out, "oci"), built); err != nil {
		t.Fatal(err)
	}

	index, err := layout.ImageIndexFromPath(filepath.Join(out, "oci"))
	if err != nil {
		t.Fatal(err)
	}
	manifest, err := index.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	if len(manifest.Manifests) != len(catalog.Deployables()) {
		t.Fatalf("layout holds %d images, want one per deployable (%d)", len(manifest.Manifests), len(catalog.Deployables()))
	}
	for _, desc := range manifest.Manifests {
		ref := desc.Annotations[image.LabelRefName]
		spec, ok := specs[ref]
		if !ok {
			t.Errorf("layout holds %q, which was not built", ref)
			continue
		}
		t.Run(spec.Name, func(t *testing.T) {
			fromLayout, err := index.Image(desc.Digest)
			if err != nil {
				t.Fatal(err)
			}
			checkImage(t, spec, fromLayout)
			tag, _ := name.NewTag(ref)
			fromTarball, err := tarball.ImageFromPath(filepath.Join(out, spec.Name+".tar"), &tag)
			if err != nil {
				t.Fatal(err)
			}
			a, _ := fromLayout.ConfigName()
			b, _ := fromTarball.ConfigName()
			if a != b {
				t.Errorf("tarball config %s differs from the layout's %s", b, a)
			}
		})
	}
}

func checkImage(t *testing.T, spec image.Spec, img v1.Image) {
	t.Helper()
	mt, err := img.MediaType()
	if err != nil || mt != types.OCIManifestSchema1 {
		t.Errorf("manifest media type %q (%v), want OCI", mt, err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	c := cf.Config
	if c.User != "65532:65532" {
		t.Errorf("user %q, want the numeric non-root 65532:65532", c.User)
	}
	if !slices.Equal(c.Entrypoint, []string{"/app"}) {
		t.Errorf("entrypoint %q, want [/app]", c.Entrypoint)
	}
	if len(c.Cmd) != 0 {
		t.Errorf("cmd %q: the charts give the arguments", c.Cmd)
	}
	for key, want := range map[string]string{
		image.LabelVersion: spec.Version, image.LabelRevision: spec.Revision, image.LabelTitle: spec.Name,
	} {
		if got := c.Labels[key]; got != want {
			t.Errorf("label %s = %q, want %q", key, got, want)
		}
	}
	if cf.OS != "linux" || cf.Architecture != spec.Arch {
		t.Errorf("platform %s/%s, want linux/%s", cf.OS, cf.Architecture, spec.Arch)
	}
	if !cf.Created.Time.Equal(spec.Created) {
		t.Errorf("created %s, want the source date %s", cf.Created, spec.Created)
	}

	files := map[string][]byte{}
	tr := tar.NewReader(mutate.Extract(img))
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		data, _ := io.ReadAll(tr)
		files["/"+strings.TrimSuffix(h.Name, "/")] = data
	}
	for path := range files {
		if !slices.Contains([]string{"/etc", "/etc/passwd", "/etc/group", "/tmp", "/app"}, path) {
			t.Errorf("unexpected file %s in the image", path)
		}
	}
	for _, shell := range []string{"/bin/sh", "/bin/bash", "/bin/busybox", "/usr/bin/sh"} {
		if _, ok := files[shell]; ok {
			t.Errorf("the image has a shell: %s", shell)
		}
	}
	bin, ok := files["/app"]
	if !ok {
		t.Fatal("no /app in the image")
	}
	f, err := elf.NewFile(bytes.NewReader(bin))
	if err != nil {
		t.Fatalf("/app is not an ELF binary: %v", err)
	}
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			t.Error("/app is dynamically linked: an empty base has no loader")
		}
	}
}

// TestImagePushes writes an image to a real OCI registry (go-containerregistry's
// own, on loopback) as skaffold's custom builder does, and reads it back.
func TestImagePushes(t *testing.T) {
	srv := httptest.NewServer(registry.New())
	defer srv.Close()
	host := strings.TrimPrefix(srv.URL, "http://")
	root, _ := filepath.Abs("../..")
	bins, err := image.Binaries(t.Context(), root, []string{catalog.Gateway.Command}, image.HostArch(), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	spec := image.Spec{Name: "api-gateway", Binary: bins[0], Version: "push-test", Revision: "r", Created: time.Unix(0, 0).UTC(), Arch: image.HostArch()}
	img, err := image.Build(spec)
	if err != nil {
		t.Fatal(err)
	}
	ref, err := name.ParseReference(host+"/asset-registry/api-gateway:push-test", name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Write(ref, img, remote.WithContext(t.Context())); err != nil {
		t.Fatal(err)
	}
	pulled, err := remote.Image(ref, remote.WithContext(t.Context()))
	if err != nil {
		t.Fatal(err)
	}
	want, _ := img.Digest()
	got, _ := pulled.Digest()
	if got != want {
		t.Errorf("pulled digest %s, pushed %s", got, want)
	}
}
