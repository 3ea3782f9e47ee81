package webhooks

import (
	"net/url"
	"time"

	"github.com/google/uuid"

	"github.com/assetregistry/registry/pkg/apperr"
	"github.com/assetregistry/registry/pkg/model"
	"github.com/assetregistry/registry/services/events/feed"
)

// Webhook is a subscription as the API shows it. Secret is only set in
// the answers that create it or rotate it.
type Webhook struct {
	ID          uuid.UUID `json:"id" db:"id"`
	URL         string    `json:"url" db:"url"`
	Types       []string  `json:"types" db:"types"`
	Description *string   `json:"description" db:"description"`
	Secret      string    `json:"secret,omitempty" db:"-"`
	model.Audit
}

// WebhookInput creates a subscription.
type WebhookInput struct {
	URL         string   `json:"url"`
	Types       []string `json:"types"`
	Description *string  `json:"description"`
}

// webhookReadOnly are the members the service sets beyond the audit ones.
var webhookReadOnly = []string{"secret"}

func (WebhookInput) ReadOnlyFields() []string { return webhookReadOnly }

func (WebhookPatch) ReadOnlyFields() []string { return webhookReadOnly }

// Limits of a subscription.
const (
	MaxURLLen         = 2000
	MaxTypes          = 50
	DescriptionLength = model.NameLen
)

// Normalize checks the input's shape (the URL's address is the
// service's to check: it needs the resolver and the settings).
func (in WebhookInput) Normalize() (WebhookInput, *url.URL, error) {
	var v apperr.Validation
	u := validURL(&v, in.URL)
	in.Types = validTypes(&v, in.Types)
	in.Description = model.Optional(&v, "description", in.Description, DescriptionLength)
	return in, u, v.Err()
}

func validURL(v *apperr.Validation, raw string) *url.URL {
	if raw == "" {
		v.Add("url", "is required: the absolute https URL deliveries are sent to")
		return nil
	}
	u, err := url.Parse(raw)
	switch {
	case len(raw) > MaxURLLen:
		v.Add("url", "must be at most %d characters", MaxURLLen)
	case err != nil || !u.IsAbs() || u.Host == "" || u.Hostname() == "" || u.Opaque != "":
		v.Add("url", "must be an absolute URL (https://host/path)")
	case u.User != nil:
		v.Add("url", "must not carry credentials")
	case u.Fragment != "":
		v.Add("url", "must not have a fragment")
	default:
		return u
	}
	return nil
}

func validTypes(v *apperr.Validation, types []string) []string {
	if len(types) == 0 {
		v.Add("types", "must name at least one event type, e.g. asset.created or action.*")
		return nil
	}
	if len(types) > MaxTypes {
		v.Add("types", "must name at most %d event types", MaxTypes)
		return nil
	}
	return feed.ParseTypes(v, "types", types, true).Patterns()
}

// WebhookPatch changes a subscription (JSON merge patch).
type WebhookPatch struct {
	URL         model.PatchField[string]   `json:"url"`
	Types       model.PatchField[[]string] `json:"types"`
	Description model.PatchField[string]   `json:"description"`
}

// Apply returns w with the patch applied and checked.
func (p WebhookPatch) Apply(w WebhookInput) (WebhookInput, *url.URL, error) {
	var v apperr.Validation
	model.Keep(&v, "url", p.URL, &w.URL)
	model.Keep(&v, "types", p.Types, &w.Types)
	p.Description.ApplyOptional(&w.Description)
	if err := v.Err(); err != nil {
		return w, nil, err
	}
	return w.Normalize()
}

// Delivery statuses.
const (
	StatusPending   = "pending"
	StatusSucceeded = "succeeded"
	StatusFailed    = "failed"
)

// Delivery is one event sent (or to be sent) to one subscription.
type Delivery struct {
	ID             uuid.UUID  `json:"id" db:"id"`
	EventID        uuid.UUID  `json:"event_id" db:"event_id"`
	Attempts       int        `json:"attempts" db:"attempts"`
	Status         string     `json:"status" db:"status"`
	LastStatusCode *int       `json:"last_status_code" db:"last_status_code"`
	LastError      *string    `json:"last_error" db:"last_error"`
	NextAttemptAt  *time.Time `json:"next_attempt_at" db:"next_attempt_at"`
}

// DeliveryPath names one delivery of one subscription.
type DeliveryPath struct {
	WebhookID, ID uuid.UUID
}
