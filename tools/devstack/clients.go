package devstack

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/assetregistry/registry/idp"
	"github.com/assetregistry/registry/pkg/catalog"
	"github.com/assetregistry/registry/pkg/store"
	"github.com/assetregistry/registry/tools/devinfra"
)

// Client ids of make run's machine clients: an integration that reads
// and writes, one that only reads, a second integration that reads and
// writes (to see that neither can change what the other created), an
// operator's client holding registry:admin, all four bound to no
// organization; and two read-write clients bound to the two organizations
// make run creates (OrgA, OrgB: the tenancy rules' cast).
const (
	ReadWriteClient = "local-integration"
	ReadOnlyClient  = "local-readonly"
	OtherClient     = "local-other-integration"
	AdminClient     = "local-admin"
	OrgAClient      = "local-org-a"
	OrgBClient      = "local-org-b"
)

// Credentials are what an integration needs to call the stack; they are
// written to registry.env.
type Credentials struct {
	RegistryURL, AuthURL, Resource         string
	ClientID, ClientSecret                 string
	ReadOnlyClientID, ReadOnlyClientSecret string
	OtherClientID, OtherClientSecret       string
	AdminClientID, AdminClientSecret       string
	// OrgA and OrgB are two organizations of the registry, each with a
	// read-write client bound to it (ORG_A_ID, ORG_A_CLIENT_ID, ...).
	OrgA, OrgB Tenant
}

// Tenant is an organization of the registry and a read-write machine
// client bound to it: its tokens carry ID in the claim org.
type Tenant struct {
	ID                     string // the organization's id
	ClientID, ClientSecret string
}

// ServiceIdentity is a service's own machine client, for its calls to peers.
type ServiceIdentity struct {
	ClientID, ClientSecret string
}

// ensureServiceClients makes sure every service that calls peers has a
// machine client holding only the internal scope, with the secret
// recorded in envFile (mode 0600) so the next make run reuses it.
func (s *Stack) ensureServiceClients(ctx context.Context, envFile string) (map[string]ServiceIdentity, error) {
	clients, closeClients, err := s.idpClients(ctx)
	if err != nil {
		return nil, err
	}
	defer closeClients()
	previous := readEnvFile(envFile)
	identities := map[string]ServiceIdentity{}
	var lines []string
	for _, svc := range catalog.Services {
		if len(svc.Peers()) == 0 {
			continue
		}
		id := "svc-" + svc.Name
		key := envName("SECRET", svc.Name, "")
		secret, err := ensureClient(ctx, clients, idp.Client{ID: id, Scopes: []string{idp.ScopeInternal}, Resources: []string{s.Resource}}, previous[key])
		if err != nil {
			return nil, err
		}
		identities[svc.Name] = ServiceIdentity{ClientID: id, ClientSecret: secret}
		lines = append(lines, key+"="+secret)
	}
	return identities, writeSecretFile(envFile, "the services' own machine clients", lines)
}

// idpClients opens the identity provider's client registry in its schema.
func (s *Stack) idpClients(ctx context.Context) (*idp.Clients, func(), error) {
	pool, err := store.Open(ctx, store.Config{URL: s.DatabaseURL, Schema: "idp", MaxConns: 2})
	if err != nil {
		return nil, nil, err
	}
	// The IdP has migrated by now (it is ready), so its schema exists.
	if err := store.Ping(pool)(ctx); err != nil {
		pool.Close()
		return nil, nil, err
	}
	return idp.NewClients(pool), pool.Close, nil
}

// EnsureClients makes sure the machine clients exist with the secrets
// recorded in envFile, and the two organizations of the bound ones (found
// by registration number, created through the API the first time).
// Secrets are stored hashed, so a client whose secret was lost (envFile
// deleted) gets a fresh one by an immediate rotation; a second make run
// otherwise reuses everything.
func (s *Stack) EnsureClients(ctx context.Context, envFile string) (Credentials, error) {
	clients, closeClients, err := s.idpClients(ctx)
	if err != nil {
		return Credentials{}, err
	}
	defer closeClients()
	previous := readEnvFile(envFile)
	c := Credentials{RegistryURL: s.RegistryURL, AuthURL: s.AuthURL, Resource: s.Resource}
	readWrite := []string{idp.ScopeRead, idp.ScopeWrite}
	for _, m := range []struct {
		id, secretKey string
		scopes        []string
		into          *string
	}{
		{ReadWriteClient, "CLIENT_SECRET", readWrite, &c.ClientSecret},
		{ReadOnlyClient, "READONLY_CLIENT_SECRET", []string{idp.ScopeRead}, &c.ReadOnlyClientSecret},
		{OtherClient, "OTHER_CLIENT_SECRET", readWrite, &c.OtherClientSecret},
		{AdminClient, "ADMIN_CLIENT_SECRET", []string{idp.ScopeRead, idp.ScopeWrite, idp.ScopeAdmin}, &c.AdminClientSecret},
	} {
		if *m.into, err = ensureClient(ctx, clients, idp.Client{ID: m.id, Scopes: m.scopes, Resources: []string{s.Resource}}, previous[m.secretKey]); err != nil {
			return c, err
		}
	}
	c.ClientID, c.ReadOnlyClientID, c.OtherClientID, c.AdminClientID = ReadWriteClient, ReadOnlyClient, OtherClient, AdminClient
	admin, err := c.token(ctx, c.AdminClientID, c.AdminClientSecret)
	if err != nil {
		return c, err
	}
	for _, t := range []struct {
		tenant       *Tenant
		client, name string
		registration string
		secretKey    string
	}{
		{&c.OrgA, OrgAClient, "Org A", "ORG-A", "ORG_A_CLIENT_SECRET"},
		{&c.OrgB, OrgBClient, "Org B", "ORG-B", "ORG_B_CLIENT_SECRET"},
	} {
		if t.tenant.ID, err = c.ensureOrganization(ctx, admin, t.name, t.registration); err != nil {
			return c, err
		}
		t.tenant.ClientID = t.client
		client := idp.Client{ID: t.client, Scopes: readWrite, Resources: []string{s.Resource}, OrganizationID: &t.tenant.ID}
		if t.tenant.ClientSecret, err = ensureClient(ctx, clients, client, previous[t.secretKey]); err != nil {
			return c, err
		}
	}
	return c, writeEnvFile(envFile, c)
}

