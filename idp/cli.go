package idp

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/go-kit/log/level"

	"github.com/assetregistry/registry/pkg/process"
	"github.com/assetregistry/registry/pkg/store"
	"github.com/assetregistry/registry/pkg/telemetry"
)

const usage = `usage:
  idp [serve] [flags]      run the identity provider (idp serve -h lists the flags)
  idp migrate [flags]      apply the database migrations and exit
  idp client create --id ID --scopes registry:read,registry:write --resource URL [--resource URL ...] [--organization ORG_ID]
  idp client rotate --id ID [--window 24h]
  idp client scopes --id ID --scopes registry:read
  idp client bind --id ID --organization ORG_ID
  idp client unbind --id ID
  idp client list
  idp client delete --id ID

create and rotate print {"client_id", "client_secret"} as JSON; the secret is
shown only then. scopes sets the scopes the client holds and prints
{"client_id", "scopes", "tokens_revoked"}. bind makes the client belong to an
organization of the registry (its id, a UUID; the identity provider does not
check that it exists: name one that does), so that its tokens carry it in the
claim org; unbind makes it belong to none; both print {"client_id",
"organization_id", "tokens_revoked"}. Deleting a client, removing one of its
scopes, binding or unbinding it and the end of a rotation's window revoke the
tokens issued before: the gateway and the services refuse them within
seconds. Every command takes --database.url (env DATABASE_URL) and
--database.schema (env DATABASE_SCHEMA, default idp).
`

var errUsage = errors.New("usage")

// Main runs the idp command with args (without the program name) and
// returns the process exit code.
func Main(args []string, stdout, stderr io.Writer) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	err := run(ctx, args, stdout, stderr)
	switch {
	case err == nil, errors.Is(err, flag.ErrHelp):
		return 0
	case errors.Is(err, errUsage):
		fmt.Fprintf(stderr, "idp: %v\n\n%s", err, usage)
		return 2
	default:
		fmt.Fprintln(stderr, "idp:", err)
		return 1
	}
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	command := "serve"
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		command, args = args[0], args[1:]
	}
	switch command {
	case "serve", "migrate":
		return runServer(ctx, command, args, stdout, stderr)
	case "client":
		return runClient(ctx, args, stdout, stderr)
	case "help":
		fmt.Fprint(stdout, usage)
		return nil
	}
	return fmt.Errorf("%w: unknown command %q", errUsage, command)
}

func runServer(ctx context.Context, command string, args []string, stdout, stderr io.Writer) error {
	var cfg Config
	fs := flag.NewFlagSet("idp "+command, flag.ContinueOnError)
	fs.SetOutput(stderr)
	cfg.RegisterFlags(fs)
	if err := process.ParseFlags(fs, args); err != nil {
		return fmt.Errorf("%w: %w", errUsage, err)
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("%w: unexpected arguments %q", errUsage, fs.Args())
	}
	logger := telemetry.NewLogger(stdout, "idp", cfg.Log)
	if command == "serve" {
		return Serve(ctx, cfg, logger)
	}
	pool, err := store.OpenAndMigrate(ctx, cfg.Database, Migrations(), store.LogRetries(logger))
	if err != nil {
		return err
	}
	pool.Close()
	level.Info(logger).Log("msg", "migrations applied", "schema", cfg.Database.Schema)
	return nil
}

type credentials struct {
	ClientID     string `json:"client_id"`
	ClientSecret string `json:"client_secret"`
}

