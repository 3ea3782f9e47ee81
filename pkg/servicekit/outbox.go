package servicekit

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"

	"github.com/assetregistry/registry/pkg/outbox"
)

// withOutboxCommands adds, for a service that publishes change events, the
// commands an operator uses for the events its relay set aside because
// NATS refuses them (pkg/outbox, setaside.go; docs/operations.md): list
// them, and return them to the relay once the cause is mended.
func withOutboxCommands(commands map[string]Command) map[string]Command {
	if commands == nil {
		commands = map[string]Command{}
	}
	var limit int
	commands["outbox-set-aside"] = Command{
		DatabaseOnly: true,
		Summary:      "list the change events set aside because NATS refuses them, oldest first, one JSON object a line, then exit",
		Flags: func(fs *flag.FlagSet) {
			fs.IntVar(&limit, "set-aside.limit", 1000, "list at most this many")
		},
		Run: func(ctx context.Context, d Deps) error {
			events, err := outbox.SetAside(ctx, d.Store.Pool.Pool, limit)
			if err != nil {
				return err
			}
			out := json.NewEncoder(os.Stdout)
			for _, e := range events {
				if err := out.Encode(e); err != nil {
					return err
				}
			}
			return nil
		},
	}
	var subject string
	commands["outbox-replay"] = Command{
		DatabaseOnly: true,
		Summary:      "return set-aside change events to the relay, which publishes them in order (every one, or -set-aside.subject's), then exit",
		Flags: func(fs *flag.FlagSet) {
			fs.StringVar(&subject, "set-aside.subject", "", `replay only the events of this subject, "<kind>.<id>" (default: every set-aside event)`)
		},
		Run: func(ctx context.Context, d Deps) error {
			n, err := outbox.Replay(ctx, d.Store.Pool.Pool, subject)
			if err != nil {
				return err
			}
			fmt.Fprintf(os.Stdout, "%d set-aside events returned to the relay; any NATS still refuses are set aside again (outbox-set-aside lists them)\n", n)
			return nil
		},
	}
	return commands
}
