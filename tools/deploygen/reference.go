package deploygen

import (
	"encoding/json"
	"fmt"
	"strings"
)

// reference renders the chart value reference of docs/chart-values.md from
// the schema: one table per value group, a row per leaf value.
func (s *schemaSet) reference(all []Facts) string {
	var b strings.Builder
	b.WriteString("\nGenerated from `charts/registry-lib/schema.yaml`; every chart's `values.schema.json` comes from\n" +
		"the same file, so this table and what the charts accept cannot differ.\n\n")
	b.WriteString("### The environment: `global.*`\n\n")
	b.WriteString("Set once per environment, in `charts/registry/values-<env>.yaml`. `global.defaults` takes the\n" +
		"keys of the next table (without `enabled`) and applies them to every deployable; a deployable's own\n" +
		"values win.\n\n")
	table(&b, "global", s.global.object("properties"))

	users := func(group string) []string {
		var names []string
		for _, f := range all {
			for _, g := range f.groups() {
				if g == group {
					names = append(names, "`"+f.Name+"`")
				}
			}
		}
		return names
	}
	sections := []struct{ group, title string }{
		{"common", "Every deployable"},
		{"postgres", "Deployables with a PostgreSQL schema"},
		{"objectStore", "Services that keep files in object storage"},
		{"peers", "Services that call peers"},
		{"gateway", "The gateway"},
		{"idp", "The identity provider"},
		{"actions", "The actions service"},
		{"events", "The events service"},
	}
	for _, sec := range sections {
		names := users(sec.group)
		fmt.Fprintf(&b, "\n### %s: `<name>.*`\n\n", sec.title)
		if len(names) == 0 {
			b.WriteString("No deployable of the catalog has these yet.\n\n")
		} else {
			fmt.Fprintf(&b, "Applies to %s. In the umbrella chart under the deployable's name; in its own chart at the top level.\n\n",
				strings.Join(names, ", "))
		}
		table(&b, "<name>", s.groups[sec.group])
	}
	b.WriteString("\n### The datastores the umbrella brings up: `datastores.*`\n\n")
	b.WriteString("The umbrella chart's own values (not a deployable's): with `enabled`, it renders the datastore's\n" +
		"custom resources for its operator, which must be installed in the cluster beforehand. The\n" +
		"deployables still reach them through `global.postgres` and `global.redis` and their Secrets.\n\n")
	table(&b, "datastores", s.datastores)
	return b.String()
}

func table(b *strings.Builder, prefix string, props *object) {
	b.WriteString("| value | type | default | meaning |\n|---|---|---|---|\n")
	rows(b, prefix, props)
}

func rows(b *strings.Builder, prefix string, props *object) {
	if props == nil {
		return
	}
	for _, k := range props.keys {
		p, ok := props.vals[k].(*object)
		if !ok {
			continue
		}
		path := prefix + "." + k
		if sub := p.object("properties"); sub != nil && !p.has("default") {
			if d := p.str("description"); d != "" {
				fmt.Fprintf(b, "| `%s` | object | | %s |\n", path, cell(d))
			}
			rows(b, path, sub)
			continue
		}
		def := ""
		if d, ok := p.get("default"); ok {
			j, _ := json.Marshal(d)
			def = "`" + string(j) + "`"
		}
		fmt.Fprintf(b, "| `%s` | %s | %s | %s |\n", path, typeOf(p), cell(def), cell(p.str("description")))
	}
}

func typeOf(p *object) string {
	if ref := p.str("$ref"); ref != "" {
		if ref == "#/definitions/quantity" {
			return "quantity"
		}
		return "object"
	}
	t := p.str("type")
	if enum, ok := p.get("enum"); ok {
		var vals []string
		for _, v := range enum.([]any) {
			j, _ := json.Marshal(v)
			vals = append(vals, string(j))
		}
		return "one of " + strings.Join(vals, ", ")
	}
	if t == "array" {
		if items := p.object("items"); items != nil && items.str("type") != "" {
			return items.str("type") + " list"
		}
		return "list"
	}
	if t == "" {
		return "any"
	}
	return t
}

// cell makes text safe inside a Markdown table cell.
func cell(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "|", `\|`), "\n", " ")
}
