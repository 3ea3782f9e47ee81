package passport

import (
	"context"
	"encoding/json"
	"net/url"

	"github.com/google/uuid"

	"github.com/assetregistry/registry/pkg/apperr"
	"github.com/assetregistry/registry/pkg/auth"
	"github.com/assetregistry/registry/pkg/model"
	"github.com/assetregistry/registry/pkg/peer"
)

// Informational is what a passport carries beside its proofs, for a
// reader: the asset's compliance rows and the names of who performed each
// action. The log proves none of it (docs/events.md, "What a passport
// proves and what it only tells"): a verifier checks that it is shaped
// right and names the passport's own asset and actions, never that it is
// true. It is the bundle's last member, after the events.
type Informational struct {
	// About says so in the bundle itself, for whoever opens the file.
	About      string      `json:"about"`
	Compliance *Compliance `json:"compliance"` // nil: the actions service is not deployed
	Performers []Performer `json:"performers"`
}

// InformationalAbout is Informational.About.
const InformationalAbout = "not proved by the log: the compliance rows as the actions service answered them, and the names the registry held for the organizations and people the actions name"

// Compliance is the asset's rows of GET /compliance?asset_id=…&as_of=AsOf,
// as the actions service answered them when the passport was made.
type Compliance struct {
	AsOf model.Date        `json:"as_of"`
	Rows []json.RawMessage `json:"rows"`
}

// Performer is who performed one action, as its latest event up to the
// checkpoint names them (organization_id, person_id), with the name the
// registry held for each then: nil where the action names none.
type Performer struct {
	ActionID     string `json:"action_id"`
	Organization *Party `json:"organization"`
	Person       *Party `json:"person"`
}

// Party is an organization or a person and its name: an organization's
// name, a person's first_name and last_name with a space between; nil
// when the registry holds none (a person erased, or no event of it).
type Party struct {
	ID   string  `json:"id"`
	Name *string `json:"name"`
}

// ComplianceRows reads an asset's compliance rows at a date.
type ComplianceRows func(ctx context.Context, asset uuid.UUID, asOf model.Date) ([]json.RawMessage, error)

// CompliancePath is the actions service's internal route of the rows
// GET /compliance answers.
const CompliancePath = auth.InternalPrefix + "compliance"

// complianceLimit is a page of rows larger than any asset has (one per
// action type).
const complianceLimit = "1000"

// PeerCompliance reads the rows from the actions service (c, nil when it
// is not deployed: the passport then has no compliance). The call carries
// the passport's caller, so the rows are those it would read itself.
func PeerCompliance(c *peer.Client) ComplianceRows {
	if c == nil {
		return nil
	}
	return func(ctx context.Context, asset uuid.UUID, asOf model.Date) ([]json.RawMessage, error) {
		q := url.Values{"asset_id": {asset.String()}, "as_of": {asOf.String()}, "limit": {complianceLimit}}
		rows := []json.RawMessage{}
		if err := c.Call(ctx, "GET", CompliancePath+"?"+q.Encode(), nil, &rows); err != nil {
			// Whatever the actions service refused, the passport's caller
			// did nothing wrong: the passport cannot be made now.
			if !apperr.Is(err, apperr.KindUnavailable) {
				err = apperr.Unavailable("the actions service", err)
			}
			return nil, err
		}
		return rows, nil
	}
}

// personName is a person's name from its first and last names.
func personName(first, last *string) *string {
	switch {
	case first == nil && last == nil:
		return nil
	case first == nil:
		return last
	case last == nil:
		return first
	}
	name := *first + " " + *last
	return &name
}

// copied is a copy of what a scanned value points at, which the next row
// may overwrite.
func copied(s *string) *string {
	if s == nil {
		return nil
	}
	c := *s
	return &c
}
