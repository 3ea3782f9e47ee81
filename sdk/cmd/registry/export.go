package main

import (
	"bufio"
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"iter"
	"os"
	"reflect"
	"strconv"
	"strings"

	"github.com/peterbourgon/ff/v3/ffcli"

	registry "github.com/assetregistry/registry/sdk"
)

func (a *app) exportCommand() *ffcli.Command {
	var format, out string
	f := filters{}
	return a.leaf("export", "export COLLECTION [-format csv|ndjson] [-o FILE] [-filter field=value ...]",
		"write a whole collection (organizations, people, asset_types, assets, actions) or rows (actions as import rows) as CSV or NDJSON", 1, 1,
		func(fs *flag.FlagSet) {
			fs.StringVar(&format, "format", "ndjson", "csv or ndjson")
			fs.StringVar(&out, "o", "-", "the file to write (- for stdout)")
			fs.Var(f, "filter", "field=value, repeatable (the collection's list filters)")
		},
		func(ctx context.Context, args []string) error {
			if format != "csv" && format != "ndjson" {
				return usageError{fmt.Sprintf("-format %q: must be csv or ndjson", format)}
			}
			var w io.Writer = a.stdout
			var file *os.File
			if out != "-" {
				var err error
				if file, err = os.Create(out); err != nil {
					return usageError{"-o: " + oneLine(err)}
				}
				w = file
			}
			bw := bufio.NewWriterSize(w, 64<<10)
			err := a.export(ctx, args[0], format, registry.Filter(f), bw)
			if ferr := bw.Flush(); err == nil {
				err = ferr
			}
			if file != nil {
				if cerr := file.Close(); err == nil {
					err = cerr
				}
			}
			return err
		})
}

func (a *app) export(ctx context.Context, collection, format string, f registry.Filter, w io.Writer) error {
	c := a.c
	switch collection {
	case "organizations":
		return write(w, format, c.ListOrganizations(ctx, f))
	case "people":
		return write(w, format, c.ListPeople(ctx, f))
	case "asset_types":
		return write(w, format, c.ListAssetTypes(ctx, f))
	case "assets":
		return write(w, format, c.ListAssets(ctx, f))
	case "actions":
		return write(w, format, c.ListActions(ctx, f))
	case "rows":
		return writeRows(w, format, exportRows(ctx, c, f))
	}
	return usageError{fmt.Sprintf("export %q: the collections are organizations, people, asset_types, assets, actions and rows", collection)}
}

// write streams items as NDJSON, or as CSV with a column per top-level
// member (objects and lists as JSON), each cell spreadsheetText.
func write[T any](w io.Writer, format string, items iter.Seq2[T, error]) error {
	if format == "ndjson" {
		enc := json.NewEncoder(w)
		for item, err := range items {
			if err != nil {
				return err
			}
			if err := enc.Encode(item); err != nil {
				return err
			}
		}
		return nil
	}
	cols := jsonNames(reflect.TypeFor[T]())
	cw := csv.NewWriter(w)
	if err := cw.Write(cols); err != nil {
		return err
	}
	for item, err := range items {
		if err != nil {
			return err
		}
		raw, _ := json.Marshal(item)
		var m map[string]any
		_ = json.Unmarshal(raw, &m)
		rec := make([]string, len(cols))
		for i, col := range cols {
			if v := m[col]; v != nil {
				rec[i] = spreadsheetText(cell(v))
			}
		}
		if err := cw.Write(rec); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}

// jsonNames lists a struct's JSON member names in field order, embedded
// structs flattened.
func jsonNames(t reflect.Type) []string {
	var out []string
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		switch {
		case name == "-":
		case f.Anonymous && name == "":
			out = append(out, jsonNames(f.Type)...)
		case f.IsExported():
			out = append(out, name)
		}
	}
	return out
}

// exportRows turns actions into import rows: each action with its asset,
// asset type, person and organization, so that importing the rows into
// another registry records the same flow, and into the same one finds
// every part (actions by source_system and source_reference). Documents
// are not carried: their bytes stay in the registry.
func exportRows(ctx context.Context, c *registry.Client, f registry.Filter) iter.Seq2[map[string]string, error] {
	return func(yield func(map[string]string, error) bool) {
		assets := map[string]*registry.Asset{}
		types := map[string]*registry.AssetType{}
		people := map[string]*registry.Person{}
		orgs := map[string]*registry.Organization{}
		for act, err := range c.ListActions(ctx, f) {
			if err != nil {
				yield(nil, err)
				return
			}
			r, err := rowOf(ctx, c, act, assets, types, people, orgs)
			if !yield(r, err) || err != nil {
				return
			}
		}
	}
}

