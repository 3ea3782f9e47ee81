package actiondocs

import (
	"testing"

	"github.com/google/uuid"

	"github.com/assetregistry/registry/pkg/model"
	"github.com/assetregistry/registry/tools/testkit/servicetest"
)

func TestActionDocumentInput(t *testing.T) {
	action, document := uuid.New(), uuid.New()
	normalize := func(in ActionDocumentInput) (ActionDocumentInput, error) { return in.Normalize(action) }
	servicetest.Validations(t, normalize, []servicetest.Validation[ActionDocumentInput, ActionDocumentInput]{
		{Name: "complete", In: ActionDocumentInput{ActionID: model.ID(action), DocumentID: model.ID(document), SourceSystem: "a", SourceReference: "b"}},
		{Name: "empty", In: ActionDocumentInput{}, Fields: []string{"action_id", "document_id", "source_system", "source_reference"}},
		{Name: "another action", In: ActionDocumentInput{ActionID: model.ID(uuid.New()), DocumentID: model.ID(document), SourceSystem: "a", SourceReference: "b"}, Fields: []string{"action_id"}},
		{Name: "blank text", In: ActionDocumentInput{ActionID: model.ID(action), DocumentID: model.ID(document), SourceSystem: " ", SourceReference: "\t"}, Fields: []string{"source_system", "source_reference"}},
	})
}
