// Package image builds the registry's container images without a container
// engine: each is the deployable's static binary on an empty base, run as a
// non-root numeric user, with no shell and the binary as its entry point.
// go-containerregistry assembles them (the same library crane is made of),
// so the output is an ordinary OCI image that any registry or runtime takes.
package image

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// The user every image runs as: distroless's "nonroot", by number, so that
// runAsNonRoot can be verified without an /etc/passwd lookup.
const (
	UID        = 65532
	Entrypoint = "/app"
)

// OCI annotation and label keys.
const (
	LabelTitle    = "org.opencontainers.image.title"
	LabelVersion  = "org.opencontainers.image.version"
	LabelRevision = "org.opencontainers.image.revision"
	LabelCreated  = "org.opencontainers.image.created"
	LabelRefName  = "org.opencontainers.image.ref.name"
)

// Spec is one image to build.
type Spec struct {
	Name     string    // deployable name: image asset-registry/<name>
	Binary   string    // path of its static linux binary
	Version  string    // image tag and version label
	Revision string    // source revision (git commit)
	Created  time.Time // image and file times: the commit's, so builds repeat
	Arch     string    // GOARCH of Binary
}

// Build assembles the image of spec.
func Build(spec Spec) (v1.Image, error) {
	bin, err := os.ReadFile(spec.Binary)
	if err != nil {
		return nil, fmt.Errorf("image %s: %w", spec.Name, err)
	}
	layerTar, err := rootFS(bin, spec.Created)
	if err != nil {
		return nil, fmt.Errorf("image %s: %w", spec.Name, err)
	}
	// Compressed once here: from an uncompressed opener the layer
	// compresses the binary again for its digest, for the tarball and for
	// the OCI layout, most of the CPU an image costs.
	layerGz, err := compress(layerTar)
	if err != nil {
		return nil, fmt.Errorf("image %s: %w", spec.Name, err)
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(layerGz)), nil },
		tarball.WithMediaType(types.OCILayer))
	if err != nil {
		return nil, fmt.Errorf("image %s: layer: %w", spec.Name, err)
	}
	base := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	base = mutate.ConfigMediaType(base, types.OCIConfigJSON)
	img, err := mutate.Append(base, mutate.Addendum{
		Layer:     layer,
		MediaType: types.OCILayer,
		History:   v1.History{CreatedBy: "tools/cmd/images: static binary on an empty base", Created: v1.Time{Time: spec.Created}},
	})
	if err != nil {
		return nil, fmt.Errorf("image %s: %w", spec.Name, err)
	}
	labels := spec.labels()
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cf = cf.DeepCopy()
	cf.OS = "linux"
	cf.Architecture = spec.Arch
	cf.Created = v1.Time{Time: spec.Created}
	cf.Config = v1.Config{
		User:         fmt.Sprintf("%d:%d", UID, UID),
		Entrypoint:   []string{Entrypoint},
		WorkingDir:   "/",
		ExposedPorts: map[string]struct{}{"8080/tcp": {}, "9090/tcp": {}},
		Labels:       labels,
	}
	img, err = mutate.ConfigFile(img, cf)
	if err != nil {
		return nil, fmt.Errorf("image %s: config: %w", spec.Name, err)
	}
	return mutate.Annotations(img, labels).(v1.Image), nil
}

func (s Spec) labels() map[string]string {
	return map[string]string{
		LabelTitle:    s.Name,
		LabelVersion:  s.Version,
		LabelRevision: s.Revision,
		LabelCreated:  s.Created.UTC().Format(time.RFC3339),
	}
}

// Ref is the image's name and tag, e.g. asset-registry/parties:1.2.0.
func (s Spec) Ref() string { return fmt.Sprintf("asset-registry/%s:%s", s.Name, s.Version) }

// rootFS is the image's one layer: the binary, an /etc/passwd and
// /etc/group naming its user (for tools that print names), and a writable
// /tmp. Nothing else: no shell, no package manager.
func rootFS(binary []byte, mtime time.Time) ([]byte, error) {
	// Sized up front: grown by doubling, the buffer's copies of a 20 MB
	// binary cost a quarter of an image's CPU.
	var buf bytes.Buffer
	buf.Grow(len(binary) + 64<<10)
	tw := tar.NewWriter(&buf)
	dir := func(name string, mode int64) error {
		return tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: name, Mode: mode, ModTime: mtime, Format: tar.FormatPAX})
	}
	file := func(name string, mode int64, data []byte) error {
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: name, Mode: mode, Size: int64(len(data)),
			ModTime: mtime, Format: tar.FormatPAX}); err != nil {
			return err
		}
		_, err := tw.Write(data)
		return err
	}
	passwd := fmt.Sprintf("root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:%d:%d:nonroot:/home/nonroot:/sbin/nologin\n", UID, UID)
	group := fmt.Sprintf("root:x:0:\nnonroot:x:%d:\n", UID)
	err := errors.Join(
		dir("etc/", 0o755),
		file("etc/passwd", 0o644, []byte(passwd)),
		file("etc/group", 0o644, []byte(group)),
		dir("tmp/", 0o1777),
		file(strings.TrimPrefix(Entrypoint, "/"), 0o755, binary),
		tw.Close(),
	)
	return buf.Bytes(), err
}

