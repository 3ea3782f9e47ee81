package idp

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/assetregistry/registry/pkg/store"
)

// Scopes a client can hold: the registry's.
const (
	ScopeRead  = "registry:read"
	ScopeWrite = "registry:write"
	// ScopeInternal is held by the services' own machine clients only:
	// it opens the internal paths they call each other on.
	ScopeInternal = "registry:internal"
	// ScopeAdmin lets a client change and delete what other clients
	// created. Only the operator grants it (idp client create --scopes);
	// a token request gets it only for a client that holds it.
	ScopeAdmin = "registry:admin"
)

var knownScopes = []string{ScopeRead, ScopeWrite, ScopeInternal, ScopeAdmin}

// Errors of the admin API.
var (
	ErrClientNotFound = errors.New("idp: no such client")
	ErrClientExists   = errors.New("idp: client already exists")
	// ErrClientDeleted refuses an id that a deleted client had: the
	// registry's rows name their creator by client id, and a new client
	// under the old id would own them.
	ErrClientDeleted       = errors.New("idp: the client id belonged to a deleted client and is never given out again (the registry's rows name their creator by it); choose another id")
	ErrInvalidRegistration = errors.New("idp: invalid client registration")
)

// Client is a registered machine client.
type Client struct {
	ID        string    `json:"client_id" db:"client_id"`
	Scopes    []string  `json:"scopes" db:"scopes"`
	Resources []string  `json:"resources" db:"resources"`
	CreatedAt time.Time `json:"created_at" db:"created_at"`
	// OrganizationID is the organization the client belongs to (its
	// tokens' org claim), nil for a client bound to none. The identity
	// provider knows no organizations: the operator names one that exists.
	OrganizationID *string `json:"organization_id" db:"organization_id"`
	// Secrets are the client's valid secrets, oldest first: two during a
	// rotation's handover window. Only ListClients fills it in.
	Secrets []Secret `json:"secrets" db:"secrets"`
}

// Secret describes one client secret; the secret itself is never stored.
type Secret struct {
	CreatedAt time.Time  `json:"created_at"`
	ExpiresAt *time.Time `json:"expires_at,omitempty"` // set once a rotation replaced it
}

// Clients is the admin API over machine clients and their secrets.
type Clients struct {
	store clientStore
	now   func() time.Time // the secret-expiry clock; tests move it
}

// NewClients returns the admin API over pool, a connection pool inside the
// IdP's migrated schema (see Migrations).
func NewClients(pool *store.Pool) *Clients {
	return &Clients{store: clientStore{pool: pool}, now: time.Now}
}

var clientIDPattern = regexp.MustCompile(`^[A-Za-z0-9._-]{3,64}$`)

// CreateClient registers a client that may hold scopes (a subset of
// registry:read and registry:write) for resources (absolute URIs, such as
// the registry's base address), and returns its first secret. The secret is
// not stored and cannot be shown again.
func (c *Clients) CreateClient(ctx context.Context, id string, scopes, resources []string) (string, error) {
	return c.Register(ctx, Client{ID: id, Scopes: scopes, Resources: resources})
}

// Register is CreateClient for a client that may also be bound to an
// organization from the start (client.OrganizationID); the rest of client
// is checked as CreateClient's arguments.
func (c *Clients) Register(ctx context.Context, client Client) (string, error) {
	org, err := organizationID(client.OrganizationID)
	if err != nil {
		return "", err
	}
	client, err = newClient(client.ID, client.Scopes, client.Resources)
	if err != nil {
		return "", err
	}
	client.OrganizationID = org
	client.CreatedAt = c.now()
	secret, hash := newSecret()
	if err := c.store.createClient(ctx, client, hash); err != nil {
		return "", fmt.Errorf("create client %s: %w", client.ID, err)
	}
	return secret, nil
}

