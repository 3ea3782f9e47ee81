// Package charttest checks the Helm charts offline, as `make test` runs
// them: lint, render, strict validation against the Kubernetes 1.30 API and
// the CRDs in crds/, the library's helm-unittest suites, values that the
// schema must refuse, and what an SRE checks before installing. The tests
// live in charttest_test.go; this file finds the tools and renders.
package charttest

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"sync"

	"go.yaml.in/yaml/v3"
)

// Tools are the pinned chart tools (tools/scripts/chart-tools.sh).
type Tools struct {
	Helm, HelmPlugins, KubectlValidate string
}

var (
	toolsOnce sync.Once
	tools     Tools
	toolsErr  error
)

// FindTools builds the tools if this machine has not yet (the script caches
// them outside the work tree and is a no-op when they are there), and
// returns where they are.
func FindTools(repoRoot string) (Tools, error) {
	toolsOnce.Do(func() {
		cmd := exec.Command(filepath.Join(repoRoot, "tools", "scripts", "chart-tools.sh"))
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			toolsErr = fmt.Errorf("chart-tools.sh: %w\n%s", err, stderr.String())
			return
		}
		vars := map[string]string{}
		sc := bufio.NewScanner(bytes.NewReader(out))
		for sc.Scan() {
			if k, v, ok := strings.Cut(sc.Text(), "="); ok {
				vars[k] = v
			}
		}
		tools = Tools{Helm: vars["HELM"], HelmPlugins: vars["HELM_PLUGINS"], KubectlValidate: vars["KUBECTL_VALIDATE"]}
		if tools.Helm == "" || tools.HelmPlugins == "" || tools.KubectlValidate == "" {
			toolsErr = fmt.Errorf("chart-tools.sh printed %q", out)
		}
	})
	return tools, toolsErr
}

// Workspace is a copy of the repository's charts and CRDs with every
// chart's dependencies built, so that checks never write into the work tree.
type Workspace struct {
	Dir   string // holds charts/ and crds/
	tools Tools
	home  string // Helm's cache, config and data
}

// NewWorkspace copies charts/ and crds/ from repoRoot into dir and builds
// the dependencies: each deployable chart's library first, then the
// umbrella (which packages those charts) and the library's test chart.
func NewWorkspace(repoRoot, dir string, t Tools, deployables []string) (*Workspace, error) {
	for _, sub := range []string{"charts", "crds"} {
		if err := copyTree(filepath.Join(repoRoot, sub), filepath.Join(dir, sub)); err != nil {
			return nil, err
		}
	}
	w := &Workspace{Dir: dir, tools: t, home: filepath.Join(dir, ".helm")}
	var charts []string
	for _, d := range deployables {
		charts = append(charts, "charts/"+d)
	}
	charts = append(charts, "charts/registry", "charts/registry-lib/tests/fixture")
	for _, c := range charts {
		if _, err := w.Helm("dependency", "update", "--skip-refresh", filepath.Join(dir, c)); err != nil {
			return nil, err
		}
	}
	return w, nil
}

// Helm runs helm with a private home and the unittest plugin; the error
// carries helm's output.
func (w *Workspace) Helm(args ...string) ([]byte, error) {
	cmd := exec.Command(w.tools.Helm, args...)
	cmd.Dir = w.Dir
	cmd.Env = append(os.Environ(),
		"HELM_CACHE_HOME="+filepath.Join(w.home, "cache"),
		"HELM_CONFIG_HOME="+filepath.Join(w.home, "config"),
		"HELM_DATA_HOME="+filepath.Join(w.home, "data"),
		"HELM_PLUGINS="+w.tools.HelmPlugins,
	)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return out, fmt.Errorf("helm %s: %w\n%s%s", strings.Join(args, " "), err, out, stderr.String())
	}
	return out, nil
}

// Template renders a chart (a path under the workspace) as release
// "registry" in namespace, with the values files and --set flags given.
func (w *Workspace) Template(chart, namespace string, valuesFiles []string, sets ...string) ([]byte, error) {
	args := []string{"template", "registry", chart, "--namespace", namespace}
	for _, f := range valuesFiles {
		args = append(args, "--values", f)
	}
	for _, s := range sets {
		args = append(args, "--set", s)
	}
	return w.Helm(args...)
}

