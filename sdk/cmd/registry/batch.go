package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"hash"
	"io"
	"os"
	"strconv"

	"github.com/peterbourgon/ff/v3/ffcli"

	registry "github.com/assetregistry/registry/sdk"
)

// batchCommand is `registry batch assets|actions FILE.ndjson`: each line
// of the file one item as `assets create` or `actions create` takes it
// (with -patch, an update: {"id", "if_match", "patch"}), sent in batches of up to registry.MaxBatch items (and maxBatchBytes of
// JSON). Each batch carries an Idempotency-Key made of its lines' numbers
// and content, so the same file sent again (after a crash, a lost answer)
// replays the answers instead of writing twice (updates carry none: an
// item's if_match makes it safe to send again). One outcome per line goes
// to stdout as a JSON line; a line that failed (the registry refused it,
// or it is not an item) makes the exit status 1.
func (a *app) batchCommand() *ffcli.Command {
	var find, patch bool
	var keyBase string
	return a.leaf("batch", "batch assets|actions FILE.ndjson [-find | -patch] [-idempotency-key K]",
		"send the items of a JSON-lines file in batches; one outcome per line", 2, 2,
		func(fs *flag.FlagSet) {
			fs.BoolVar(&find, "find", false, "actions: find each action by its source pair before recording it")
			fs.BoolVar(&patch, "patch", false, `update: each line {"id", "if_match" (optional), "patch"}, applied as a PATCH of that id`)
			fs.StringVar(&keyBase, "idempotency-key", "", "the start of every batch's Idempotency-Key (default: the collection's; not with -patch)")
		},
		func(ctx context.Context, args []string) error {
			if patch && (find || keyBase != "") {
				return usageError{"registry batch: -patch takes neither -find nor -idempotency-key (each item's if_match makes it safe to send again)"}
			}
			if keyBase == "" && !patch {
				keyBase = "batch-" + args[0] + "-" + strconv.FormatBool(find) + "-"
			}
			var run func(context.Context, io.Reader, *batchCounts) error
			switch {
			case args[0] == "assets" && patch:
				run = (&batcher[registry.PatchItem]{w: json.NewEncoder(a.stdout), send: a.c.UpdateAssets, updates: true}).run
			case args[0] == "actions" && patch:
				run = (&batcher[registry.PatchItem]{w: json.NewEncoder(a.stdout), send: a.c.UpdateActions, updates: true}).run
			case args[0] == "assets" && !find:
				run = (&batcher[registry.AssetInput]{w: json.NewEncoder(a.stdout), send: a.c.CreateAssets, keyBase: keyBase}).run
			case args[0] == "actions" && find:
				run = (&batcher[registry.ActionInput]{w: json.NewEncoder(a.stdout), send: a.c.FindOrCreateActions, keyBase: keyBase}).run
			case args[0] == "actions":
				run = (&batcher[registry.ActionInput]{w: json.NewEncoder(a.stdout), send: a.c.CreateActions, keyBase: keyBase}).run
			case args[0] == "assets":
				return usageError{"registry batch: -find is for actions"}
			default:
				return usageError{"registry batch: " + strconv.Quote(args[0]) + ": want assets or actions"}
			}
			f, err := os.Open(args[1])
			if err != nil {
				return usageError{"registry batch: " + oneLine(err)}
			}
			defer f.Close()
			var n batchCounts
			if err := run(ctx, f, &n); err != nil {
				return err
			}
			if patch {
				fmt.Fprintf(a.stderr, "registry batch: %d items: %d updated, %d failed\n", n.items, n.found, n.failed)
			} else {
				fmt.Fprintf(a.stderr, "registry batch: %d items: %d written, %d found, %d failed\n", n.items, n.written, n.found, n.failed)
			}
			if n.failed > 0 {
				return errRowsFailed
			}
			return nil
		})
}

// batchOutcome is one line's outcome: the registry's result for it, or
// why it was not sent (Error, Status 0).
type batchOutcome struct {
	Line int `json:"line"`
	registry.BatchResult
	Error string `json:"error,omitempty"`
}

type batchCounts struct{ items, written, found, failed int }

// batcher sends the items of a file, one batch at a time.
type batcher[In any] struct {
	w       *json.Encoder
	send    func(context.Context, []In, ...registry.CallOption) ([]registry.BatchResult, error)
	keyBase string
	updates bool // a batch of updates: no Idempotency-Key; 200 is an item updated

	items []In
	lines []int     // of items
	size  int       // of items' JSON
	hash  hash.Hash // of items' line numbers and content
}

func (b *batcher[In]) run(ctx context.Context, r io.Reader, n *batchCounts) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), maxBatchBytes)
	b.hash = sha256.New()
	line := 0
	for sc.Scan() {
		line++
		raw := bytes.TrimSpace(sc.Bytes())
		if len(raw) == 0 {
			continue
		}
		n.items++
		var item In
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&item); err != nil || dec.More() || raw[0] != '{' {
			n.failed++
			msg := "not one JSON object"
			if err != nil {
				msg = err.Error()
			}
			if err := b.w.Encode(batchOutcome{Line: line, Error: msg}); err != nil {
				return err
			}
			continue
		}
		if len(b.items) > 0 && (len(b.items) == registry.MaxBatch || b.size+len(raw)+1 > maxBatchBytes) {
			if err := b.flush(ctx, n); err != nil {
				return err
			}
		}
		b.items = append(b.items, item)
		b.lines = append(b.lines, line)
		b.size += len(raw) + 1
		fmt.Fprintf(b.hash, "%d:%d:", line, len(raw))
		b.hash.Write(raw)
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return usageError{fmt.Sprintf("registry batch: line %d is longer than %d bytes", line+1, maxBatchBytes)}
		}
		return err
	}
	return b.flush(ctx, n)
}

// flush sends the pending items as one batch.
func (b *batcher[In]) flush(ctx context.Context, n *batchCounts) error {
	if len(b.items) == 0 {
		return nil
	}
	var opts []registry.CallOption
	if !b.updates {
		opts = append(opts, registry.IdempotencyKey(b.keyBase+strconv.Itoa(b.lines[0])+"-"+hex.EncodeToString(b.hash.Sum(nil)[:12])))
	}
	results, err := b.send(ctx, b.items, opts...)
	if err != nil {
		return fmt.Errorf("the batch from line %d: %w", b.lines[0], err)
	}
	for i, res := range results {
		switch {
		case res.Problem != nil:
			n.failed++
		case res.Status == 200:
			n.found++
		default:
			n.written++
		}
		if err := b.w.Encode(batchOutcome{Line: b.lines[i], BatchResult: res}); err != nil {
			return err
		}
	}
	b.items, b.lines, b.size = b.items[:0], b.lines[:0], 0
	b.hash.Reset()
	return nil
}
