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

// Client ids of make run's four machine clients: an integration that reads
// and writes, one that only reads, a second integration that reads and
// writes (to see that neither can change what the other created), and an
// operator's client holding registry:admin.
const (
	ReadWriteClient = "local-integration"
	ReadOnlyClient  = "local-readonly"
	OtherClient     = "local-other-integration"
	AdminClient     = "local-admin"
)

// Credentials are what an integration needs to call the stack; they are
// written to registry.env.
type Credentials struct {
	RegistryURL, AuthURL, Resource         string
	ClientID, ClientSecret                 string
	ReadOnlyClientID, ReadOnlyClientSecret string
	OtherClientID, OtherClientSecret       string
	AdminClientID, AdminClientSecret       string
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
		_, secret, err := ensureClient(ctx, clients, id, previous[key], []string{idp.ScopeInternal}, s.Resource)
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

// EnsureClients makes sure the four machine clients exist with the secrets
// recorded in envFile. Secrets are stored hashed, so
// a client whose secret was lost (envFile deleted) gets a fresh one by an
// immediate rotation; a second make run otherwise reuses everything.
func (s *Stack) EnsureClients(ctx context.Context, envFile string) (Credentials, error) {
	clients, closeClients, err := s.idpClients(ctx)
	if err != nil {
		return Credentials{}, err
	}
	defer closeClients()
	previous := readEnvFile(envFile)
	c := Credentials{RegistryURL: s.RegistryURL, AuthURL: s.AuthURL, Resource: s.Resource}
	c.ClientID, c.ClientSecret, err = ensureClient(ctx, clients, ReadWriteClient, previous["CLIENT_SECRET"],
		[]string{idp.ScopeRead, idp.ScopeWrite}, s.Resource)
	if err != nil {
		return c, err
	}
	c.ReadOnlyClientID, c.ReadOnlyClientSecret, err = ensureClient(ctx, clients, ReadOnlyClient, previous["READONLY_CLIENT_SECRET"],
		[]string{idp.ScopeRead}, s.Resource)
	if err != nil {
		return c, err
	}
	c.OtherClientID, c.OtherClientSecret, err = ensureClient(ctx, clients, OtherClient, previous["OTHER_CLIENT_SECRET"],
		[]string{idp.ScopeRead, idp.ScopeWrite}, s.Resource)
	if err != nil {
		return c, err
	}
	c.AdminClientID, c.AdminClientSecret, err = ensureClient(ctx, clients, AdminClient, previous["ADMIN_CLIENT_SECRET"],
		[]string{idp.ScopeRead, idp.ScopeWrite, idp.ScopeAdmin}, s.Resource)
	if err != nil {
		return c, err
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
	_, secret, err := ensureClient(ctx, clients, id, "", scopes, s.Resource)
	return secret, err
}

func ensureClient(ctx context.Context, clients *idp.Clients, id, knownSecret string, scopes []string, resource string) (string, string, error) {
	if knownSecret != "" {
		if ok, err := clients.CheckSecret(ctx, id, knownSecret); err != nil {
			return "", "", err
		} else if ok {
			return id, knownSecret, nil
		}
	}
	secret, err := clients.CreateClient(ctx, id, scopes, []string{resource})
	if errors.Is(err, idp.ErrClientExists) {
		secret, err = clients.RotateSecret(ctx, id, 0)
	}
	if err != nil {
		return "", "", fmt.Errorf("client %s: %w", id, err)
	}
	return id, secret, nil
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