func runClient(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		return fmt.Errorf("%w: client needs a subcommand", errUsage)
	}
	sub, args := args[0], args[1:]
	var (
		db        store.Config
		id        string
		scopes    string
		resources []string
		window    time.Duration
		org       string
	)
	fs := flag.NewFlagSet("idp client "+sub, flag.ContinueOnError)
	fs.SetOutput(stderr)
	db.RegisterFlags(fs, "idp")
	switch sub {
	case "create":
		fs.StringVar(&scopes, "scopes", "", "comma-separated scopes the client may hold: registry:read, registry:write, registry:admin (changes and deletes what other clients created)")
		fs.Func("resource", "a resource (the registry's base address) the client may get tokens for; repeatable", func(v string) error {
			resources = append(resources, v)
			return nil
		})
		fs.StringVar(&org, "organization", "", "the id of the organization of the registry the client belongs to (its tokens carry it in the claim org); empty: none")
	case "rotate":
		fs.DurationVar(&window, "window", 24*time.Hour, "how long the replaced secret, and the tokens issued with it, keep working (0: they stop now)")
	case "scopes":
		fs.StringVar(&scopes, "scopes", "", "comma-separated scopes the client holds from now on; removing one revokes the client's tokens")
	case "bind":
		fs.StringVar(&org, "organization", "", "the id of an existing organization of the registry (a UUID) the client belongs to from now on (required); the client's earlier tokens are revoked")
	case "list", "delete", "unbind":
	default:
		return fmt.Errorf("%w: unknown client subcommand %q", errUsage, sub)
	}
	if sub != "list" {
		fs.StringVar(&id, "id", "", "client id: 3 to 64 of A-Z a-z 0-9 . _ - (required)")
	}
	if err := parseWithDatabaseEnv(fs, &db, args); err != nil {
		return fmt.Errorf("%w: %w", errUsage, err)
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("%w: unexpected arguments %q", errUsage, fs.Args())
	}
	if sub != "list" && id == "" {
		return fmt.Errorf("%w: --id is required", errUsage)
	}
	if sub == "bind" && org == "" {
		return fmt.Errorf("%w: --organization is required (unbind takes a client out of its organization)", errUsage)
	}

	logger := telemetry.NewLogger(stderr, "idp", telemetry.LogConfig{Level: "warn", Format: "logfmt"})
	pool, err := store.OpenAndMigrate(ctx, db, Migrations(), store.LogRetries(logger))
	if err != nil {
		return err
	}
	defer pool.Close()
	clients := NewClients(pool)
	switch sub {
	case "create":
		client := Client{ID: id, Scopes: splitList(scopes), Resources: resources}
		if org != "" {
			client.OrganizationID = &org
		}
		secret, err := clients.Register(ctx, client)
		if err != nil {
			return err
		}
		return printJSON(stdout, credentials{ClientID: id, ClientSecret: secret})
	case "rotate":
		secret, err := clients.RotateSecret(ctx, id, window)
		if err != nil {
			return err
		}
		return printJSON(stdout, credentials{ClientID: id, ClientSecret: secret})
	case "scopes":
		list := splitList(scopes)
		revoked, err := clients.SetScopes(ctx, id, list)
		if err != nil {
			return err
		}
		return printJSON(stdout, struct {
			ClientID      string   `json:"client_id"`
			Scopes        []string `json:"scopes"`
			TokensRevoked bool     `json:"tokens_revoked"`
		}{id, list, revoked})
	case "bind", "unbind":
		var bound *string
		if sub == "bind" {
			bound = &org
		}
		revoked, err := clients.Bind(ctx, id, bound)
		if err != nil {
			return err
		}
		if bound != nil {
			lower := strings.ToLower(org) // as stored, checked by Bind
			bound = &lower
		}
		return printJSON(stdout, struct {
			ClientID       string  `json:"client_id"`
			OrganizationID *string `json:"organization_id"`
			TokensRevoked  bool    `json:"tokens_revoked"`
		}{id, bound, revoked})
	case "list":
		list, err := clients.ListClients(ctx)
		if err != nil {
			return err
		}
		if list == nil {
			list = []Client{}
		}
		return printJSON(stdout, list)
	default:
		return clients.DeleteClient(ctx, id)
	}
}

// parseWithDatabaseEnv parses args into fs, where only the database
// settings fall back to the environment (DATABASE_URL, ...): a stray ID or
// WINDOW variable must not change what an admin command does. Both flag sets
// bind db, so the environment's values land first and the command line's
// override them.
func parseWithDatabaseEnv(fs *flag.FlagSet, db *store.Config, args []string) error {
	env := flag.NewFlagSet("environment", flag.ContinueOnError)
	env.SetOutput(io.Discard)
	db.RegisterFlags(env, "idp")
	if err := process.ParseFlags(env, nil); err != nil {
		return err
	}
	return fs.Parse(args)
}

func splitList(s string) []string {
	var out []string
	for _, v := range strings.Split(s, ",") {
		if v = strings.TrimSpace(v); v != "" {
			out = append(out, v)
		}
	}
	return out
}

func printJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}
