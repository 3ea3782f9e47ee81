// Package deploygen writes the delivery files that follow from the catalog
// of deployables (pkg/catalog) and from the one schema of chart values
// (charts/registry-lib/schema.yaml): each chart's values.schema.json, its
// Chart.yaml and the facts its templates read (deployable.yaml), the
// library's defaults, the umbrella chart's dependencies and Grafana
// dashboard, skaffold.yaml, the Dockerfile's module list and the chart value
// reference in docs/chart-values.md.
//
// Generating instead of checking by hand: each of these files is a pure
// function of the catalog and the schema, and a hand-kept copy drifts. A
// test compares them with Generate's output, so a catalog entry without its
// files (or an edit of a generated file) fails `make test` with the remedy,
// `make generate`. What a team writes by hand is its chart's values.yaml
// (defaults of its own) and the one-line template that calls the library;
// Scaffold starts both for a new catalog entry.
package deploygen

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/assetregistry/registry/pkg/catalog"
)

// Paths of the charts, relative to the repository root.
const (
	ChartsDir    = "charts"
	LibraryChart = "registry-lib"
	Umbrella     = "registry"
	schemaSource = "charts/registry-lib/schema.yaml"
	docsFile     = "docs/chart-values.md"
	docsBegin    = "<!-- BEGIN GENERATED chart values (make generate) -->"
	docsEnd      = "<!-- END GENERATED chart values -->"
)

// Deployable kinds; each has its own value group and template branches.
const (
	KindGateway = "gateway"
	KindIdP     = "idp"
	KindService = "service"
)

// Facts are what the catalog says about one deployable, in the shape the
// library chart reads (charts/<name>/deployable.yaml). They are facts about
// the binary, not settings: no value changes them.
type Facts struct {
	Name    string `json:"name"`
	Kind    string `json:"kind"`
	Command string `json:"command"`
	// Needs are the datastores: postgres, redis, s3.
	Needs []string `json:"needs"`
	// Peers are the services this one calls (service kind only).
	Peers []string `json:"peers"`
	// Callers are the services that call this one besides the gateway.
	Callers []string `json:"callers"`
	// Upstreams are the services the gateway routes to (gateway only).
	Upstreams []string `json:"upstreams"`
	// VerifiesTokens: the gateway and every service check bearer tokens.
	VerifiesTokens bool `json:"verifiesTokens"`
	// DeliversWebhooks: it reaches subscribers' receivers outside the
	// cluster (an egress rule to public addresses, set by its
	// webhooks.egress values).
	DeliversWebhooks bool `json:"deliversWebhooks"`
}

// AllFacts returns the facts of every deployable, in catalog order.
func AllFacts() []Facts {
	var services []string
	for _, s := range catalog.Services {
		services = append(services, s.Name)
	}
	all := []Facts{
		// The gateway keeps its rate-limit budgets in Redis, shared by
		// every replica.
		{Name: catalog.Gateway.Name, Kind: KindGateway, Command: catalog.Gateway.Command,
			Needs: []string{string(catalog.Redis)}, Peers: []string{}, Callers: []string{}, Upstreams: services, VerifiesTokens: true},
		{Name: catalog.IdentityProvider.Name, Kind: KindIdP, Command: catalog.IdentityProvider.Command,
			Needs: []string{string(catalog.Postgres)}, Peers: []string{}, Callers: []string{}, Upstreams: []string{}},
	}
	for _, s := range catalog.Services {
		needs := []string{}
		for _, n := range s.Needs {
			needs = append(needs, string(n))
		}
		peers := s.Peers()
		if peers == nil {
			peers = []string{}
		}
		all = append(all, Facts{Name: s.Name, Kind: KindService, Command: s.Command,
			Needs: needs, Peers: peers, Callers: peers, Upstreams: []string{}, VerifiesTokens: true, DeliversWebhooks: s.DeliversWebhooks})
	}
	return all
}

// groups are the schema.yaml value groups that apply to f.
func (f Facts) groups() []string {
	g := []string{"common"}
	if slices.Contains(f.Needs, string(catalog.Postgres)) {
		g = append(g, "postgres")
	}
	if slices.Contains(f.Needs, string(catalog.ObjectStore)) {
		g = append(g, "objectStore")
	}
	if len(f.Peers) > 0 {
		g = append(g, "peers")
	}
	switch f.Kind {
	case KindGateway:
		g = append(g, "gateway")
	case KindIdP:
		g = append(g, "idp")
	}
	if slices.Contains(ownGroups, f.Name) {
		g = append(g, f.Name)
	}
	return g
}