// NewClient makes one more machine client with scopes (registry:read, ...)
// for the stack's resource, or gives an existing one a fresh secret; it
// returns the secret. Tests use it for a client the gateway has a budget
// of its own for.
func (s *Stack) NewClient(ctx context.Context, id string, scopes ...string) (string, error) {
	clients, closeClients, err := s.idpClients(ctx)
	if err != nil {
		return "", err
	}
	defer closeClients()
	return ensureClient(ctx, clients, idp.Client{ID: id, Scopes: scopes, Resources: []string{s.Resource}}, "")
}

// ensureClient makes sure client exists, bound as it says (to its
// OrganizationID, or to none), and returns a secret of it: knownSecret
// when that still authenticates it, else the first secret of a new client
// or a fresh one of an existing client (rotated at once).
func ensureClient(ctx context.Context, clients *idp.Clients, client idp.Client, knownSecret string) (string, error) {
	secret, err := existingClient(ctx, clients, client, knownSecret)
	if err == nil && secret == "" {
		secret, err = clients.Register(ctx, client)
		if errors.Is(err, idp.ErrClientExists) {
			secret, err = existingClient(ctx, clients, client, "")
		}
	}
	if err != nil {
		return "", fmt.Errorf("client %s: %w", client.ID, err)
	}
	return secret, nil
}

// existingClient binds an existing client as client says (binding as it
// already is changes nothing and voids no token) and returns knownSecret
// if that authenticates it, or else a fresh secret (rotated at once). It
// returns "" for a client that does not exist.
func existingClient(ctx context.Context, clients *idp.Clients, client idp.Client, knownSecret string) (string, error) {
	secret := knownSecret
	if secret != "" {
		if ok, err := clients.CheckSecret(ctx, client.ID, secret); err != nil || !ok {
			return "", err
		}
	} else {
		var err error
		if secret, err = clients.RotateSecret(ctx, client.ID, 0); errors.Is(err, idp.ErrClientNotFound) {
			return "", nil
		} else if err != nil {
			return "", err
		}
	}
	_, err := clients.Bind(ctx, client.ID, client.OrganizationID)
	return secret, err
}

func (c Credentials) env() []string {
	return []string{
		"REGISTRY_URL=" + c.RegistryURL,
		"AUTH_URL=" + c.AuthURL,
		"RESOURCE=" + c.Resource,
		"CLIENT_ID=" + c.ClientID,
		"CLIENT_SECRET=" + c.ClientSecret,
		"READONLY_CLIENT_ID=" + c.ReadOnlyClientID,
		"READONLY_CLIENT_SECRET=" + c.ReadOnlyClientSecret,
		"OTHER_CLIENT_ID=" + c.OtherClientID,
		"OTHER_CLIENT_SECRET=" + c.OtherClientSecret,
		"ADMIN_CLIENT_ID=" + c.AdminClientID,
		"ADMIN_CLIENT_SECRET=" + c.AdminClientSecret,
		"ORG_A_ID=" + c.OrgA.ID,
		"ORG_A_CLIENT_ID=" + c.OrgA.ClientID,
		"ORG_A_CLIENT_SECRET=" + c.OrgA.ClientSecret,
		"ORG_B_ID=" + c.OrgB.ID,
		"ORG_B_CLIENT_ID=" + c.OrgB.ClientID,
		"ORG_B_CLIENT_SECRET=" + c.OrgB.ClientSecret,
	}
}

// writeEnvFile writes the credentials readable by the owner only: they are
// secrets, even if local ones.
func writeEnvFile(path string, c Credentials) error {
	return writeSecretFile(path, "`set -a; . "+path+"; set +a` to use", c.env())
}

// writeSecretFile writes name=value lines, readable by the owner only from
// the first byte (a leftover temporary file of a looser mode cannot widen
// it), replacing the file atomically.
func writeSecretFile(path, about string, lines []string) error {
	body := "# Written by make run " + time.Now().UTC().Format(time.RFC3339) + "; " + about + ".\n" +
		strings.Join(lines, "\n") + "\n"
	return devinfra.WritePrivateFile(path, body)
}

func readEnvFile(path string) map[string]string {
	vars := map[string]string{}
	f, err := os.Open(path)
	if err != nil {
		return vars
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), "="); ok && !strings.HasPrefix(k, "#") {
			vars[k] = v
		}
	}
	return vars
}
