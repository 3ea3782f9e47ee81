package passport

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"io"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/assetregistry/registry/pkg/apperr"
	"github.com/assetregistry/registry/pkg/model"
	"github.com/assetregistry/registry/services/events/tlog"
)

// Service is the passports' domain: an asset's passport, and the links
// that hand it to anyone who holds one.
type Service interface {
	// Passport is an asset's record with the proofs of every event of it,
	// for a caller that sees the asset (404 otherwise).
	Passport(ctx context.Context, by model.Caller, asset uuid.UUID) (Bundle, error)
	CreateLink(ctx context.Context, by model.Caller, asset uuid.UUID, in LinkInput) (Link, error)
	ListLinks(ctx context.Context, by model.Caller, asset uuid.UUID, page model.Page) (model.Paged[Link], error)
	// DeleteLink deletes a link: its maker's or an admin's (OwnerOnly),
	// as it is listed (If-Match).
	DeleteLink(ctx context.Context, g model.Guard, p LinkPath) error
	// LinkedPassport is the passport a link's token opens, as Passport
	// answers it now; a 404 once the link is deleted or expired.
	LinkedPassport(ctx context.Context, token string) (Bundle, error)
}

// Settings are the passports' rules that an operator sets.
type Settings struct {
	// PublicURL is the registry's public base address, which a link's URL
	// starts with (passports.public-url, by default oidc.audience).
	PublicURL string
}

type service struct {
	store      *Store
	log        *tlog.Store
	settings   Settings
	compliance ComplianceRows // nil: no actions service, no compliance
}

// NewService returns the service over st, against the checkpoints of log,
// whose passports carry the rows compliance reads (nil: none).
func NewService(st *Store, log *tlog.Store, settings Settings, compliance ComplianceRows) Service {
	settings.PublicURL = strings.TrimRight(settings.PublicURL, "/")
	return &service{store: st, log: log, settings: settings, compliance: compliance}
}

// sees is the one place that decides whether a caller sees an asset's
// passport and links: today every client sees every asset the log
// recorded (an asset it never recorded is a 404), and the tenancy rule
// (model.Access) goes here.
func (s *service) sees(ctx context.Context, by model.Caller, asset uuid.UUID) error {
	found, err := s.store.AssetRecorded(ctx, asset)
	if err == nil && !found {
		err = apperr.NotFound("asset", asset.String())
	}
	if err == nil {
		err = Visible(ctx, s.store, by, asset)
	}
	return err
}

func (s *service) CreateLink(ctx context.Context, by model.Caller, asset uuid.UUID, in LinkInput) (Link, error) {
	now := time.Now().UTC().Truncate(time.Microsecond)
	if in.ExpiresAt != nil && !in.ExpiresAt.After(now) {
		return Link{}, apperr.Invalid(apperr.FieldError{Field: "expires_at", Message: "must be in the future"})
	}
	if err := s.sees(ctx, by, asset); err != nil {
		return Link{}, err
	}
	raw := make([]byte, tokenBytes)
	if _, err := rand.Read(raw); err != nil {
		return Link{}, err
	}
	token := base64.RawURLEncoding.EncodeToString(raw)
	l := Link{ID: uuid.Must(uuid.NewV7()), AssetID: asset, URL: s.settings.PublicURL + LinkPrefix + token,
		CreatedAt: now, CreatedBy: by.Subject}
	if in.ExpiresAt != nil {
		at := in.ExpiresAt.UTC().Truncate(time.Microsecond)
		l.ExpiresAt = &at
	}
	return l, s.store.CreateLink(ctx, l, tokenHash(token))
}

func (s *service) ListLinks(ctx context.Context, by model.Caller, asset uuid.UUID, page model.Page) (model.Paged[Link], error) {
	if err := s.sees(ctx, by, asset); err != nil {
		return model.Paged[Link]{}, err
	}
	return s.store.ListLinks(ctx, asset, page)
}

func (s *service) DeleteLink(ctx context.Context, g model.Guard, p LinkPath) error {
	if err := s.sees(ctx, g.Caller, p.AssetID); err != nil {
		return err
	}
	return s.store.DeleteLink(ctx, p, func(l Link) error {
		if err := g.MayChange("passport_link", l.ID.String(), l.CreatedBy); err != nil {
			return err
		}
		return g.Precondition(l)
	})
}

func (s *service) LinkedPassport(ctx context.Context, token string) (Bundle, error) {
	asset, err := s.store.FetchLink(ctx, tokenHash(token), time.Now().UTC())
	if err != nil {
		return Bundle{}, err
	}
	// The link is the capability: whoever holds it reads the passport, as
	// its maker (who saw the asset) handed it out.
	return s.passport(ctx, asset)
}

// Passport is an asset's passport against the latest checkpoint (the
// events after it are not in it yet: the next checkpoint, within
// seconds, holds them), measured now and read when written (against the
// latest checkpoint then, with the asset heads signed in it): it is written
// as it is read, so what a passport holds in the process is one batch,
// whatever its size.
func (s *service) Passport(ctx context.Context, by model.Caller, asset uuid.UUID) (Bundle, error) {
	if err := Visible(ctx, s.store, by, asset); err != nil {
		return Bundle{}, err
	}
	return s.passport(ctx, asset)
}

func (s *service) passport(ctx context.Context, asset uuid.UUID) (Bundle, error) {
	c, err := s.log.LatestCheckpoint(ctx)
	if apperr.Is(err, apperr.KindNotFound) {
		return Bundle{}, tlog.ErrNoCheckpoint()
	}
	if err != nil {
		return Bundle{}, err
	}
	events, bytes, err := s.store.Size(ctx, asset, c.Size)
	if err != nil {
		return Bundle{}, err
	}
	// The rows are asked before the first byte, so that an actions
	// service that cannot answer is a 503, not a passport cut short. They
	// are the day's: the checkpoint is the latest, seconds old.
	var compliance *Compliance
	if s.compliance != nil {
		day := model.Today()
		rows, err := s.compliance(ctx, asset, day)
		if err != nil {
			return Bundle{}, err
		}
		compliance = &Compliance{AsOf: day, Rows: rows}
	}
	return Bundle{AssetID: asset, Checkpoint: c, Events: events, Size: passportSize(events, bytes),
		write: func(ctx context.Context, w io.Writer) error {
			// The snapshot stays open while the client reads: a client
			// too slow to take the passport in passportTime loses it
			// rather than hold back the schema's vacuum.
			ctx, cancel := context.WithTimeout(ctx, passportTime)
			defer cancel()
			p := newPassportWriter(w, asset.String(), compliance)
			if err := s.store.Read(ctx, asset, p); err != nil {
				return err
			}
			return p.Close()
		}}, nil
}
