package charttest

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"testing"

	"go.yaml.in/yaml/v3"
)

// capacityModel is charts/registry/capacity.yaml: docs/capacity.md's model
// in figures, the one source of the production sizes.
type capacityModel struct {
	Postgres struct {
		Tables   map[string]float64 `yaml:"tables"`
		Headroom float64            `yaml:"headroom"`
		CPU      string             `yaml:"cpu"`
		Memory   string             `yaml:"memory"`
	} `yaml:"postgres"`
	NATS struct {
		EventsPerSecond float64 `yaml:"eventsPerSecond"`
		EventBytes      float64 `yaml:"eventBytes"`
		StreamHours     float64 `yaml:"streamHours"`
		Headroom        float64 `yaml:"headroom"`
	} `yaml:"nats"`
	Pods struct {
		CPU    string `yaml:"cpu"`
		Memory string `yaml:"memory"`
	} `yaml:"pods"`
	Redis struct {
		CPU string `yaml:"cpu"`
	} `yaml:"redis"`
}

// readYAML reads a file, relative to the repository unless absolute.
func readYAML(t *testing.T, rel string, into any) {
	t.Helper()
	path := rel
	if !filepath.IsAbs(path) {
		path = filepath.Join(repoRoot, rel)
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(raw, into); err != nil {
		t.Fatalf("%s: %v", rel, err)
	}
}

// gibibytes is bytes with headroom, rounded up to whole GiB, as a quantity.
func gibibytes(bytes, headroom float64) string {
	return fmt.Sprintf("%dGi", int64(math.Ceil(bytes*(1+headroom)/(1<<30))))
}

// The production values are what docs/capacity.md's model asks for: a
// change to either without the other fails here.
func TestProductionSizesFollowTheCapacityModel(t *testing.T) {
	t.Parallel()
	var model capacityModel
	readYAML(t, "charts/registry/capacity.yaml", &model)
	if len(model.Postgres.Tables) == 0 || model.NATS.EventsPerSecond == 0 || model.Pods.CPU == "" {
		t.Fatalf("charts/registry/capacity.yaml is incomplete: %+v", model)
	}
	prod := map[string]any{}
	readYAML(t, envFile("prod"), &prod)
	nats := map[string]any{}
	readYAML(t, natsValues, &nats)

	var tables float64
	for _, bytes := range model.Postgres.Tables {
		tables += bytes
	}
	natsBytes := model.NATS.EventsPerSecond * model.NATS.EventBytes * model.NATS.StreamHours * 3600
	for _, c := range []struct {
		what      string
		got, want any
	}{
		{"datastores.postgres.storageSize", Get(prod, "datastores", "postgres", "storageSize"), gibibytes(tables, model.Postgres.Headroom)},
		{"datastores.postgres.cpu", Get(prod, "datastores", "postgres", "cpu"), model.Postgres.CPU},
		{"datastores.postgres.memory", Get(prod, "datastores", "postgres", "memory"), model.Postgres.Memory},
		{"datastores.redis.cpu", Get(prod, "datastores", "redis", "cpu"), model.Redis.CPU},
		{"global.defaults.resources.requests.cpu", Get(prod, "global", "defaults", "resources", "requests", "cpu"), model.Pods.CPU},
		{"global.defaults.resources.requests.memory", Get(prod, "global", "defaults", "resources", "requests", "memory"), model.Pods.Memory},
		{natsValues + " config.jetstream.fileStore.pvc.size", Get(nats, "config", "jetstream", "fileStore", "pvc", "size"), gibibytes(natsBytes, model.NATS.Headroom)},
	} {
		if c.got != c.want {
			t.Errorf("%s is %v; the capacity model (charts/registry/capacity.yaml) gives %v", c.what, c.got, c.want)
		}
	}
	// No deployable asks less than the model's replica does.
	for _, name := range deployables() {
		if cpu := Get(prod, name, "resources", "requests", "cpu"); cpu != nil && cpu != model.Pods.CPU {
			t.Errorf("%s requests %v CPU; the capacity model gives every replica %s", name, cpu, model.Pods.CPU)
		}
	}
}
