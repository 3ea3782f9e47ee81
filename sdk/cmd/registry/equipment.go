package main

import (
	"context"
	"flag"
	"strconv"
	"time"

	"github.com/peterbourgon/ff/v3/ffcli"

	registry "github.com/assetregistry/registry/sdk"
)

// metersCommand is `registry meters`: an asset's meter readings (add,
// list).
func (a *app) metersCommand() *ffcli.Command {
	var in registry.MeterReadingInput
	var readAt, meter string
	var limit int
	add := a.leaf("meters add", "meters add ASSET METER VALUE [-read-at T] [-reset]",
		"record what a meter of the asset showed (a meter counts up: a lower value needs -reset)", 3, 3,
		func(fs *flag.FlagSet) {
			fs.StringVar(&readAt, "read-at", "", "RFC 3339 time of the reading (default: now)")
			fs.BoolVar(&in.Reset, "reset", false, "the meter was reset (or replaced) before this reading")
		},
		func(ctx context.Context, args []string) error {
			value, err := strconv.ParseFloat(args[2], 64)
			if err != nil {
				return usageError{"registry meters add: VALUE must be a number, not " + strconv.Quote(args[2])}
			}
			in.Meter, in.Value, in.ReadAt = args[1], value, time.Now().UTC().Truncate(time.Second)
			if readAt != "" {
				if in.ReadAt, err = time.Parse(time.RFC3339Nano, readAt); err != nil {
					return usageError{"registry meters add: -read-at must be an RFC 3339 time such as 2025-03-14T09:26:53Z"}
				}
			}
			r, err := a.c.CreateMeterReading(ctx, args[0], in)
			if err != nil {
				return err
			}
			return a.print("meter_readings", r)
		})
	list := a.leaf("meters list", "meters list ASSET [-meter M] [-limit N]", "the asset's meter readings, oldest first", 1, 1,
		func(fs *flag.FlagSet) {
			fs.StringVar(&meter, "meter", "", "only this meter's readings")
			fs.IntVar(&limit, "limit", 0, "at most this many readings (0: all)")
		},
		func(ctx context.Context, args []string) error {
			rows, err := collect(a.c.ListMeterReadings(ctx, args[0], meter), limit)
			if err != nil {
				return err
			}
			return a.print("meter_readings", rows)
		})
	add.Name, list.Name = "add", "list"
	return group("meters", "an asset's meter readings: add, list", add, list)
}

// actionTypesCommand is `registry action-types`: list them, add one
// (registry:admin).
func (a *app) actionTypesCommand() *ffcli.Command {
	var description string
	list := a.leaf("action-types list", "action-types list", "the action types actions may name: the four and those an admin added", 0, 0, nil,
		func(ctx context.Context, _ []string) error {
			rows, err := collect(a.c.ListActionTypes(ctx), 0)
			if err != nil {
				return err
			}
			return a.print("action_types", rows)
		})
	add := a.leaf("action-types add", "action-types add NAME [-description TEXT]", "add an action type (needs registry:admin)", 1, 1,
		func(fs *flag.FlagSet) {
			fs.StringVar(&description, "description", "", "what the type is for")
		},
		func(ctx context.Context, args []string) error {
			t, err := a.c.CreateActionType(ctx, registry.ActionTypeInput{Name: args[0], Description: description})
			if err != nil {
				return err
			}
			return a.print("action_types", t)
		})
	list.Name, add.Name = "list", "add"
	return group("action-types", "action types: list, add (add needs registry:admin)", list, add)
}