// RotateSecret gives the client a new secret and returns it. The secret it
// replaces keeps working for window (0: it stops now), so an integration
// can switch over without an outage; a secret still in the window of an
// earlier rotation stops at once.
func (c *Clients) RotateSecret(ctx context.Context, id string, window time.Duration) (string, error) {
	if window < 0 {
		return "", fmt.Errorf("%w: the handover window %s is negative", ErrInvalidRegistration, window)
	}
	now := c.now()
	secret, hash := newSecret()
	if err := c.store.rotateSecret(ctx, id, hash, now, now.Add(window)); err != nil {
		return "", fmt.Errorf("rotate secret of client %s: %w", id, err)
	}
	return secret, nil
}

// ListClients returns every client, ordered by id, with its valid secrets.
func (c *Clients) ListClients(ctx context.Context) ([]Client, error) {
	clients, err := c.store.listClients(ctx, c.now())
	if err != nil {
		return nil, fmt.Errorf("list clients: %w", err)
	}
	return clients, nil
}

// SetScopes replaces the scopes the client holds (validated as
// CreateClient's). Removing one voids every token issued before: the
// client's secrets get new generations, and the verifiers refuse the
// older ones once they read the token validity list. Adding scopes voids
// nothing. It reports whether tokens were voided.
func (c *Clients) SetScopes(ctx context.Context, id string, scopes []string) (bool, error) {
	checked, err := checkScopes(scopes)
	if err != nil {
		return false, err
	}
	if len(checked) == 0 {
		return false, fmt.Errorf("%w: a client needs at least one scope (delete it to take every scope away)", ErrInvalidRegistration)
	}
	voided, err := c.store.setScopes(ctx, id, checked)
	if err != nil {
		return false, fmt.Errorf("set scopes of client %s: %w", id, err)
	}
	return voided, nil
}

// Bind makes the client belong to organization (an organization's id, a
// UUID), or to none when organization is nil. Tokens issued afterwards
// carry it in their org claim. A change voids every token issued before,
// as taking a scope away does: a token of a client bound to none reads
// every organization's equipment, one of a client bound elsewhere another
// organization's, and neither may outlive the change. Binding to the
// organization it already has changes and voids nothing. It reports
// whether tokens were voided.
func (c *Clients) Bind(ctx context.Context, id string, organization *string) (bool, error) {
	org, err := organizationID(organization)
	if err != nil {
		return false, err
	}
	voided, err := c.store.bind(ctx, id, org)
	if err != nil {
		return false, fmt.Errorf("bind client %s: %w", id, err)
	}
	return voided, nil
}

// TokenValidity is, for every client, the lowest credential generation of
// a token that still stands (see clientStore.tokenValidity).
func (c *Clients) TokenValidity(ctx context.Context) (map[string]int64, error) {
	v, err := c.store.tokenValidity(ctx, c.now())
	if err != nil {
		return nil, fmt.Errorf("token validity: %w", err)
	}
	return v, nil
}

// DeleteClient removes the client and its secrets. Its tokens are void at
// once: the client leaves the token validity list, which the verifiers
// follow. Its id is kept and never given to another client
// (ErrClientDeleted): the registry's rows name their creator by it.
func (c *Clients) DeleteClient(ctx context.Context, id string) error {
	if err := c.store.deleteClient(ctx, id, c.now()); err != nil {
		return fmt.Errorf("delete client %s: %w", id, err)
	}
	return nil
}

// CheckSecret reports whether secret is a valid secret of client id. An
// unknown client is false, not an error.
func (c *Clients) CheckSecret(ctx context.Context, id, secret string) (bool, error) {
	_, _, err := c.authenticate(ctx, id, secret)
	if errors.Is(err, errBadCredentials) {
		return false, nil
	}
	return err == nil, err
}

var errBadCredentials = errors.New("unknown client or wrong secret")

