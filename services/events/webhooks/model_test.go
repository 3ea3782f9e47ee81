package webhooks

import (
	"slices"
	"strings"
	"testing"

	"github.com/assetregistry/registry/pkg/apperr"
)

func TestWebhookInputNormalize(t *testing.T) {
	desc := "  planner  "
	tests := []struct {
		name   string
		in     WebhookInput
		fields []string
	}{
		{"whole", WebhookInput{URL: "https://hooks.example.com/x", Types: []string{"asset.*"}, Description: &desc}, nil},
		{"url missing", WebhookInput{Types: []string{"asset.*"}}, []string{"url"}},
		{"url relative", WebhookInput{URL: "/hooks", Types: []string{"asset.*"}}, []string{"url"}},
		{"url without host", WebhookInput{URL: "https:///x", Types: []string{"asset.*"}}, []string{"url"}},
		{"url opaque", WebhookInput{URL: "mailto:ops@example.com", Types: []string{"asset.*"}}, []string{"url"}},
		{"url with credentials", WebhookInput{URL: "https://u:p@example.com/", Types: []string{"asset.*"}}, []string{"url"}},
		{"url too long", WebhookInput{URL: "https://example.com/" + strings.Repeat("a", MaxURLLen), Types: []string{"asset.*"}}, []string{"url"}},
		{"types empty", WebhookInput{URL: "https://example.com/", Types: []string{}}, []string{"types"}},
		{"types missing", WebhookInput{URL: "https://example.com/"}, []string{"types"}},
		{"unknown type named by index", WebhookInput{URL: "https://example.com/", Types: []string{"asset.*", "ship.created"}}, []string{"types[1]"}},
		{"description too long", WebhookInput{URL: "https://example.com/", Types: []string{"asset.*"}, Description: new(strings.Repeat("d", DescriptionLength+1))}, []string{"description"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, _, err := tt.in.Normalize()
			var fields []string
			if e, ok := err.(*apperr.Error); ok {
				for _, f := range e.Fields {
					fields = append(fields, f.Field)
				}
			}
			if !slices.Equal(fields, tt.fields) {
				t.Fatalf("problems %v (%v), want %v", fields, err, tt.fields)
			}
			if err == nil && tt.in.Description != nil && *out.Description != "planner" {
				t.Errorf("description not trimmed: %q", *out.Description)
			}
		})
	}
}