// Validate checks rendered manifests strictly: Kubernetes kinds against
// the 1.30 schemas kubectl-validate bundles, the others against crds/.
func (w *Workspace) Validate(name string, manifests []byte) error {
	dir, err := os.MkdirTemp(w.Dir, "validate-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	file := filepath.Join(dir, name+".yaml")
	if err := os.WriteFile(file, manifests, 0o644); err != nil {
		return err
	}
	args := []string{file, "--version", "1.30"}
	crdDirs, err := os.ReadDir(filepath.Join(w.Dir, "crds"))
	if err != nil {
		return err
	}
	for _, d := range crdDirs {
		if d.IsDir() {
			args = append(args, "--local-crds", filepath.Join(w.Dir, "crds", d.Name()))
		}
	}
	cmd := exec.Command(w.tools.KubectlValidate, args...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("kubectl-validate %s: %w\n%s", name, err, out)
	}
	return nil
}

// Doc is one rendered Kubernetes object.
type Doc map[string]any

// Kind and Name of the object.
func (d Doc) Kind() string { s, _ := d["kind"].(string); return s }
func (d Doc) Name() string { s, _ := Get(d, "metadata", "name").(string); return s }

// Docs splits rendered manifests into objects.
func Docs(manifests []byte) ([]Doc, error) {
	dec := yaml.NewDecoder(bytes.NewReader(manifests))
	var docs []Doc
	for {
		// Into a plain map: yaml.v3 gives nested mappings the type of the
		// outer one, and Get walks plain maps.
		var m map[string]any
		err := dec.Decode(&m)
		if errors.Is(err, io.EOF) {
			return docs, nil
		}
		if err != nil {
			return nil, err
		}
		if m != nil {
			docs = append(docs, Doc(m))
		}
	}
}

// ChangedObjects is the objects of manifests that base does not hold as
// they are (the same kind and name with equal contents), as YAML
// documents: what a render with other values adds or changes.
func ChangedObjects(base []Doc, manifests []byte) ([]byte, error) {
	docs, err := Docs(manifests)
	if err != nil {
		return nil, err
	}
	before := byKey(base)
	var out bytes.Buffer
	for _, d := range docs {
		if b, ok := before[d.key()]; ok && reflect.DeepEqual(b, d) {
			continue
		}
		raw, err := yaml.Marshal(map[string]any(d))
		if err != nil {
			return nil, fmt.Errorf("%s/%s: %w", d.Kind(), d.Name(), err)
		}
		out.WriteString("---\n")
		out.Write(raw)
	}
	return out.Bytes(), nil
}

// key names an object within one namespace's render: its kind and name.
func (d Doc) key() string { return d.Kind() + "/" + d.Name() }

// byKey is docs by their keys.
func byKey(docs []Doc) map[string]Doc {
	m := make(map[string]Doc, len(docs))
	for _, d := range docs {
		m[d.key()] = d
	}
	return m
}

// Get walks maps and lists (by int index) and returns what is at path, or nil.
func Get(v any, path ...any) any {
	if d, ok := v.(Doc); ok {
		v = map[string]any(d)
	}
	for _, p := range path {
		switch key := p.(type) {
		case string:
			m, ok := v.(map[string]any)
			if !ok {
				return nil
			}
			v = m[key]
		case int:
			l, ok := v.([]any)
			if !ok || key >= len(l) {
				return nil
			}
			v = l[key]
		}
	}
	return v
}

func copyTree(src, dst string) error {
	return filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, path)
		target := filepath.Join(dst, rel)
		if d.IsDir() {
			// Dependencies built in the work tree by hand are not the ones under test.
			if d.Name() == "charts" && path != src {
				return filepath.SkipDir
			}
			return os.MkdirAll(target, 0o755)
		}
		if filepath.Ext(path) == ".tgz" || d.Name() == "Chart.lock" {
			return nil
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(target, data, 0o644)
	})
}
