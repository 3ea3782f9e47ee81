package main

import (
	"context"
	"flag"
	"strings"

	"github.com/peterbourgon/ff/v3/ffcli"

	registry "github.com/assetregistry/registry/sdk"
)

// grantsCommand is `registry grants`: the organizations other than its
// owner that see an asset (read) or also record on it (inspect).
func (a *app) grantsCommand() *ffcli.Command {
	var role string
	return subgroup("grants", "an asset's grants to other organizations: list, add, remove",
		a.leaf("grants list", "grants list ASSET_ID", "the organizations holding a grant on the asset", 1, 1, nil,
			func(ctx context.Context, args []string) error {
				gs, err := a.c.ListGrants(ctx, args[0])
				if err != nil {
					return err
				}
				return a.print("grants", gs)
			}),
		a.leaf("grants add", "grants add ASSET_ID ORGANIZATION_ID [-role read|inspect]",
			"give the organization a role on the asset (again: replaces its role); the owner's clients or an admin", 2, 2,
			func(fs *flag.FlagSet) {
				fs.StringVar(&role, "role", registry.GrantRead, "read (see the asset and its record) or inspect (also record actions)")
			},
			func(ctx context.Context, args []string) error {
				g, err := a.c.PutGrant(ctx, args[0], registry.GrantInput{OrganizationID: args[1], Role: role})
				if err != nil {
					return err
				}
				return a.print("grants", g)
			}),
		a.leaf("grants remove", "grants remove ASSET_ID ORGANIZATION_ID", "remove the organization's grant on the asset", 2, 2, nil,
			func(ctx context.Context, args []string) error { return a.c.DeleteGrant(ctx, args[0], args[1]) }),
	)
}

// transfersCommand is `registry transfers`: an asset's handover from its
// owner organization to another, which accepts or rejects it.
func (a *app) transfersCommand() *ffcli.Command {
	var limit int
	f := filters{}
	// The client exists only once a leaf runs: each move names its
	// method on it then.
	move := func(name, help string, do func(*registry.Client, context.Context, string, ...registry.CallOption) (*registry.Transfer, error)) *ffcli.Command {
		return a.leaf("transfers "+name, "transfers "+name+" ID", help, 1, 1, nil,
			func(ctx context.Context, args []string) error {
				t, err := do(a.c, ctx, args[0])
				if err != nil {
					return err
				}
				return a.print("transfers", t)
			})
	}
	return subgroup("transfers", "handovers of assets between organizations: create, get, list, accept, reject, cancel",
		a.leaf("transfers create", "transfers create ASSET_ID TO_ORGANIZATION_ID", "offer the asset to another organization (the owner's clients or an admin)", 2, 2, nil,
			func(ctx context.Context, args []string) error {
				t, err := a.c.CreateTransfer(ctx, args[0], registry.TransferInput{ToOrganizationID: args[1]})
				if err != nil {
					return err
				}
				return a.print("transfers", t)
			}),
		a.leaf("transfers get", "transfers get ID", "one transfer", 1, 1, nil,
			func(ctx context.Context, args []string) error {
				t, err := a.c.GetTransfer(ctx, args[0])
				if err != nil {
					return err
				}
				return a.print("transfers", t)
			}),
		a.leaf("transfers list", "transfers list [-filter state=pending] [-filter asset_id=ID] [-limit N]", "the transfers your organization sends or receives", 0, 0,
			func(fs *flag.FlagSet) {
				fs.Var(f, "filter", "field=value, repeatable (state, asset_id)")
				fs.IntVar(&limit, "limit", 0, "at most this many (0: all)")
			},
			func(ctx context.Context, _ []string) error {
				ts, err := collect(a.c.ListTransfers(ctx, registry.Filter(f)), limit)
				if err != nil {
					return err
				}
				return a.print("transfers", ts)
			}),
		move("accept", "take the asset over (the receiving organization's clients or an admin)", (*registry.Client).AcceptTransfer),
		move("reject", "decline the transfer (the receiving organization's clients or an admin)", (*registry.Client).RejectTransfer),
		move("cancel", "withdraw the transfer (the sending organization's clients or an admin)", (*registry.Client).CancelTransfer),
	)
}

// setOwnerCommand is `registry assets set-owner`: an admin's change of the
// owner organization of assets.
func (a *app) setOwnerCommand() *ffcli.Command {
	var none bool
	return a.leaf("assets set-owner", "assets set-owner ORGANIZATION_ID ASSET_ID... | -none ASSET_ID...",
		"make the organization the owner of the assets (registry:admin); -none makes them shared", 1, 1001,
		func(fs *flag.FlagSet) {
			fs.BoolVar(&none, "none", false, "no owner: the assets become shared with every client")
		},
		func(ctx context.Context, args []string) error {
			in := registry.OwnersInput{AssetIDs: args}
			if !none {
				if len(args) < 2 {
					return usageError{"usage: registry assets set-owner ORGANIZATION_ID ASSET_ID..."}
				}
				in = registry.OwnersInput{OwnerOrganizationID: &args[0], AssetIDs: args[1:]}
			}
			r, err := a.c.SetAssetOwners(ctx, in)
			if err != nil {
				return err
			}
			return a.print("owners", r)
		})
}

// subgroup is group for leaves named with the group's name first (as
// resource names them, so a leaf's flag errors name its whole command).
func subgroup(name, help string, subs ...*ffcli.Command) *ffcli.Command {
	for _, c := range subs {
		c.Name = strings.TrimPrefix(c.Name, name+" ")
	}
	return group(name, help, subs...)
}
