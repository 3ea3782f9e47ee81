package main

import (
	"context"
	"flag"

	"github.com/peterbourgon/ff/v3/ffcli"

	registry "github.com/assetregistry/registry/sdk"
)

// actionsFindCommand is `registry actions find`: the action holding a
// source pair (source_system, source_reference), the sync key; with
// -create, the action of -data or -file is recorded when none holds it.
func (a *app) actionsFindCommand() *ffcli.Command {
	var system, reference, data, file string
	var create bool
	return a.leaf("actions find", "actions find -source-system S -source-reference R [-create -data JSON | -file PATH]",
		"the action holding this source pair (recorded with -create)", 0, 0,
		func(fs *flag.FlagSet) {
			fs.StringVar(&system, "source-system", "", "the system the action came from")
			fs.StringVar(&reference, "source-reference", "", "its reference in that system")
			fs.BoolVar(&create, "create", false, "record the action of -data or -file when none holds the pair")
			fs.StringVar(&data, "data", "", "with -create: the action as `actions create` takes it")
			fs.StringVar(&file, "file", "", "with -create: a file holding it (- for stdin)")
		},
		func(ctx context.Context, _ []string) error {
			var in registry.ActionInput
			switch {
			case create:
				if err := readInput(data, file, &in); err != nil {
					return err
				}
			case data != "" || file != "":
				return usageError{"registry actions find: -data and -file go with -create"}
			}
			if system != "" {
				in.SourceSystem = system
			}
			if reference != "" {
				in.SourceReference = reference
			}
			v, _, err := a.c.FindAction(ctx, in, create)
			if err != nil {
				return err
			}
			return a.print("actions", v)
		})
}
