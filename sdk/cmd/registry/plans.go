package main

import (
	"context"
	"flag"
	"fmt"
	"strings"

	"github.com/peterbourgon/ff/v3/ffcli"

	registry "github.com/assetregistry/registry/sdk"
)

// plansCommand is `registry plans`: inspection plans (list, get, create,
// update, delete; presets, load). Writing one needs registry:admin.
func (a *app) plansCommand() *ffcli.Command {
	c := func() *registry.Client { return a.c }
	var assetType, asset string
	return resource(a, "plans", "inspection plans: list, get, create, update, delete, presets, load (writes need registry:admin)",
		func(ctx context.Context, f registry.Filter) iterPlan { return c().ListInspectionPlans(ctx, f) },
		func(ctx context.Context, id string) (*registry.InspectionPlan, error) {
			return c().GetInspectionPlan(ctx, id)
		},
		func(ctx context.Context, in registry.InspectionPlanInput, o ...registry.CallOption) (*registry.InspectionPlan, error) {
			return c().CreateInspectionPlan(ctx, in, o...)
		},
		func(ctx context.Context, id string, p registry.Patch, o ...registry.CallOption) (*registry.InspectionPlan, error) {
			return c().UpdateInspectionPlan(ctx, id, p, o...)
		},
		func(ctx context.Context, id string, o ...registry.CallOption) error {
			return c().DeleteInspectionPlan(ctx, id, o...)
		},
		a.leaf("plans presets", "plans presets", "the plans an operator can load: examples of common regimes, not law", 0, 0, nil,
			func(ctx context.Context, _ []string) error {
				ps, err := c().InspectionPlanPresets(ctx)
				if err != nil {
					return err
				}
				return a.print("presets", ps)
			}),
		a.leaf("plans load", "plans load PRESET [-asset-type ID] [-asset ID]", "create a plan from a preset, for one asset, an asset type or every asset type", 1, 1,
			func(fs *flag.FlagSet) {
				fs.StringVar(&assetType, "asset-type", "", "the asset type's id (default: every asset type)")
				fs.StringVar(&asset, "asset", "", "one asset's id: its own plan, which wins over its type's")
			},
			func(ctx context.Context, args []string) error {
				ps, err := c().InspectionPlanPresets(ctx)
				if err != nil {
					return err
				}
				var names []string
				for _, p := range ps {
					if p.Name == args[0] {
						in := p.Input(assetType)
						in.AssetID = asset
						plan, err := c().CreateInspectionPlan(ctx, in)
						if err != nil {
							return err
						}
						return a.print("plans", plan)
					}
					names = append(names, p.Name)
				}
				return usageError{fmt.Sprintf("registry plans load: no preset %q; presets: %s", args[0], strings.Join(names, ", "))}
			}),
	)
}

// complianceCommand is `registry compliance`: what is due, with the
// filters of GET /compliance.
func (a *app) complianceCommand() *ffcli.Command {
	var q registry.ComplianceQuery
	var limit int
	return a.leaf("compliance", "compliance [-asset ID] [-asset-type ID] [-action-type T ...] [-state S ...] [-due-before D] [-as-of D] [-components] [-limit N] [-output table]",
		"what is due, per asset and action type, in asset creation order", 0, 0,
		func(fs *flag.FlagSet) {
			fs.StringVar(&q.AssetID, "asset", "", "only this asset's rows")
			fs.StringVar(&q.AssetTypeID, "asset-type", "", "only the rows of assets of this type")
			fs.Var((*repeated)(&q.ActionTypes), "action-type", "expert_control, maintenance, pre_use_inspection or repair; repeatable")
			fs.Var((*repeated)(&q.States), "state", "never, failed, open_ended, overdue, due or valid; repeatable")
			fs.StringVar(&q.DueBefore, "due-before", "", "YYYY-MM-DD: what falls due before it is due (default: today + the plan's due_soon, or 30 days)")
			fs.StringVar(&q.AsOf, "as-of", "", "YYYY-MM-DD: the rows as the registry knew them at the end of that day (UTC), their states on that day")
			fs.BoolVar(&q.Components, "components", false, "also each row's rolled_up_state: the worst of its state and its components' (include=components)")
			fs.IntVar(&limit, "limit", 0, "at most this many rows (0: all)")
		},
		func(ctx context.Context, _ []string) error {
			rows, err := collect(a.c.Compliance(ctx, q), limit)
			if err != nil {
				return err
			}
			return a.print("compliance", rows)
		})
}

// repeated is a flag that may be given many times.
type repeated []string

func (r *repeated) String() string { return strings.Join(*r, ",") }
func (r *repeated) Set(s string) error {
	*r = append(*r, s)
	return nil
}