// authenticate returns the client when secret is one of its valid secrets,
// with the generation of that secret, which the token carries.
func (c *Clients) authenticate(ctx context.Context, id, secret string) (Client, int64, error) {
	if id == "" || secret == "" {
		return Client{}, 0, errBadCredentials
	}
	client, secrets, err := c.store.credentials(ctx, id, c.now())
	if errors.Is(err, ErrClientNotFound) {
		return Client{}, 0, errBadCredentials
	}
	if err != nil {
		return Client{}, 0, fmt.Errorf("authenticate client %s: %w", id, err)
	}
	want := hashSecret(secret)
	var generation int64
	match := 0
	for _, s := range secrets {
		same := subtle.ConstantTimeCompare(s.hash, want)
		generation = int64(subtle.ConstantTimeSelect(same, int(s.generation), int(generation)))
		match |= same
	}
	if match != 1 {
		return Client{}, 0, errBadCredentials
	}
	return client, generation, nil
}

// newSecret returns a fresh secret and its hash: 32 random bytes, base64url.
func newSecret() (secret string, hash []byte) {
	b := make([]byte, 32)
	_, _ = rand.Read(b) // crypto/rand.Read never fails; it crashes the program instead
	secret = base64.RawURLEncoding.EncodeToString(b)
	return secret, hashSecret(secret)
}

// hashSecret is what the database keeps of a secret: its SHA-256 digest.
//
// A slow, salted password hash (bcrypt, Argon2) exists to make guessing
// low-entropy human passwords expensive. These secrets are 256 random bits
// made by the IdP: there is no dictionary to try, and finding a preimage of
// SHA-256 is as hard as guessing the secret itself, so a salt or a work
// factor would add nothing but latency to every token request. The digest is
// compared in constant time so that response timing reveals nothing about
// it.
func hashSecret(secret string) []byte {
	sum := sha256.Sum256([]byte(secret))
	return sum[:]
}

func newClient(id string, scopes, resources []string) (Client, error) {
	if !clientIDPattern.MatchString(id) {
		return Client{}, fmt.Errorf("%w: client id %q must be 3 to 64 characters of A-Z a-z 0-9 . _ -", ErrInvalidRegistration, id)
	}
	checked, err := checkScopes(scopes)
	if err != nil {
		return Client{}, err
	}
	c := Client{ID: id, Scopes: checked}
	for _, r := range resources {
		canonical, err := canonicalResource(r)
		if err != nil {
			return Client{}, fmt.Errorf("%w: %w", ErrInvalidRegistration, err)
		}
		if !slices.Contains(c.Resources, canonical) {
			c.Resources = append(c.Resources, canonical)
		}
	}
	// Without either the client could never obtain a token.
	if len(c.Scopes) == 0 || len(c.Resources) == 0 {
		return Client{}, fmt.Errorf("%w: a client needs at least one scope and one resource", ErrInvalidRegistration)
	}
	return c, nil
}

var uuidPattern = regexp.MustCompile(`^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$`)

// organizationID checks an organization id as the registry writes them (a
// UUID in its 36-character form, which the verifiers insist on in the org
// claim) and gives it in lower case; nil stays nil.
func organizationID(org *string) (*string, error) {
	if org == nil {
		return nil, nil
	}
	if !uuidPattern.MatchString(*org) {
		return nil, fmt.Errorf("%w: organization %q is not an organization id (a UUID such as 0190a6e2-8c3b-7d4e-9f00-1a2b3c4d5e6f)", ErrInvalidRegistration, *org)
	}
	lower := strings.ToLower(*org)
	return &lower, nil
}

// checkScopes refuses a scope the registry does not know and drops
// repeats.
func checkScopes(scopes []string) ([]string, error) {
	var out []string
	for _, s := range scopes {
		if !slices.Contains(knownScopes, s) {
			return nil, fmt.Errorf("%w: unknown scope %q (known: %s)", ErrInvalidRegistration, s, strings.Join(knownScopes, ", "))
		}
		if !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out, nil
}

// canonicalResource checks an RFC 8707 resource indicator (an absolute URI
// without a fragment) and drops one trailing slash, since
// "https://registry.example" and "https://registry.example/" name the same
// resource.
func canonicalResource(r string) (string, error) {
	u, err := url.Parse(r)
	if err != nil || !u.IsAbs() || strings.Contains(r, "#") {
		return "", fmt.Errorf("resource %q is not an absolute URI without a fragment", r)
	}
	return strings.TrimSuffix(r, "/"), nil
}
