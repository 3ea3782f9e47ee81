package devinfra

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// HydraOptions configure a private ORY Hydra (see HydraVersion).
type HydraOptions struct {
	// DatabaseURL is a PostgreSQL database of Hydra's own, created by the
	// caller; Hydra creates its tables in its public schema. Required: a
	// build without cgo has no SQLite.
	DatabaseURL string
	// Port and AdminPort are the public (token endpoint, discovery, JWKS)
	// and admin (clients) ports on 127.0.0.1; 0 picks free ones.
	Port, AdminPort int
	LogFile         string // required; appended to
}

// Hydra is a running ORY Hydra on loopback. It issues JWT access tokens
// (RS256, scopes in an "scp" array, aud from the "audience" parameter) for
// the client credentials grant.
type Hydra struct {
	// Issuer is exactly what Hydra publishes in its discovery document and
	// puts in iss, with a trailing slash, as many issuers do.
	Issuer    string
	PublicURL string // base of /.well-known/openid-configuration and /oauth2/token
	AdminURL  string // base of /admin/clients
	LogFile   string
	srv       *server
}

// StartHydra builds the pinned Hydra if needed (see EnsureHydraServer),
// applies its migrations to o.DatabaseURL and serves it on 127.0.0.1 until
// Stop, returning once both of its ports answer.
func StartHydra(ctx context.Context, o HydraOptions) (*Hydra, error) {
	if o.DatabaseURL == "" || o.LogFile == "" {
		return nil, errors.New("start hydra: DatabaseURL and LogFile are required")
	}
	bin, err := EnsureHydraServer(ctx, os.Stderr)
	if err != nil {
		return nil, fmt.Errorf("start hydra: %w", err)
	}
	secret := make([]byte, 32)
	_, _ = rand.Read(secret) // crypto/rand.Read never fails
	env := append(hydraEnvKeep(os.Environ()),
		"DSN="+o.DatabaseURL,
		// Hydra encrypts what it stores with this; a throwaway server gets a
		// throwaway secret.
		fmt.Sprintf("SECRETS_SYSTEM=%x", secret),
		"STRATEGIES_ACCESS_TOKEN=jwt",
		"LOG_LEVEL=info",
		// Nothing calls out. Even with the opt-out, Hydra's usage
		// statistics client queues one notice for ORY's server; a proxy
		// that no one serves, on loopback, keeps that and any other
		// outgoing request from leaving the machine (Go never proxies
		// loopback, so Hydra's own ports are unaffected).
		"SQA_OPT_OUT=true",
		"HTTP_PROXY=http://127.0.0.1:1",
		"HTTPS_PROXY=http://127.0.0.1:1",
	)
	if err := runHydraMigrations(ctx, bin, env, o.LogFile); err != nil {
		return nil, err
	}
	return launchOnPort(o.Port, func(port int) (*Hydra, error) {
		admin := o.AdminPort
		if admin == 0 {
			if admin, err = FreePort(); err != nil {
				return nil, err
			}
		}
		return launchHydra(ctx, bin, env, o.LogFile, port, admin)
	})
}

func runHydraMigrations(ctx context.Context, bin string, env []string, logPath string) error {
	logFile, err := os.OpenFile(logPath, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("open hydra log: %w", err)
	}
	defer logFile.Close()
	offset, _ := logFile.Seek(0, io.SeekEnd)
	ctx, cancel := context.WithTimeout(ctx, defaultStartTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "migrate", "sql", "up", "--read-from-env", "--yes")
	cmd.Env = env
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := runFromLockedThread(cmd); err != nil {
		return withLog(fmt.Errorf("hydra migrations: %w", err), readLogTail(logPath, offset))
	}
	return nil
}

func launchHydra(ctx context.Context, bin string, env []string, logFile string, port, adminPort int) (*Hydra, error) {
	h := &Hydra{
		Issuer:    "http://" + loopback(port) + "/",
		PublicURL: "http://" + loopback(port),
		AdminURL:  "http://" + loopback(adminPort),
		LogFile:   logFile,
	}
	cmd := exec.Command(bin, "serve", "all",
		"--dev", // plain HTTP on loopback; it relaxes nothing about tokens
		"--sqa-opt-out")
	cmd.Env = append(env,
		"URLS_SELF_ISSUER="+h.Issuer,
		"SERVE_PUBLIC_HOST=127.0.0.1", "SERVE_PUBLIC_PORT="+strconv.Itoa(port),
		"SERVE_ADMIN_HOST=127.0.0.1", "SERVE_ADMIN_PORT="+strconv.Itoa(adminPort),
	)
	srv, err := startServer("hydra", cmd, logFile)
	if err != nil {
		return nil, err
	}
	err = waitReady(ctx, srv, func(ctx context.Context) error {
		if err := httpOK(ctx, h.PublicURL+"/health/ready"); err != nil {
			return err
		}
		return httpOK(ctx, h.AdminURL+"/health/ready")
	})
	if err != nil {
		return nil, err
	}
	h.srv = srv
	return h, nil
}

// Stop stops the server (SIGTERM, then SIGKILL).
func (h *Hydra) Stop() error { return h.srv.stop(syscall.SIGTERM) }

// HydraClient is a machine client of the client credentials grant.
type HydraClient struct {
	ID       string
	Scopes   []string // the scopes it may ask for; Hydra grants only those asked for
	Audience []string // the audiences it may ask for with the "audience" parameter
	// AccessTokenLifespan, when set, replaces Hydra's default (1h) for
	// this client's tokens.
	AccessTokenLifespan time.Duration
}

// CreateClient registers c through the admin API and returns its secret.
// The client authenticates with client_secret_post and gets JWT access
// tokens.
func (h *Hydra) CreateClient(ctx context.Context, c HydraClient) (string, error) {
	var created struct {
		Secret string `json:"client_secret"`
	}
	err := h.admin(ctx, http.MethodPost, "/admin/clients", map[string]any{
		"client_id":                  c.ID,
		"grant_types":                []string{"client_credentials"},
		"scope":                      strings.Join(c.Scopes, " "),
		"audience":                   c.Audience,
		"token_endpoint_auth_method": "client_secret_post",
		"access_token_strategy":      "jwt",
	}, &created)
	if err != nil {
		return "", fmt.Errorf("create hydra client %s: %w", c.ID, err)
	}
	if c.AccessTokenLifespan > 0 {
		err := h.admin(ctx, http.MethodPut, "/admin/clients/"+c.ID+"/lifespans", map[string]any{
			"client_credentials_grant_access_token_lifespan": c.AccessTokenLifespan.String(),
		}, nil)
		if err != nil {
			return "", fmt.Errorf("set the token lifespan of hydra client %s: %w", c.ID, err)
		}
	}
	return created.Secret, nil
}

func (h *Hydra) admin(ctx context.Context, method, path string, in, out any) error {
	body, err := json.Marshal(in)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, method, h.AdminURL+path, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("%s %s: %d %s", method, path, resp.StatusCode, raw)
	}
	if out == nil {
		return nil
	}
	return json.Unmarshal(raw, out)
}

// hydraEnvKeep are the variables of the caller's environment Hydra gets;
// any other could configure it (it reads every setting from a variable of
// the setting's name: DSN, LOG_LEVEL, SERVE_*, ...).
func hydraEnvKeep(environ []string) []string {
	var env []string
	for _, kv := range environ {
		name, _, _ := strings.Cut(kv, "=")
		switch name {
		case "PATH", "HOME", "TMPDIR", "TZ":
			env = append(env, kv)
		}
	}
	return env
}
