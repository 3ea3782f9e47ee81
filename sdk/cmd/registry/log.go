package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	iofs "io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

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
				case errors.Is(err, iofs.ErrNotExist):
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

func (a *app) passportCommand() *ffcli.Command {
	var out, files string
	return a.leaf("passport", "passport ASSET_ID -o FILE [-files DIR]",
		"the asset's passport: its record with the log's proofs, to check offline with registry verify; -files also downloads the documents' files into DIR", 1, 1,
		func(fs *flag.FlagSet) {
			fs.StringVar(&out, "o", "", "the file to write (required)")
			fs.StringVar(&files, "files", "", "a directory to download the documents' files into, named by document id")
		},
		func(ctx context.Context, args []string) error {
			if out == "" {
				return usageError{"registry passport: -o FILE is required"}
			}
			var bundle bytes.Buffer
			if err := a.c.AssetPassport(ctx, args[0], &bundle); err != nil {
				return err
			}
			if err := os.WriteFile(out, bundle.Bytes(), 0o644); err != nil {
				return err
			}
			var p registry.Passport
			if err := json.Unmarshal(bundle.Bytes(), &p); err != nil {
				return fmt.Errorf("registry: the passport: %w", err)
			}
			downloaded := 0
			if files != "" {
				if err := os.MkdirAll(files, 0o755); err != nil {
					return err
				}
				for _, d := range p.Documents {
					if d.Deleted {
						continue
					}
					if err := a.downloadTo(ctx, d.ID, filepath.Join(files, d.ID)); err != nil {
						return err
					}
					downloaded++
				}
			}
			_, err := fmt.Fprintf(a.stdout, "wrote %s: asset %s, %d actions, %d documents (%d files downloaded), %d events\n",
				out, p.AssetID, len(p.Actions), len(p.Documents), downloaded, len(p.Events))
			return err
		})
}

// downloadTo writes a document's bytes to file.
func (a *app) downloadTo(ctx context.Context, id, file string) error {
	f, err := os.Create(file)
	if err != nil {
		return err
	}
	if _, err := a.c.DownloadDocument(ctx, id, f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func (a *app) verifyCommand() *ffcli.Command {
	var key, files, witnesses string
	check := func(ctx context.Context, args []string, keys []string) (err error) {
		var bundle []byte
		if strings.HasPrefix(args[0], "https://") || strings.HasPrefix(args[0], "http://") {
			// A passport link: fetched without a token, as a stranger would.
			var b bytes.Buffer
			if err := registry.FetchPassport(ctx, args[0], &b); err != nil {
				return err
			}
			bundle = b.Bytes()
		} else if bundle, err = os.ReadFile(args[0]); err != nil {
			return err
		}
		var dir iofs.FS
		if files != "" {
			dir = os.DirFS(files)
		}
		r, err := registry.VerifyPassport(bundle, keys, dir)
		if err != nil {
			return err
		}
		fmt.Fprintf(a.stdout, "verified: %d events proved against checkpoint %d of %s\n", r.Events, r.Checkpoint.TreeSize, r.Checkpoint.Origin)
		for _, w := range strings.Split(witnesses, ",") {
			if w = strings.TrimSpace(w); w == "" {
				continue
			}
			at, err := registry.VerifyCosignature(r.Checkpoint.Note, w)
			if err != nil {
				return err
			}
			name, _, _ := strings.Cut(w, "+")
			fmt.Fprintf(a.stdout, "cosigned: witness %s signed the checkpoint at %s\n", name, at.Format(time.RFC3339))
		}
		if r.CompleteFrom == 0 {
			fmt.Fprintf(a.stdout, "complete: no event of the asset's record up to the checkpoint is left out\n")
		} else {
			fmt.Fprintf(a.stdout, "complete from leaf %d: no event of the asset's record from there to the checkpoint is left out (the record began before the registry chained it)\n", r.CompleteFrom)
		}
		if files != "" {
			fmt.Fprintf(a.stdout, "files: %d match their SHA-256, %d not given\n", len(r.Files), len(r.Missing))
		}
		printInformational(a.stdout, r.Informational)
		return nil
	}
	offline := a.command("verify", "verify FILE|LINK_URL [-key KEY] [-files DIR] [-witness KEY]",
		"check a passport offline: the checkpoint's signature, every event's proof, that no event of the asset's record is left out, every record against its events, the files' SHA-256; a passport link's URL is fetched first (no token); without -key, with the keys the configured registry publishes", 1, 1,
		func(fs *flag.FlagSet) {
			fs.StringVar(&key, "key", "", "the log's public key (<origin>+<hash>+<key>); with it nothing is asked of the registry")
			fs.StringVar(&files, "files", "", "a directory of the documents' files, named by document id")
			fs.StringVar(&witnesses, "witness", "", "a witness's cosignature key (<name>+<hash>+<key>, type 0x04; several comma-separated): the passport's checkpoint must carry a valid cosignature of each")
		},
		func(ctx context.Context, args []string) error {
			if key != "" {
				return check(ctx, args, []string{key})
			}
			c, err := a.settings.client()
			if err != nil {
				return err
			}
			a.c = c
			keys, err := a.logKey(ctx, "")
			if err != nil {
				return err
			}
			return check(ctx, args, keys)
		})
	return offline
}

// printInformational prints a passport's unproved part, each line saying
// that the log does not prove it.
func printInformational(w io.Writer, info *registry.PassportInformational) {
	if info == nil {
		return
	}
	if c := info.Compliance; c != nil {
		var rows []string
		for _, r := range c.Rows {
			row := r.ActionType + " " + r.State
			if r.ValidThrough != nil {
				row += " through " + *r.ValidThrough
			}
			rows = append(rows, row)
		}
		fmt.Fprintf(w, "not proved: compliance as of %s (the actions service's answer): %s\n", c.AsOf, strings.Join(rows, ", "))
	}
	name := func(p *registry.PassportParty) string {
		if p.Name == nil {
			return p.ID + " (no name held)"
		}
		return *p.Name + " (" + p.ID + ")"
	}
	for _, p := range info.Performers {
		var by []string
		for _, party := range []*registry.PassportParty{p.Organization, p.Person} {
			if party != nil {
				by = append(by, name(party))
			}
		}
		if len(by) > 0 {
			fmt.Fprintf(w, "not proved: action %s performed by %s (the names the registry held)\n", p.ActionID, strings.Join(by, ", "))
		}
	}
}
