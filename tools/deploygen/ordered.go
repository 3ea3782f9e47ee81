package deploygen

import (
	"bytes"
	"encoding/json"
	"fmt"

	"go.yaml.in/yaml/v3"
)

// object is a JSON object that keeps its keys in the order they were written,
// so that generated schemas and the value reference read in the order of
// schema.yaml rather than alphabetically.
type object struct {
	keys []string
	vals map[string]any
}

func newObject() *object { return &object{vals: map[string]any{}} }

// obj builds an object from alternating keys and values.
func obj(kv ...any) *object {
	o := newObject()
	for i := 0; i < len(kv); i += 2 {
		o.set(kv[i].(string), kv[i+1])
	}
	return o
}

func (o *object) set(key string, v any) *object {
	if _, ok := o.vals[key]; !ok {
		o.keys = append(o.keys, key)
	}
	o.vals[key] = v
	return o
}

func (o *object) get(key string) (any, bool) {
	v, ok := o.vals[key]
	return v, ok
}

func (o *object) object(key string) *object {
	v, _ := o.vals[key].(*object)
	return v
}

func (o *object) str(key string) string {
	v, _ := o.vals[key].(string)
	return v
}

func (o *object) has(key string) bool { _, ok := o.vals[key]; return ok }

func (o *object) without(keys ...string) *object {
	out := newObject()
	for _, k := range o.keys {
		skip := false
		for _, drop := range keys {
			skip = skip || k == drop
		}
		if !skip {
			out.set(k, o.vals[k])
		}
	}
	return out
}

// MarshalJSON writes the keys in order.
func (o *object) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, k := range o.keys {
		if i > 0 {
			b.WriteByte(',')
		}
		kj, err := json.Marshal(k)
		if err != nil {
			return nil, err
		}
		vj, err := json.Marshal(o.vals[k])
		if err != nil {
			return nil, err
		}
		b.Write(kj)
		b.WriteByte(':')
		b.Write(vj)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// clone copies o deeply (objects and slices; scalars are immutable).
func clone(v any) any {
	switch t := v.(type) {
	case *object:
		out := newObject()
		for _, k := range t.keys {
			out.set(k, clone(t.vals[k]))
		}
		return out
	case []any:
		out := make([]any, len(t))
		for i, e := range t {
			out[i] = clone(e)
		}
		return out
	}
	return v
}

// fromYAML decodes YAML into objects, slices and scalars, keeping key order.
func fromYAML(data []byte) (any, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, err
	}
	if len(doc.Content) == 0 {
		return newObject(), nil
	}
	return fromNode(doc.Content[0])
}

func fromNode(n *yaml.Node) (any, error) {
	switch n.Kind {
	case yaml.MappingNode:
		o := newObject()
		for i := 0; i < len(n.Content); i += 2 {
			v, err := fromNode(n.Content[i+1])
			if err != nil {
				return nil, err
			}
			o.set(n.Content[i].Value, v)
		}
		return o, nil
	case yaml.SequenceNode:
		out := []any{}
		for _, c := range n.Content {
			v, err := fromNode(c)
			if err != nil {
				return nil, err
			}
			out = append(out, v)
		}
		return out, nil
	case yaml.ScalarNode:
		var v any
		if err := n.Decode(&v); err != nil {
			return nil, err
		}
		return v, nil
	case yaml.AliasNode:
		return fromNode(n.Alias)
	}
	return nil, fmt.Errorf("line %d: unexpected YAML node", n.Line)
}