// ownGroups are the services with values of their own: the schema.yaml
// group of the service's name (the actions service's compliance calendar,
// the events service's transparency key and webhook deliveries).
var ownGroups = []string{"actions", "events"}

// schemaSet is schema.yaml, read.
type schemaSet struct {
	global *object
	// datastores are the umbrella's own values: the datastores it brings
	// up through their operators (CloudNativePG, Redis with Sentinel).
	datastores  *object
	groups      map[string]*object
	groupOrder  []string
	definitions *object
}

func loadSchema(root string) (*schemaSet, error) {
	data, err := os.ReadFile(filepath.Join(root, schemaSource))
	if err != nil {
		return nil, err
	}
	doc, err := fromYAML(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", schemaSource, err)
	}
	top, ok := doc.(*object)
	if !ok {
		return nil, fmt.Errorf("%s: not a mapping", schemaSource)
	}
	if err := noEmptyKeys(top, ""); err != nil {
		return nil, fmt.Errorf("%s: %w", schemaSource, err)
	}
	s := &schemaSet{groups: map[string]*object{}, definitions: newObject()}
	for _, k := range top.keys {
		v, ok := top.vals[k].(*object)
		if !ok {
			return nil, fmt.Errorf("%s: %s is not a mapping", schemaSource, k)
		}
		switch k {
		case "global":
			s.global = v
		case "definitions":
			s.definitions = v
		case Datastores:
			s.datastores = v
		default:
			s.groups[k] = v
			s.groupOrder = append(s.groupOrder, k)
		}
	}
	if s.global == nil || s.groups["common"] == nil || s.datastores == nil {
		return nil, fmt.Errorf("%s: needs global, common and %s", schemaSource, Datastores)
	}
	for _, k := range append([]string{"postgres", "objectStore", "peers", "gateway", "idp"}, ownGroups...) {
		if s.groups[k] == nil {
			return nil, fmt.Errorf("%s: group %s missing", schemaSource, k)
		}
	}
	return s, nil
}

// noEmptyKeys refuses a key without a value anywhere in v. The schema
// never means one: it is what an unquoted comma in a flow mapping makes of
// the rest of a description ({description: a, b} is "a" and a key "b"),
// which would cut the description short and put a stray key in every
// chart's values.schema.json.
func noEmptyKeys(v any, path string) error {
	switch v := v.(type) {
	case *object:
		for _, k := range v.keys {
			if v.vals[k] == nil {
				return fmt.Errorf("%s: key %q has no value (an unquoted comma in a description?)", path, k)
			}
			if err := noEmptyKeys(v.vals[k], path+"."+k); err != nil {
				return err
			}
		}
	case []any:
		for i, e := range v {
			if err := noEmptyKeys(e, fmt.Sprintf("%s[%d]", path, i)); err != nil {
				return err
			}
		}
	}
	return nil
}

// strict makes every object schema that lists properties refuse others,
// recursively; a misspelt value then fails the install instead of being
// ignored.
func strict(v any) any {
	switch t := v.(type) {
	case *object:
		out := newObject()
		for _, k := range t.keys {
			out.set(k, strict(t.vals[k]))
		}
		if out.has("properties") && !out.has("additionalProperties") {
			out.set("additionalProperties", false)
		}
		if out.has("properties") && !out.has("type") {
			out.set("type", "object")
		}
		return out
	case []any:
		out := make([]any, len(t))
		for i, e := range t {
			out[i] = strict(e)
		}
		return out
	}
	return v
}

// properties returns the merged properties of the groups that apply to f.
func (s *schemaSet) properties(f Facts) *object {
	props := newObject()
	for _, g := range f.groups() {
		for _, k := range s.groups[g].keys {
			props.set(k, clone(s.groups[g].vals[k]))
		}
	}
	return props
}

// The schemas grow linearly with the deployables because each value is
// checked once, by the chart that uses it. Helm checks every chart of a
// release against its own schema, the library and each subchart included,
// with the globals handed down to each: so the environment's values
// (global.*) are checked by the library chart's schema, which every chart
// depends on; a deployable's values by its own chart's schema, alone or
// as a subchart of the umbrella; and the umbrella's schema only names the
// blocks it has. No schema carries a copy of another's part, and a new
// deployable adds its own chart's schema and one line per other chart.

// globalNote is how a chart's schema describes the globals it leaves to
// the library chart.
const globalNote = "The environment's values, shared by every chart of the release; the library chart's schema (registry-lib) checks them."

// Datastores is the umbrella's block of the datastores it brings up.
const Datastores = "datastores"

