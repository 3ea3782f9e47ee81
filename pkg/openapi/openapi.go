// Package openapi builds the OpenAPI document a service serves from its own
// document and the components every service shares (common.yaml), and
// checks that the documents of several services agree wherever they name
// the same component, so the gateway's merged document means one thing.
package openapi

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"

	"sigs.k8s.io/yaml"
)

//go:embed common.yaml
var commonYAML []byte

// CommonRef is how a service document refers to a shared component.
const CommonRef = "common.yaml#"

// Document is a decoded OpenAPI document.
type Document = map[string]any

// Common returns the shared document, decoded.
func Common() (Document, error) { return decode(commonYAML, "common.yaml") }

// Bundle returns the document a service serves: its own document with the
// shared components merged in and referred to locally, the standard error
// answers added to every operation, security derived from the scope rule
// where an operation does not state it, and the shared description, servers
// and security added. A service that defines a shared component itself is
// an error: it would silently shadow the shared one.
func Bundle(serviceYAML []byte) (Document, error) {
	doc, err := decode(serviceYAML, "service document")
	if err != nil {
		return nil, err
	}
	common, err := Common()
	if err != nil {
		return nil, err
	}
	rewriteRefs(doc)
	components := asMap(doc["components"])
	if components == nil {
		components = map[string]any{}
	}
	for section, entries := range asMap(common["components"]) {
		own := asMap(components[section])
		if own == nil {
			own = map[string]any{}
		}
		for name, c := range asMap(entries) {
			if _, taken := own[name]; taken {
				return nil, fmt.Errorf("openapi: the service defines components/%s/%s, which common.yaml provides; refer to %s/components/%s/%s instead",
					section, name, CommonRef, section, name)
			}
			own[name] = c
		}
		components[section] = own
	}
	doc["components"] = components
	info := asMap(doc["info"])
	if info == nil {
		return nil, fmt.Errorf("openapi: the service document has no info")
	}
	own, _ := info["description"].(string)
	shared, _ := asMap(common["info"])["description"].(string)
	info["description"] = strings.TrimRight(own, "\n") + "\n\n" + shared
	doc["servers"] = common["servers"]
	if doc["security"] == nil {
		doc["security"] = common["security"]
	}
	for path, item := range asMap(doc["paths"]) {
		for method, op := range asMap(item) {
			if operation := asMap(op); operation != nil && slices.Contains(methods, method) {
				completeOperation(path, method, operation)
				addValidators(doc, path, method, operation)
			}
		}
	}
	return doc, nil
}

// addValidators documents what the kit does for every operation of a
// kind: a GET of one resource answers If-None-Match (304); PATCH and
// DELETE check If-Match (412), but for a batch of updates (PATCH
// /<resources>/batch), whose items carry their own; a POST takes an Idempotency-Key, whose
// request in flight is a 409 beside the operation's own 409s.
func addValidators(doc Document, path, method string, op map[string]any) {
	responses := asMap(op["responses"])
	param := func(name string) {
		params, _ := op["parameters"].([]any)
		op["parameters"] = append(params, map[string]any{"$ref": "#/components/parameters/" + name})
	}
	ref := func(name string) map[string]any { return map[string]any{"$ref": "#/components/responses/" + name} }
	switch method {
	case "get":
		if strings.Contains(path, "{") && responses["304"] == nil {
			param("IfNoneMatch")
			responses["304"] = ref("NotModified")
		}
	case "patch", "delete":
		if responses["412"] == nil && !strings.HasSuffix(path, "/batch") {
			param("IfMatch")
			responses["412"] = ref("PreconditionFailed")
		}
	case "post":
		param("IdempotencyKey")
		own := responses["409"]
		if own == nil {
			responses["409"] = ref("RequestInFlight")
			return
		}
		responses["409"] = orInFlight(doc, asMap(own))
	}
}

// orInFlight is a 409 answer that is either the operation's own or a
// request in flight.
func orInFlight(doc Document, own map[string]any) map[string]any {
	if r, ok := own["$ref"].(string); ok {
		own = asMap(asMap(asMap(doc["components"])["responses"])[strings.TrimPrefix(r, "#/components/responses/")])
	}
	content := asMap(asMap(own["content"])["application/problem+json"])
	description, _ := own["description"].(string)
	return map[string]any{
		"description": strings.TrimRight(description, "\n") + "\n\nOr a request with the same Idempotency-Key is still in progress.",
		"headers":     own["headers"],
		"content": map[string]any{"application/problem+json": map[string]any{"schema": map[string]any{
			"anyOf": []any{content["schema"], map[string]any{"$ref": "#/components/schemas/InFlightProblem"}},
		}}},
	}
}

