// Command registry calls the Asset Registry from a shell: every operation,
// bulk import of the recording flow from CSV or NDJSON, export of any
// collection, and the change feed.
//
//	go install github.com/assetregistry/registry/sdk/cmd/registry@latest
//	registry organizations list --output table
//	registry import inspections.csv
//
// Settings come from flags, then the environment (REGISTRY_URL, AUTH_URL,
// RESOURCE, CLIENT_ID, CLIENT_SECRET), then the env file `make run` writes
// (.local/registry.env, or -env-file).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"os/signal"
	"runtime/debug"
	"slices"
	"strings"
	"syscall"

	"github.com/peterbourgon/ff/v3"
	"github.com/peterbourgon/ff/v3/ffcli"

	registry "github.com/assetregistry/registry/sdk"
)

// exit statuses: 0 all done, 1 some rows or the call failed, 2 bad usage
// or settings.
const (
	exitFailed = 1
	exitUsage  = 2
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	// A long import holds little live memory, but the collector lets the
	// heap double between cycles; a soft limit keeps the resident set
	// small (GOMEMLIMIT overrides it).
	if os.Getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(48 << 20)
	}
	stopProfiles := startProfiles()
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	stopProfiles()
	if code != 0 {
		os.Exit(code)
	}
}

// settings are the flags every command shares.
type settings struct {
	registryURL, authURL, resource, clientID, clientSecret string
	envFile                                                string
	output                                                 string
	attempts                                               int
}

func (s *settings) register(fs *flag.FlagSet) {
	fs.StringVar(&s.registryURL, "registry-url", "", "the registry's base address (REGISTRY_URL)")
	fs.StringVar(&s.authURL, "auth-url", "", "the identity provider's address (AUTH_URL)")
	fs.StringVar(&s.resource, "resource", "", "the token's resource (RESOURCE; default: the registry URL)")
	fs.StringVar(&s.clientID, "client-id", "", "machine client id (CLIENT_ID)")
	fs.StringVar(&s.clientSecret, "client-secret", "", "machine client secret (CLIENT_SECRET)")
	fs.StringVar(&s.envFile, "env-file", ".local/registry.env", "KEY=value file read for settings not given otherwise")
	fs.StringVar(&s.output, "output", "json", "json or table")
	fs.IntVar(&s.attempts, "attempts", 8, "tries of each call, the first included, while the registry is unreachable or busy (ATTEMPTS; 1: no retry)")
}

// parse reads flags, environment and env file, in that order of precedence.
func (s *settings) parse(fs *flag.FlagSet, args []string) error {
	return ff.Parse(fs, args, ff.WithEnvVars(), ff.WithConfigFileVia(&s.envFile),
		ff.WithConfigFileParser(ff.EnvParser), ff.WithAllowMissingConfigFile(true), ff.WithIgnoreUndefined(true))
}

func (s *settings) client() (*registry.Client, error) {
	if s.output != "json" && s.output != "table" {
		return nil, usageError{fmt.Sprintf("-output %q: must be json or table", s.output)}
	}
	if s.attempts < 1 {
		return nil, usageError{fmt.Sprintf("-attempts %d: must be at least 1", s.attempts)}
	}
	c, err := registry.New(registry.Config{URL: s.registryURL, AuthURL: s.authURL, Resource: s.resource,
		ClientID: s.clientID, ClientSecret: s.clientSecret, UserAgent: "registry-cli", MaxAttempts: s.attempts})
	if err != nil {
		return nil, usageError{strings.TrimPrefix(err.Error(), "registry: ") + "; set it by flag, environment or -env-file"}
	}
	return c, nil
}

type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

func run(ctx context.Context, args []string, stdout, stderr *os.File) int {
	app := newApp(stdout, stderr)
	root := app.commands()
	if err := root.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			// -h or --help: the usage and flags of the command asked about,
			// at whatever level (its own flag set writes nowhere).
			fmt.Fprintln(stdout, ffcli.DefaultUsageFunc(chosen(root, args)))
			return 0
		}
		fmt.Fprintln(stderr, "registry:", oneLine(err))
		return exitUsage
	}
	err := root.Run(ctx)
	switch {
	case err == nil:
		return 0
	case errors.Is(err, flag.ErrHelp):
		fmt.Fprintln(stderr, ffcli.DefaultUsageFunc(root))
		return exitUsage
	case errors.As(err, new(usageError)):
		fmt.Fprintln(stderr, "registry:", oneLine(err))
		return exitUsage
	case errors.Is(err, errRowsFailed):
		return exitFailed
	default:
		fmt.Fprintln(stderr, "registry:", describe(err, app.settings.registryURL, app.settings.authURL))
		return exitFailed
	}
}

// chosen is the command args name: the deepest subcommand their leading
// words select (flags skipped).
func chosen(c *ffcli.Command, args []string) *ffcli.Command {
	for _, a := range args {
		if strings.HasPrefix(a, "-") {
			continue
		}
		i := slices.IndexFunc(c.Subcommands, func(s *ffcli.Command) bool { return s.Name == a })
		if i < 0 {
			break
		}
		c = c.Subcommands[i]
	}
	return c
}

// describe turns an error into the one line a person needs: which setting
// is wrong or which service cannot be reached.
func describe(err error, registryURL, authURL string) string {
	var auth *registry.AuthError
	var p *registry.Problem
	var op *net.OpError
	switch {
	case errors.As(err, &auth) && auth.Code == "invalid_client":
		return "the identity provider refused CLIENT_ID/CLIENT_SECRET (invalid_client): check the client id and secret"
	case errors.As(err, &auth) && auth.Code == "invalid_target":
		return "the identity provider refused RESOURCE (invalid_target): the client may not use that registry"
	case errors.As(err, &auth):
		return "cannot get a token from AUTH_URL " + authURL + ": " + oneLine(auth.Err)
	case errors.As(err, &p):
		return oneLine(p)
	case errors.As(err, &op):
		return "cannot reach the registry at REGISTRY_URL " + registryURL + ": " + oneLine(op.Err)
	case errors.Is(err, context.Canceled):
		return "stopped"
	}
	return oneLine(err)
}

func oneLine(err error) string {
	if err == nil {
		return ""
	}
	s := strings.TrimPrefix(err.Error(), "registry: ")
	return strings.Join(strings.Fields(s), " ")
}
