package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"iter"
	"os"
	"strings"
	"text/tabwriter"

	"github.com/peterbourgon/ff/v3"
	"github.com/peterbourgon/ff/v3/ffcli"

	registry "github.com/assetregistry/registry/sdk"
)

type app struct {
	settings settings
	stdout   io.Writer
	stderr   io.Writer
	c        *registry.Client
}

func newApp(stdout, stderr io.Writer) *app { return &app{stdout: stdout, stderr: stderr} }

// leaf is a command with the shared settings, its own flags and at most
// maxArgs arguments (exactly minArgs at least).
func (a *app) leaf(name, usage, help string, minArgs, maxArgs int, own func(*flag.FlagSet), exec func(ctx context.Context, args []string) error) *ffcli.Command {
	return a.command(name, usage, help, minArgs, maxArgs, own, func(ctx context.Context, args []string) error {
		c, err := a.settings.client()
		if err != nil {
			return err
		}
		a.c = c
		return exec(ctx, args)
	})
}

// command is a leaf that makes no client itself (import -dry-run needs none).
func (a *app) command(name, usage, help string, minArgs, maxArgs int, own func(*flag.FlagSet), exec func(ctx context.Context, args []string) error) *ffcli.Command {
	fs := flag.NewFlagSet("registry "+name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	a.settings.register(fs)
	if own != nil {
		own(fs)
	}
	return &ffcli.Command{
		Name: name, ShortUsage: "registry " + usage, ShortHelp: help, FlagSet: fs,
		Options: []ff.Option{ff.WithEnvVars(), ff.WithConfigFileVia(&a.settings.envFile),
			ff.WithConfigFileParser(ff.EnvParser), ff.WithAllowMissingConfigFile(true), ff.WithIgnoreUndefined(true)},
		Exec: func(ctx context.Context, args []string) error {
			// Flags may follow the arguments too (export rows -format csv):
			// the flag package stops at the first argument, so go on after it.
			var positional []string
			for len(args) > 0 {
				if err := fs.Parse(args); err != nil {
					return usageError{"registry " + name + ": " + oneLine(err)}
				}
				if args = fs.Args(); len(args) > 0 {
					positional, args = append(positional, args[0]), args[1:]
				}
			}
			args = positional
			if len(args) < minArgs || len(args) > maxArgs {
				return usageError{fmt.Sprintf("usage: registry %s", usage)}
			}
			return exec(ctx, args)
		},
	}
}

func group(name, help string, subs ...*ffcli.Command) *ffcli.Command {
	return &ffcli.Command{Name: name, ShortUsage: "registry " + name + " <command>", ShortHelp: help, Subcommands: subs,
		FlagSet: quietFlags("registry " + name),
		Exec: func(context.Context, []string) error {
			return usageError{"registry " + name + ": give a command: " + names(subs)}
		}}
}

// quietFlags is a command's flag set that returns -h as flag.ErrHelp
// rather than printing and exiting: run prints the command's usage.
func quietFlags(name string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	return fs
}

func names(cmds []*ffcli.Command) string {
	var out []string
	for _, c := range cmds {
		out = append(out, c.Name)
	}
	return strings.Join(out, ", ")
}

// columns of the table output, per collection.
var columns = map[string][]string{
	"organizations":    {"id", "name", "registration_number", "organization_type", "country"},
	"people":           {"id", "first_name", "last_name", "date_of_birth"},
	"asset_types":      {"id", "brand", "model", "version"},
	"assets":           {"id", "serial_number", "asset_type_id", "production_year", "status", "owner_organization_id"},
	"grants":           {"organization_id", "role", "created_at", "created_by"},
	"transfers":        {"id", "asset_id", "from_organization_id", "to_organization_id", "state", "updated_at"},
	"owners":           {"changed", "unchanged"},
	"actions":          {"id", "asset_id", "action_type", "performed_at", "status_ok", "status_finalized"},
	"documents":        {"id", "document_type", "filename", "content_type", "size"},
	"action_documents": {"id", "action_id", "document_id", "source_system", "source_reference"},
	"links":            {"person_id", "organization_id", "relation_type", "created_at"},
	"events":           {"time", "type", "subject", "actor"},
	"plans":            {"id", "action_type", "asset_type_id", "interval", "first_due_after", "due_soon"},
	"presets":          {"name", "action_type", "interval", "first_due_after", "due_soon"},
	"compliance":       {"asset_id", "action_type", "state", "due_date", "last_performed_at", "last_action_id"},
	"webhooks":         {"id", "url", "types", "description"},
	"deliveries":       {"id", "event_id", "status", "attempts", "last_status_code", "next_attempt_at"},
	"meter_readings":   {"id", "meter", "value", "read_at", "reset"},
	"action_types":     {"name", "description", "created_by"},
}

// print writes one value (or a list) as JSON or as a table.
func (a *app) print(collection string, v any) error {
	if a.settings.output == "json" {
		enc := json.NewEncoder(a.stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(v)
	}
	raw, err := json.Marshal(v)
	if err != nil {
		return err
	}
	var rows []map[string]any
	if json.Unmarshal(raw, &rows) != nil {
		var one map[string]any
		if err := json.Unmarshal(raw, &one); err != nil {
			return err
		}
		rows = []map[string]any{one}
	}
	cols := columns[collection]
	tw := tabwriter.NewWriter(a.stdout, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, strings.ToUpper(strings.Join(cols, "\t")))
	for _, r := range rows {
		cells := make([]string, len(cols))
		for i, col := range cols {
			cells[i] = cell(r[col])
		}
		fmt.Fprintln(tw, strings.Join(cells, "\t"))
	}
	return tw.Flush()
}

func cell(v any) string {
	switch v := v.(type) {
	case nil:
		return "-"
	case string:
		return v
	case map[string]any, []any:
		raw, _ := json.Marshal(v)
		return string(raw)
	}
	return fmt.Sprint(v)
}

// collect drains a list iterator, up to limit items (0: all).
func collect[T any](seq iter.Seq2[T, error], limit int) ([]T, error) {
	out := []T{}
	for v, err := range seq {
		if err != nil {
			return nil, err
		}
		out = append(out, v)
		if limit > 0 && len(out) >= limit {
			break
		}
	}
	return out, nil
}

// filters is a repeatable -filter key=value flag.
type filters registry.Filter

func (f filters) String() string { return "" }
func (f filters) Set(s string) error {
	k, v, ok := strings.Cut(s, "=")
	if !ok || k == "" {
		return fmt.Errorf("-filter %q: want field=value", s)
	}
	f[k] = v
	return nil
}

// readInput decodes the body of a create or update: -data JSON, or -file
// (a path, or - for stdin), into v; unknown members are refused here.
func readInput(data, file string, v any) error {
	var raw []byte
	switch {
	case data != "" && file != "":
		return usageError{"give -data or -file, not both"}
	case data != "":
		raw = []byte(data)
	case file == "-":
		b, err := io.ReadAll(os.Stdin)
		if err != nil {
			return err
		}
		raw = b
	case file != "":
		b, err := os.ReadFile(file)
		if err != nil {
			return usageError{"-file: " + oneLine(err)}
		}
		raw = b
	default:
		return usageError{"give the body as -data '{...}' or -file PATH"}
	}
	dec := json.NewDecoder(strings.NewReader(string(raw)))
	if _, isPatch := v.(*registry.Patch); !isPatch {
		dec.DisallowUnknownFields()
	}
	if err := dec.Decode(v); err != nil {
		return usageError{"the body: " + oneLine(err)}
	}
	return nil
}

// resource builds list, get, create, update, delete for one collection.
func resource[T any, In any](a *app, name, help string,
	list func(context.Context, registry.Filter) iter.Seq2[T, error],
	get func(context.Context, string) (*T, error),
	create func(context.Context, In, ...registry.CallOption) (*T, error),
	update func(context.Context, string, registry.Patch, ...registry.CallOption) (*T, error),
	del func(context.Context, string, ...registry.CallOption) error,
	extra ...*ffcli.Command,
) *ffcli.Command {
	var limit int
	f := filters{}
	var data, file, ifMatch, key string
	var asOf asOfFlag
	body := func(fs *flag.FlagSet) {
		fs.StringVar(&data, "data", "", "the JSON body")
		fs.StringVar(&file, "file", "", "a file holding the JSON body (- for stdin)")
	}
	cmds := []*ffcli.Command{
		a.leaf(name+" list", name+" list [-filter field=value ...] [-limit N]", "list "+name+" in creation order", 0, 0,
			func(fs *flag.FlagSet) {
				fs.Var(f, "filter", "field=value, repeatable")
				fs.IntVar(&limit, "limit", 0, "at most this many (0: all)")
			},
			func(ctx context.Context, _ []string) error {
				items, err := collect(list(ctx, registry.Filter(f)), limit)
				if err != nil {
					return err
				}
				return a.print(name, items)
			}),
		a.leaf(name+" get", name+" get ID [-as-of T]", "one of the "+name, 1, 1,
			func(fs *flag.FlagSet) { asOf.register(name, fs) },
			func(ctx context.Context, args []string) error {
				v, err := asOf.get(ctx, a.c, name, args[0], func() (any, error) { return get(ctx, args[0]) })
				if err != nil {
					return err
				}
				return a.print(name, v)
			}),
	}
	if create != nil {
		cmds = append(cmds, a.leaf(name+" create", name+" create -data JSON | -file PATH", "create one", 0, 0,
			func(fs *flag.FlagSet) {
				body(fs)
				fs.StringVar(&key, "idempotency-key", "", "makes a repeated create replay the first")
			},
			func(ctx context.Context, _ []string) error {
				var in In
				if err := readInput(data, file, &in); err != nil {
					return err
				}
				var opts []registry.CallOption
				if key != "" {
					opts = append(opts, registry.IdempotencyKey(key))
				}
				v, err := create(ctx, in, opts...)
				if err != nil {
					return err
				}
				return a.print(name, v)
			}))
	}
	if update != nil {
		cmds = append(cmds, a.leaf(name+" update", name+" update ID -data JSON | -file PATH", "change one (JSON merge patch; null removes)", 1, 1,
			func(fs *flag.FlagSet) {
				body(fs)
				fs.StringVar(&ifMatch, "if-match", "", "only if its ETag is still this (default: the ETag read just before)")
			},
			func(ctx context.Context, args []string) error {
				var p registry.Patch
				if err := readInput(data, file, &p); err != nil {
					return err
				}
				etag := ifMatch
				if etag == "" {
					current, err := get(ctx, args[0])
					if err != nil {
						return err
					}
					etag = etagOf(current)
				}
				v, err := update(ctx, args[0], p, registry.IfMatch(etag))
				if err != nil {
					return err
				}
				return a.print(name, v)
			}))
	}
	if del != nil {
		cmds = append(cmds, a.leaf(name+" delete", name+" delete ID", "delete one", 1, 1,
			func(fs *flag.FlagSet) { fs.StringVar(&ifMatch, "if-match", "", "only if its ETag is still this") },
			func(ctx context.Context, args []string) error {
				var opts []registry.CallOption
				if ifMatch != "" {
					opts = append(opts, registry.IfMatch(ifMatch))
				}
				return del(ctx, args[0], opts...)
			}))
	}
	cmds = append(cmds, extra...)
	for _, c := range cmds {
		c.Name = strings.TrimPrefix(c.Name, name+" ")
	}
	return group(name, help, cmds...)
}

func etagOf(v any) string {
	if e, ok := v.(interface{ GetETag() string }); ok {
		return e.GetETag()
	}
	return ""
}