// datastoresNote describes the umbrella's datastores block.
const datastoresNote = "The datastores this chart brings up through their operators (CloudNativePG, the OT-Container-Kit Redis operator's RedisReplication); off unless an environment turns them on. See docs/operations.md, Production datastores."

// datastoreDefaults is the umbrella's template of the datastores block's
// defaults, which its templates merge the values over.
// It also names the deployables that own a PostgreSQL schema, each of
// which gets a role and a schema in the Cluster.
func (s *schemaSet) datastoreDefaults(all []Facts) ([]byte, error) {
	y, err := toYAML(defaultsOf(s.datastores))
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	b.WriteString("{{- /* Generated by `make generate` from charts/registry-lib/schema.yaml (the `default` of every datastores value) and pkg/catalog: do not edit. */ -}}\n")
	b.WriteString("{{- define \"registry.datastoreDefaults\" -}}\n")
	b.Write(y)
	b.WriteString("{{- end -}}\n")
	b.WriteString("{{- define \"registry.schemaOwners\" -}}\n")
	for _, f := range all {
		if slices.Contains(f.Needs, string(catalog.Postgres)) {
			fmt.Fprintf(&b, "- %s\n", f.Name)
		}
	}
	b.WriteString("{{- end -}}\n")
	return b.Bytes(), nil
}

// libraryValues is the key Helm adds for the library dependency's values
// (none), with the globals in it.
func libraryValues() *object {
	return obj("type", "object", "description", "Helm's own: the library chart's values (it has none); nothing to set.")
}

// librarySchema checks the globals: Helm hands them to the library chart
// as a dependency of every chart, in the umbrella and alone.
func (s *schemaSet) librarySchema() *object {
	defs := newObject()
	for _, k := range s.definitions.keys {
		defs.set(k, clone(s.definitions.vals[k]))
	}
	defs.set("common", obj("type", "object", "properties", s.groups["common"].without("enabled")))
	return strict(obj(
		"$schema", "http://json-schema.org/draft-07/schema#",
		"title", "The environment's values (global.*), checked once for every chart of the registry.",
		"type", "object",
		"properties", obj("global", clone(s.global)),
		"definitions", defs,
	)).(*object)
}

// chartSchema is a deployable's chart's schema (self set) or the
// umbrella's (self nil).
func (s *schemaSet) chartSchema(self *Facts, all []Facts) *object {
	props := newObject()
	title := "Values of the umbrella chart: one environment of the registry. Each deployable's block is checked by its own chart's schema, the globals by the library chart's."
	defs := newObject()
	if self != nil {
		title = fmt.Sprintf("Values of the %s chart.", self.Name)
		props = s.properties(*self)
		for _, k := range s.definitions.keys {
			defs.set(k, clone(s.definitions.vals[k]))
		}
	}
	props.set("global", obj("type", "object", "description", globalNote))
	props.set(LibraryChart, libraryValues())
	if self == nil {
		props.set(Datastores, obj("type", "object", "description", datastoresNote, "properties", clone(s.datastores)))
	} else {
		props.set(Datastores, obj("type", "object", "description",
			"The umbrella's datastores block of an environment file: this chart ignores it, and the umbrella's schema checks it."))
	}
	if self != nil {
		// The chart's own block of an umbrella values file takes the same
		// values as the chart's top level.
		own := newObject()
		for _, k := range props.keys {
			own.set(k, obj("$ref", "#/properties/"+k))
		}
		defs.set("own", obj("type", "object", "properties", own))
	}
	for _, f := range all {
		switch {
		case self == nil:
			props.set(f.Name, obj("type", "object", "description", fmt.Sprintf("Values of %s; its chart's schema checks them.", f.Name)))
		case f.Name == self.Name:
			props.set(f.Name, obj("$ref", "#/definitions/own", "description",
				"This chart's block of an umbrella values file, applied like the top-level values, so one environment file serves the umbrella and every chart alone."))
		default:
			props.set(f.Name, obj("type", "object", "description",
				fmt.Sprintf("%s's block of an umbrella values file: this chart ignores it, and %s's chart checks it.", f.Name, f.Name)))
		}
	}
	root := obj(
		"$schema", "http://json-schema.org/draft-07/schema#",
		"title", title,
		"type", "object",
		"properties", props,
	)
	if len(defs.keys) > 0 {
		root.set("definitions", defs)
	}
	return strict(root).(*object)
}

