package actiondocs

import (
	"testing"

	"github.com/google/uuid"

	"github.com/assetregistry/registry/pkg/model"
	"github.com/assetregistry/registry/tools/testkit/servicetest"
)

func TestActionDocumentInput(t *testing.T) {
	action, document := uuid.New(), uuid.New()
	tests := []struct {
		name   string
		in     ActionDocumentInput
		fields []string
	}{
		{"complete", ActionDocumentInput{ActionID: model.ID(action), DocumentID: model.ID(document), SourceSystem: "a", SourceReference: "b"}, nil},
		{"empty", ActionDocumentInput{}, []string{"action_id", "document_id", "source_system", "source_reference"}},
		{"another action", ActionDocumentInput{ActionID: model.ID(uuid.New()), DocumentID: model.ID(document), SourceSystem: "a", SourceReference: "b"}, []string{"action_id"}},
		{"blank text", ActionDocumentInput{ActionID: model.ID(action), DocumentID: model.ID(document), SourceSystem: " ", SourceReference: "\t"}, []string{"source_system", "source_reference"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := tt.in.Normalize(action)
			servicetest.WantFields(t, err, tt.fields...)
		})
	}
}