// compress gzips a layer at the speed go-containerregistry compresses
// layers with by default.
func compress(layer []byte) ([]byte, error) {
	var buf bytes.Buffer
	buf.Grow(len(layer) / 2) // what BestSpeed leaves of a static binary, about
	zw, err := gzip.NewWriterLevel(&buf, gzip.BestSpeed)
	if err != nil {
		return nil, err
	}
	if _, err := zw.Write(layer); err != nil {
		return nil, fmt.Errorf("compress layer: %w", err)
	}
	if err := zw.Close(); err != nil {
		return nil, fmt.Errorf("compress layer: %w", err)
	}
	return buf.Bytes(), nil
}

// Binaries builds static, trimmed linux binaries of the main packages at
// commands (relative to repoRoot) into dir and returns their paths, in
// the order given. One go build links them side by side and loads the
// packages once: a go build per command cost the image tests a third
// more CPU.
func Binaries(ctx context.Context, repoRoot string, commands []string, arch, dir string) ([]string, error) {
	args := []string{"build", "-trimpath", "-ldflags=-s -w -buildid=", "-o", dir + string(filepath.Separator)}
	var out []string
	for _, command := range commands {
		args = append(args, "./"+command)
		out = append(out, filepath.Join(dir, filepath.Base(command)))
	}
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = repoRoot
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH="+arch)
	if msg, err := cmd.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("go build %s: %w\n%s", strings.Join(commands, " "), err, msg)
	}
	return out, nil
}

// HostArch is the architecture images are built for by default.
func HostArch() string { return runtime.GOARCH }

// WriteLayout adds images to the OCI layout at dir (created if missing),
// each annotated with its reference name.
func WriteLayout(dir string, images map[string]v1.Image) error {
	p, err := layout.FromPath(dir)
	if err != nil {
		if p, err = layout.Write(dir, empty.Index); err != nil {
			return fmt.Errorf("oci layout %s: %w", dir, err)
		}
	}
	for ref, img := range images {
		if err := p.ReplaceImage(img, matchRef(ref), layout.WithAnnotations(map[string]string{LabelRefName: ref})); err != nil {
			return fmt.Errorf("oci layout %s: %w", dir, err)
		}
	}
	return nil
}

func matchRef(ref string) func(v1.Descriptor) bool {
	return func(d v1.Descriptor) bool { return d.Annotations[LabelRefName] == ref }
}

// WriteTarball writes img as a tarball that `docker load`, `kind load
// image-archive` and `crane push` take.
func WriteTarball(path, ref string, img v1.Image) error {
	tag, err := name.NewTag(ref)
	if err != nil {
		return err
	}
	return tarball.WriteToFile(path, tag, img)
}

// SourceDate is the time images carry: SOURCE_DATE_EPOCH when set, else the
// commit's time, so two builds of one commit are the same image.
func SourceDate(ctx context.Context, repoRoot string) time.Time {
	if s := os.Getenv("SOURCE_DATE_EPOCH"); s != "" {
		if n, err := strconv.ParseInt(s, 10, 64); err == nil {
			return time.Unix(n, 0).UTC()
		}
	}
	out, err := git(ctx, repoRoot, "log", "-1", "--format=%ct")
	if n, perr := strconv.ParseInt(out, 10, 64); err == nil && perr == nil {
		return time.Unix(n, 0).UTC()
	}
	return time.Unix(0, 0).UTC()
}

// Revision is the commit images are built from ("unknown" outside git),
// marked -dirty when the work tree has changes.
func Revision(ctx context.Context, repoRoot string) string {
	rev, err := git(ctx, repoRoot, "rev-parse", "HEAD")
	if err != nil || rev == "" {
		return "unknown"
	}
	if status, err := git(ctx, repoRoot, "status", "--porcelain"); err == nil && status != "" {
		rev += "-dirty"
	}
	return rev
}

// Version is the images' tag: VERSION when set, else `git describe`.
func Version(ctx context.Context, repoRoot string) string {
	if v := os.Getenv("VERSION"); v != "" {
		return v
	}
	v, err := git(ctx, repoRoot, "describe", "--tags", "--always", "--dirty")
	if err != nil || v == "" {
		return "dev"
	}
	return v
}

func git(ctx context.Context, dir string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, "git", args...)
	cmd.Dir = dir
	out, err := cmd.Output()
	return strings.TrimSpace(string(out)), err
}