// defaultsOf collects the `default`s of a properties object into values.
func defaultsOf(props *object) *object {
	out := newObject()
	if props == nil {
		return out
	}
	for _, k := range props.keys {
		p, ok := props.vals[k].(*object)
		if !ok {
			continue
		}
		if d, ok := p.get("default"); ok {
			out.set(k, clone(d))
			continue
		}
		if sub := p.object("properties"); sub != nil {
			if d := defaultsOf(sub); len(d.keys) > 0 {
				out.set(k, d)
			}
		}
	}
	return out
}

func (s *schemaSet) libraryDefaults() ([]byte, error) {
	deployable := newObject()
	for _, g := range s.groupOrder {
		d := defaultsOf(s.groups[g])
		for _, k := range d.keys {
			deployable.set(k, d.vals[k])
		}
	}
	all := obj(
		"global", defaultsOf(s.global.object("properties")).without("defaults"),
		"deployable", deployable,
	)
	y, err := toYAML(all)
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	b.WriteString("{{- /* Generated by `make generate` from schema.yaml (the `default` of every value): do not edit. */ -}}\n")
	b.WriteString("{{- define \"registry-lib.defaults\" -}}\n")
	b.Write(y)
	b.WriteString("{{- end -}}\n")
	return b.Bytes(), nil
}

func toYAML(v any) ([]byte, error) {
	j, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return yaml.JSONToYAML(j)
}

func toJSON(v any) ([]byte, error) {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}

// chartMeta is the version every chart of the registry carries: the charts
// are released together, so the library's Chart.yaml holds the one version
// and appVersion that the generated Chart.yaml files repeat.
type chartMeta struct {
	Version    string `json:"version"`
	AppVersion string `json:"appVersion"`
}

func readChartMeta(root string) (chartMeta, error) {
	data, err := os.ReadFile(filepath.Join(root, ChartsDir, LibraryChart, "Chart.yaml"))
	if err != nil {
		return chartMeta{}, err
	}
	var m chartMeta
	if err := yaml.Unmarshal(data, &m); err != nil {
		return chartMeta{}, fmt.Errorf("library Chart.yaml: %w", err)
	}
	if m.Version == "" || m.AppVersion == "" {
		return chartMeta{}, fmt.Errorf("library Chart.yaml needs version and appVersion")
	}
	return m, nil
}

const generatedYAML = "# Generated by `make generate` from pkg/catalog: do not edit.\n"

func deployableChart(f Facts, m chartMeta) []byte {
	desc := map[string]string{
		KindGateway: "The registry's public entry point: token check, scope rule, routing.",
		KindIdP:     "The registry's identity provider for machine clients (OAuth 2.0 client credentials).",
		KindService: fmt.Sprintf("The registry's %s service.", f.Name),
	}[f.Kind]
	return fmt.Appendf(nil, `%sapiVersion: v2
name: %s
description: %q
type: application
version: %s
appVersion: %q
dependencies:
  - name: %s
    version: %s
    repository: file://../%s
`, generatedYAML, f.Name, desc, m.Version, m.AppVersion, LibraryChart, m.Version, LibraryChart)
}

func umbrellaChart(all []Facts, m chartMeta) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, `%sapiVersion: v2
name: %s
description: One environment of the asset registry, every deployable with its alerts and dashboard.
type: application
version: %s
appVersion: %q
dependencies:
  - name: %s
    version: %s
    repository: file://../%s
`, generatedYAML, Umbrella, m.Version, m.AppVersion, LibraryChart, m.Version, LibraryChart)
	for _, f := range all {
		fmt.Fprintf(&b, "  - name: %s\n    version: %s\n    repository: file://../%s\n    condition: %s.enabled\n",
			f.Name, m.Version, f.Name, f.Name)
	}
	return b.Bytes()
}

func factsFile(f Facts) ([]byte, error) {
	y, err := toYAML(f)
	if err != nil {
		return nil, err
	}
	return append([]byte(generatedYAML+"# What the binary is and needs, read by the library chart's templates; not a value.\n"), y...), nil
}

