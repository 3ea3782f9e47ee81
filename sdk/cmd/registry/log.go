package main

import (
	"context"
	"crypto/rand"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"os"

	"github.com/peterbourgon/ff/v3/ffcli"
	"golang.org/x/mod/sumdb/note"

	registry "github.com/assetregistry/registry/sdk"
)

// The transparency log from a shell: make a signing key (for an
// operator), check the registry's latest checkpoint and that it is
// consistent with the one kept before.

func (a *app) logKeygenCommand() *ffcli.Command {
	return a.command("log-keygen", "log-keygen ORIGIN",
		"a new signing key for the log's checkpoints: the first line goes into the events service's Secret, the second is the public key to publish", 1, 1, nil,
		func(_ context.Context, args []string) error {
			signing, public, err := note.GenerateKey(rand.Reader, args[0])
			if err != nil {
				return fmt.Errorf("registry: %w", err)
			}
			_, err = fmt.Fprintf(a.stdout, "%s\n%s\n", signing, public)
			return err
		})
}

// logKey is the -key flag: the log's public key, else the one the
// configured registry publishes.
func (a *app) logKey(ctx context.Context, key string) ([]string, error) {
	if key != "" {
		return []string{key}, nil
	}
	keys, err := a.c.LogKeys(ctx)
	if err != nil {
		return nil, err
	}
	if len(keys.Keys) == 0 {
		return nil, errors.New("registry: the registry publishes no log key (no transparency.signing-key?)")
	}
	return keys.Keys, nil
}

func (a *app) checkpointCommand() *ffcli.Command {
	var key, keep string
	return a.leaf("checkpoint", "checkpoint [-key KEY] [-keep FILE]",
		"the log's latest signed checkpoint, verified; with -keep, also proved consistent with the one kept in FILE, which it then replaces", 0, 0,
		func(fs *flag.FlagSet) {
			fs.StringVar(&key, "key", "", "the log's public key (<origin>+<hash>+<key>); default: the ones the registry publishes")
			fs.StringVar(&keep, "keep", "", "a file holding the last checkpoint verified: the new one must be consistent with it")
		},
		func(ctx context.Context, _ []string) error {
			keys, err := a.logKey(ctx, key)
			if err != nil {
				return err
			}
			latest, err := a.c.LatestCheckpoint(ctx)
			if err != nil {
				return err
			}
			cp, err := registry.VerifyCheckpoint(latest.Note, keys...)
			if err != nil {
				return err
			}
			if keep != "" {
				kept, err := os.ReadFile(keep)
				switch {
				case errors.Is(err, fs.ErrNotExist):
				case err != nil:
					return err
				default:
					older, err := registry.VerifyCheckpoint(string(kept), keys...)
					if err != nil {
						return fmt.Errorf("the kept checkpoint: %w", err)
					}
					if older.TreeSize > cp.TreeSize {
						return fmt.Errorf("%w: the registry's checkpoint has %d leaves, fewer than the %d of the one kept", registry.ErrUnverified, cp.TreeSize, older.TreeSize)
					}
					p, err := a.c.Consistency(ctx, older.TreeSize, cp.TreeSize)
					if err != nil {
						return err
					}
					if err := registry.VerifyConsistency(older, cp, *p); err != nil {
						return err
					}
				}
				if err := os.WriteFile(keep, []byte(cp.Note), 0o644); err != nil {
					return err
				}
			}
			_, err = fmt.Fprintf(a.stdout, "verified: log %s, %d leaves, root %x\n", cp.Origin, cp.TreeSize, cp.RootHash)
			return err
		})
}
