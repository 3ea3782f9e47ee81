package deploygen

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// TestSkaffoldProfilesCompose reads skaffold.yaml as skaffold would apply
// it: every profile's JSON patches must land on existing fields, every
// deployable must have an artifact and a profile, and an environment
// profile and a deployable's profile must give the same result in either
// order (`-p prod,parties` = `-p parties,prod`).
func TestSkaffoldProfilesCompose(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(root, "skaffold.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var cfg map[string]any
	if err := yaml.Unmarshal(data, &cfg); err != nil {
		t.Fatal(err)
	}
	if cfg["apiVersion"] != SkaffoldAPIVersion || cfg["kind"] != "Config" {
		t.Fatalf("apiVersion %v kind %v", cfg["apiVersion"], cfg["kind"])
	}
	profiles := map[string][]any{}
	for _, p := range cfg["profiles"].([]any) {
		p := p.(map[string]any)
		profiles[p["name"].(string)] = p["patches"].([]any)
	}
	base := without(cfg, "profiles")
	var images []string
	for _, a := range dig(base, "/build/artifacts").([]any) {
		images = append(images, a.(map[string]any)["image"].(string))
	}
	for _, f := range AllFacts() {
		if !slices.Contains(images, Image(f.Name)) {
			t.Errorf("no artifact builds %s", Image(f.Name))
		}
		if _, ok := profiles[f.Name]; !ok {
			t.Errorf("no profile deploys %s alone", f.Name)
		}
	}
	for _, env := range Environments {
		if _, ok := profiles[env]; !ok {
			t.Fatalf("no profile for environment %s", env)
		}
		for _, f := range AllFacts() {
			a, err := apply(base, profiles[env], profiles[f.Name])
			if err != nil {
				t.Fatalf("-p %s,%s: %v", env, f.Name, err)
			}
			b, err := apply(base, profiles[f.Name], profiles[env])
			if err != nil {
				t.Fatalf("-p %s,%s: %v", f.Name, env, err)
			}
			if !reflect.DeepEqual(a, b) {
				t.Errorf("-p %s,%s and -p %s,%s differ", env, f.Name, f.Name, env)
			}
			release := dig(a, "/deploy/helm/releases/0").(map[string]any)
			if release["chartPath"] != "charts/"+f.Name || release["namespace"] != "registry-"+env ||
				dig(a, "/deploy/helm/releases/0/valuesFiles/0") != "charts/registry/values-"+env+".yaml" {
				t.Errorf("-p %s,%s deploys %v", env, f.Name, release)
			}
			if n := len(dig(a, "/build/artifacts").([]any)); n != 1 {
				t.Errorf("-p %s,%s builds %d images, want its own", env, f.Name, n)
			}
		}
	}
}

func without(m map[string]any, key string) map[string]any {
	out := map[string]any{}
	for k, v := range m {
		if k != key {
			out[k] = v
		}
	}
	return out
}

// apply applies "replace" patches (the only kind skaffold.yaml uses) to a
// deep copy of doc; a path that does not exist is an error, as in skaffold.
func apply(doc map[string]any, patchSets ...[]any) (map[string]any, error) {
	var out map[string]any
	data, _ := yaml.Marshal(doc)
	if err := yaml.Unmarshal(data, &out); err != nil {
		return nil, err
	}
	for _, patches := range patchSets {
		for _, p := range patches {
			p := p.(map[string]any)
			if p["op"] != "replace" {
				return nil, fmt.Errorf("op %v", p["op"])
			}
			path := p["path"].(string)
			parent, last := path[:strings.LastIndex(path, "/")], path[strings.LastIndex(path, "/")+1:]
			switch c := dig(out, parent).(type) {
			case map[string]any:
				if _, ok := c[last]; !ok {
					return nil, fmt.Errorf("%s does not exist", path)
				}
				c[last] = p["value"]
			case []any:
				i, err := strconv.Atoi(last)
				if err != nil || i >= len(c) {
					return nil, fmt.Errorf("%s does not exist", path)
				}
				c[i] = p["value"]
			default:
				return nil, fmt.Errorf("%s does not exist", path)
			}
		}
	}
	return out, nil
}

// dig follows a JSON pointer.
func dig(v any, pointer string) any {
	for _, part := range strings.Split(strings.TrimPrefix(pointer, "/"), "/") {
		if part == "" {
			continue
		}
		switch c := v.(type) {
		case map[string]any:
			v = c[part]
		case []any:
			i, err := strconv.Atoi(part)
			if err != nil || i >= len(c) {
				return nil
			}
			v = c[i]
		default:
			return nil
		}
	}
	return v
}