// Generate returns every generated file's content by its path relative to
// root (the repository).
func Generate(root string) (map[string][]byte, error) {
	if err := catalog.Validate(); err != nil {
		return nil, err
	}
	s, err := loadSchema(root)
	if err != nil {
		return nil, err
	}
	meta, err := readChartMeta(root)
	if err != nil {
		return nil, err
	}
	all := AllFacts()
	if err := checkNames(s, all); err != nil {
		return nil, err
	}
	out := map[string][]byte{}
	put := func(path string, data []byte, err error) error {
		if err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		out[path] = data
		return nil
	}
	for i := range all {
		f := all[i]
		dir := filepath.Join(ChartsDir, f.Name)
		schema, err := toJSON(s.chartSchema(&f, all))
		if err := put(filepath.Join(dir, "values.schema.json"), schema, err); err != nil {
			return nil, err
		}
		facts, err := factsFile(f)
		if err := put(filepath.Join(dir, "deployable.yaml"), facts, err); err != nil {
			return nil, err
		}
		out[filepath.Join(dir, "Chart.yaml")] = deployableChart(f, meta)
	}
	schema, err := toJSON(s.chartSchema(nil, all))
	if err := put(filepath.Join(ChartsDir, Umbrella, "values.schema.json"), schema, err); err != nil {
		return nil, err
	}
	schema, err = toJSON(s.librarySchema())
	if err := put(filepath.Join(ChartsDir, LibraryChart, "values.schema.json"), schema, err); err != nil {
		return nil, err
	}
	out[filepath.Join(ChartsDir, Umbrella, "Chart.yaml")] = umbrellaChart(all, meta)
	dash, err := dashboard(all)
	if err := put(filepath.Join(ChartsDir, Umbrella, "dashboards", "registry.json"), dash, err); err != nil {
		return nil, err
	}
	defaults, err := s.libraryDefaults()
	if err := put(filepath.Join(ChartsDir, LibraryChart, "templates", "_defaults.tpl"), defaults, err); err != nil {
		return nil, err
	}
	defaults, err = s.datastoreDefaults(all)
	if err := put(filepath.Join(ChartsDir, Umbrella, "templates", "_datastores.tpl"), defaults, err); err != nil {
		return nil, err
	}
	out["skaffold.yaml"] = skaffold(all)
	dockerfile, err := dockerfile(root)
	if err := put(filepath.Join("deploy", "Dockerfile"), dockerfile, err); err != nil {
		return nil, err
	}
	docs, err := os.ReadFile(filepath.Join(root, docsFile))
	if err != nil {
		return nil, err
	}
	docs, err = spliceDocs(docs, s.reference(all))
	if err := put(docsFile, docs, err); err != nil {
		return nil, err
	}
	return out, nil
}

// checkNames refuses a deployable whose name is also a value key: the
// umbrella's values hold one block per deployable beside `global`, and a
// deployable's chart accepts those blocks beside its own keys.
func checkNames(s *schemaSet, all []Facts) error {
	for _, f := range all {
		if f.Name == "global" || f.Name == LibraryChart || f.Name == Umbrella || f.Name == Datastores {
			return fmt.Errorf("deployable name %q is reserved", f.Name)
		}
		for _, g := range s.groupOrder {
			if s.groups[g].has(f.Name) {
				return fmt.Errorf("deployable name %q is also a chart value", f.Name)
			}
		}
	}
	return nil
}

func spliceDocs(doc []byte, section string) ([]byte, error) {
	begin := bytes.Index(doc, []byte(docsBegin))
	end := bytes.Index(doc, []byte(docsEnd))
	if begin < 0 || end < begin {
		return nil, fmt.Errorf("markers %q and %q not found", docsBegin, docsEnd)
	}
	var b bytes.Buffer
	b.Write(doc[:begin+len(docsBegin)])
	b.WriteString("\n")
	b.WriteString(section)
	b.Write(doc[end:])
	return b.Bytes(), nil
}

// Scaffold returns the hand-kept files of a deployable's chart that do not
// exist yet: the values.yaml a team fills with its own defaults and the
// template that hands everything to the library.
func Scaffold(root string) map[string][]byte {
	out := map[string][]byte{}
	for _, f := range AllFacts() {
		dir := filepath.Join(ChartsDir, f.Name)
		files := map[string][]byte{
			filepath.Join(dir, "values.yaml"): fmt.Appendf(nil, `# Defaults of the %[1]s chart that differ from every deployable's (see the chart
# value reference in docs/chart-values.md). Environment settings belong in
# charts/registry/values-<env>.yaml, under global or under %[1]s.
{}
`, f.Name),
			filepath.Join(dir, "templates", f.Name+".yaml"): []byte(TemplateLine + "\n"),
			filepath.Join(dir, ".helmignore"):               []byte("# deployable.yaml is read by the templates, so it ships with the chart.\n.git/\n"),
		}
		for path, data := range files {
			if _, err := os.Stat(filepath.Join(root, path)); os.IsNotExist(err) {
				out[path] = data
			}
		}
	}
	return out
}

// TemplateLine is the whole template of a deployable's chart.
const TemplateLine = `{{- include "registry-lib.deployable" . -}}`

// envName is how a name appears in an environment variable: PEER_DOCUMENTS_URL.
func envName(name string) string {
	return strings.ToUpper(strings.NewReplacer("-", "_", ".", "_").Replace(name))
}