var methods = []string{"get", "put", "post", "delete", "options", "head", "patch", "trace"}

// standardAnswers are the answers any operation can give: they come from
// the token check, the rate limit and failures, not from the operation.
var standardAnswers = map[string]string{
	"401": "Unauthorized",
	"403": "Forbidden",
	"429": "TooManyRequests",
	"431": "HeaderTooLarge",
	"500": "InternalError",
	"503": "ServiceUnavailable",
}

// bodyAnswers are the answers any operation with a request body can give.
var bodyAnswers = map[string]string{
	"408": "RequestTimeout",
}

func completeOperation(path, method string, op map[string]any) {
	responses := asMap(op["responses"])
	if responses == nil {
		responses = map[string]any{}
		op["responses"] = responses
	}
	answers := maps.Clone(standardAnswers)
	if op["requestBody"] != nil {
		maps.Copy(answers, bodyAnswers)
	}
	for status, name := range answers {
		if _, ok := responses[status]; !ok {
			responses[status] = map[string]any{"$ref": "#/components/responses/" + name}
		}
	}
	if _, ok := op["security"]; !ok {
		scope := Scope(method, path)
		op["security"] = []any{
			map[string]any{"bearerAuth": []any{scope}},
			map[string]any{"oauth2": []any{scope}},
		}
	}
}

// Scope is the scope an operation needs by the registry's rule (see
// pkg/auth.ScopeFor), for an operation without create=true.
func Scope(method, path string) string {
	switch {
	case method == "get" || method == "head":
		return "registry:read"
	case method == "post" && strings.HasSuffix(strings.TrimSuffix(path, "/"), "/find"):
		return "registry:read"
	}
	return "registry:write"
}

// rewriteRefs turns every common.yaml# reference into a local one.
func rewriteRefs(v any) {
	switch t := v.(type) {
	case map[string]any:
		for k, child := range t {
			if s, ok := child.(string); ok && k == "$ref" {
				t[k] = strings.TrimPrefix(s, strings.TrimSuffix(CommonRef, "#"))
				continue
			}
			rewriteRefs(child)
		}
	case []any:
		for _, child := range t {
			rewriteRefs(child)
		}
	}
}

// Conflict is one component that two documents define differently.
type Conflict struct {
	Component     string // e.g. "schemas/ExternalId"
	First, Second string // the documents' names
}

func (c Conflict) String() string {
	return fmt.Sprintf("components/%s differs between %s and %s", c.Component, c.First, c.Second)
}

// Conflicts lists the components that two of docs (by name) define
// differently; merging them would make one service's schema lie about
// another's.
func Conflicts(docs map[string]Document) []Conflict {
	names := slices.Sorted(maps.Keys(docs))
	seen := map[string]string{} // component -> first document defining it
	defs := map[string]any{}
	var out []Conflict
	for _, name := range names {
		for section, entries := range asMap(docs[name]["components"]) {
			for component, def := range asMap(entries) {
				key := section + "/" + component
				if first, ok := seen[key]; ok {
					if !reflect.DeepEqual(defs[key], def) {
						out = append(out, Conflict{Component: key, First: first, Second: name})
					}
					continue
				}
				seen[key], defs[key] = name, def
			}
		}
	}
	slices.SortFunc(out, func(a, b Conflict) int { return strings.Compare(a.String(), b.String()) })
	return out
}

// JSON encodes a document.
func JSON(doc Document) ([]byte, error) { return json.Marshal(doc) }

func decode(raw []byte, what string) (Document, error) {
	j, err := yaml.YAMLToJSON(raw)
	if err != nil {
		return nil, fmt.Errorf("openapi: %s: %w", what, err)
	}
	var doc Document
	if err := json.Unmarshal(j, &doc); err != nil {
		return nil, fmt.Errorf("openapi: %s: %w", what, err)
	}
	return doc, nil
}

func asMap(v any) map[string]any {
	m, _ := v.(map[string]any)
	return m
}