func rowOf(ctx context.Context, c *registry.Client, act registry.Action, assets map[string]*registry.Asset,
	types map[string]*registry.AssetType, people map[string]*registry.Person, orgs map[string]*registry.Organization) (map[string]string, error) {
	asset, err := cached(assets, act.AssetID, func() (*registry.Asset, error) { return c.GetAsset(ctx, act.AssetID) })
	if err != nil {
		return nil, err
	}
	t, err := cached(types, asset.AssetTypeID, func() (*registry.AssetType, error) { return c.GetAssetType(ctx, asset.AssetTypeID) })
	if err != nil {
		return nil, err
	}
	r := map[string]string{
		"asset_type_brand": t.Brand, "asset_type_model": t.Model, "asset_type_version": str(t.ModelVersion),
		"asset_serial_number": asset.SerialNumber, "action_type": act.ActionType, "performed_at": act.PerformedAt,
		"action_subtype": str(act.ActionSubtype), "reference": str(act.Reference), "status": str(act.Status),
		"status_ok": boolStr(act.StatusOK), "status_use_ok": boolStr(act.StatusUseOK), "status_finalized": boolStr(act.StatusFinalized),
		"status_valid_through": str(act.StatusValidThrough), "source_system": str(act.SourceSystem),
		"source_reference": str(act.SourceReference), "performed_by_person": str(act.PerformedByPerson),
		"performed_by_organization": str(act.PerformedByOrganization),
	}
	if asset.ProductionYear != nil {
		r["asset_production_year"] = strconv.Itoa(*asset.ProductionYear)
	}
	for col, v := range map[string]map[string]any{"data": act.Data, "meta_data": act.MetaData} {
		if v != nil {
			raw, _ := json.Marshal(v)
			r[col] = string(raw)
		}
	}
	if act.PersonID != nil {
		p, err := cached(people, *act.PersonID, func() (*registry.Person, error) { return c.GetPerson(ctx, *act.PersonID) })
		if err != nil {
			return nil, err
		}
		r["person_first_name"], r["person_last_name"], r["person_date_of_birth"] = p.FirstName, p.LastName, str(p.DateOfBirth)
	}
	if act.OrganizationID != nil {
		o, err := cached(orgs, *act.OrganizationID, func() (*registry.Organization, error) { return c.GetOrganization(ctx, *act.OrganizationID) })
		if err != nil {
			return nil, err
		}
		r["organization_name"], r["organization_registration_number"] = o.Name, o.RegistrationNumber
		r["organization_type"], r["organization_country"] = o.OrganizationType, str(o.Country)
		if act.PersonID != nil {
			p := people[*act.PersonID]
			for _, ao := range p.AssociatedOrganizations {
				if ao.ID == o.ID {
					r["relation_type"] = ao.RelationType
					break
				}
			}
			// A person's answer holds the first 100 links; the rest are
			// paged, read only when the relation is not among them.
			if _, found := r["relation_type"]; !found && p.AssociatedOrganizationsTruncated {
				for ao, err := range c.PersonOrganizations(ctx, p.ID) {
					if err != nil {
						return nil, err
					}
					if ao.ID == o.ID {
						r["relation_type"] = ao.RelationType
						break
					}
				}
			}
		}
	}
	return r, nil
}

func cached[V any](m map[string]*V, id string, get func() (*V, error)) (*V, error) {
	if v, ok := m[id]; ok {
		return v, nil
	}
	v, err := get()
	if err != nil {
		return nil, err
	}
	if len(m) > 10_000 { // bound the memory of a long export
		clear(m)
	}
	m[id] = v
	return v, nil
}

func writeRows(w io.Writer, format string, rows iter.Seq2[map[string]string, error]) error {
	enc := json.NewEncoder(w)
	cw := csv.NewWriter(w)
	if format == "csv" {
		if err := cw.Write(rowColumns); err != nil {
			return err
		}
	}
	for r, err := range rows {
		if err != nil {
			return err
		}
		if format == "ndjson" {
			obj := map[string]string{}
			for k, v := range r {
				if v != "" {
					obj[k] = v
				}
			}
			if err := enc.Encode(obj); err != nil {
				return err
			}
			continue
		}
		rec := make([]string, len(rowColumns))
		for i, col := range rowColumns {
			rec[i] = spreadsheetText(r[col])
		}
		if err := cw.Write(rec); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}

func str(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

func boolStr(b *bool) string {
	if b == nil {
		return ""
	}
	return strconv.FormatBool(*b)
}

// events and history.

func (a *app) eventsCommand() *ffcli.Command {
	var q registry.EventsQuery
	var types filtersList
	var cursorFile string
	return a.leaf("events", "events [-after CURSOR|now] [-type T ...] [-follow] [-cursor-file F]",
		"the change feed, oldest first, as NDJSON; -follow tails it", 0, 0,
		func(fs *flag.FlagSet) {
			fs.StringVar(&q.After, "after", "", "a saved cursor, or now")
			fs.Var(&types, "type", "an event type such as action.created or action.*, repeatable")
			fs.BoolVar(&q.Follow, "follow", false, "keep reading as events happen")
			fs.StringVar(&cursorFile, "cursor-file", "", "resume from the cursor saved here, and save it after each event")
		},
		func(ctx context.Context, _ []string) error {
			q.Types = types
			if cursorFile != "" && q.After == "" {
				if raw, err := os.ReadFile(cursorFile); err == nil {
					q.After = strings.TrimSpace(string(raw))
				} else if !errors.Is(err, os.ErrNotExist) {
					return usageError{"-cursor-file: " + oneLine(err)}
				}
			}
			enc := json.NewEncoder(a.stdout)
			for e, err := range a.c.Events(ctx, q) {
				if err != nil {
					if ctx.Err() != nil {
						return nil // Ctrl-C ends a -follow
					}
					return err
				}
				if err := enc.Encode(e); err != nil {
					return err
				}
				if cursorFile != "" && e.Cursor != "" {
					if err := os.WriteFile(cursorFile+".tmp", []byte(e.Cursor+"\n"), 0o644); err != nil {
						return err
					}
					if err := os.Rename(cursorFile+".tmp", cursorFile); err != nil {
						return err
					}
				}
			}
			return nil
		})
}

func (a *app) historyCommand() *ffcli.Command {
	return a.leaf("history", "history COLLECTION ID", "a resource's change events, oldest first", 2, 2, nil,
		func(ctx context.Context, args []string) error {
			events, err := collect(a.c.History(ctx, args[0], args[1]), 0)
			if err != nil {
				return err
			}
			return a.print("events", events)
		})
}

type filtersList []string

func (f *filtersList) String() string     { return strings.Join(*f, ",") }
func (f *filtersList) Set(s string) error { *f = append(*f, s); return nil }
