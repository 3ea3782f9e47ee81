package servicetest

import (
	"strings"
	"testing"

	"github.com/assetregistry/registry/pkg/httpx"
	"github.com/assetregistry/registry/tools/testkit"
)

// ErrorCase is one row of a service's own error table: a call, and the
// error it must answer.
type ErrorCase struct {
	Name, Method, Path string
	ReadOnly           bool // call with the read-only token (else the read-write one)
	Body               any
	Headers            []string // name, value pairs
	Status             int
	Problem            string   // the problem type's name, when the row names one
	Fields             []string // the fields a 422 names, in its order
}

// ErrorCases runs each row as a subtest of t; a row fails when the status,
// the problem type or the fields differ.
func (s *Service) ErrorCases(t *testing.T, rows []ErrorCase) {
	t.Helper()
	for _, tt := range rows {
		t.Run(tt.Name, func(t *testing.T) {
			token := s.RW
			if tt.ReadOnly {
				token = s.RO
			}
			r := testkit.Expect(t, s.Client.Do(t, tt.Method, tt.Path, token, tt.Body, tt.Headers...), tt.Status)
			if tt.Fields != nil && strings.Join(r.Fields(), ",") != strings.Join(tt.Fields, ",") {
				t.Errorf("fields = %v, want %v", r.Fields(), tt.Fields)
			}
			if tt.Problem != "" && r.JSON()["type"] != httpx.ProblemTypePrefix+tt.Problem {
				t.Errorf("type = %v, want %s", r.JSON()["type"], tt.Problem)
			}
		})
	}
}
