package main

import (
	"context"
	"flag"
	"os"

	"github.com/peterbourgon/ff/v3/ffcli"

	registry "github.com/assetregistry/registry/sdk"
)

// commands is the command tree: one command per resource, each built by
// its own method, and the commands of the other files.
func (a *app) commands() *ffcli.Command {
	root := &ffcli.Command{
		ShortUsage: "registry <command> [flags]",
		FlagSet:    quietFlags("registry"),
		ShortHelp:  "the Asset Registry from a shell",
		Subcommands: []*ffcli.Command{a.organizationsCommand(), a.peopleCommand(), a.assetTypesCommand(), a.assetsCommand(),
			a.grantsCommand(), a.transfersCommand(), a.actionsCommand(), a.actionDocumentsCommand(), a.documentsCommand(),
			a.plansCommand(), a.complianceCommand(), a.metersCommand(), a.actionTypesCommand(), a.webhooksCommand(), a.importCommand(), a.batchCommand(), a.exportCommand(), a.eventsCommand(), a.historyCommand(),
			a.checkpointCommand(), a.logKeygenCommand(), a.passportCommand(), a.passportLinksCommand(), a.verifyCommand()},
		Exec: func(context.Context, []string) error { return flag.ErrHelp },
	}
	return root
}

// organizationsCommand is `registry organizations`.
func (a *app) organizationsCommand() *ffcli.Command {
	var country string
	return resource(a, "organizations", "organizations: list, get, create, update, delete, find",
		func(ctx context.Context, f registry.Filter) iterOrg { return a.c.ListOrganizations(ctx, f) },
		func(ctx context.Context, id string) (*registry.Organization, error) {
			return a.c.GetOrganization(ctx, id)
		},
		func(ctx context.Context, in registry.OrganizationInput, o ...registry.CallOption) (*registry.Organization, error) {
			return a.c.CreateOrganization(ctx, in, o...)
		},
		func(ctx context.Context, id string, p registry.Patch, o ...registry.CallOption) (*registry.Organization, error) {
			return a.c.UpdateOrganization(ctx, id, p, o...)
		},
		func(ctx context.Context, id string, o ...registry.CallOption) error {
			return a.c.DeleteOrganization(ctx, id, o...)
		},
		a.leaf("organizations find", "organizations find REGISTRATION_NUMBER [-country CC]", "the organization with this registration number", 1, 1,
			func(fs *flag.FlagSet) { fs.StringVar(&country, "country", "", "ISO 3166-1 alpha-2") },
			func(ctx context.Context, args []string) error {
				o, err := a.c.FindOrganization(ctx, args[0], country)
				if err != nil {
					return err
				}
				return a.print("organizations", o)
			}),
	)
}

// peopleCommand is `registry people`.
func (a *app) peopleCommand() *ffcli.Command {
	var relation string
	var create bool
	var personIn registry.PersonInput
	return resource(a, "people", "people: list, get, create, update, delete, find, link, unlink",
		func(ctx context.Context, f registry.Filter) iterPerson { return a.c.ListPeople(ctx, f) },
		func(ctx context.Context, id string) (*registry.Person, error) { return a.c.GetPerson(ctx, id) },
		func(ctx context.Context, in registry.PersonInput, o ...registry.CallOption) (*registry.Person, error) {
			return a.c.CreatePerson(ctx, in, o...)
		},
		func(ctx context.Context, id string, p registry.Patch, o ...registry.CallOption) (*registry.Person, error) {
			return a.c.UpdatePerson(ctx, id, p, o...)
		},
		func(ctx context.Context, id string, o ...registry.CallOption) error {
			return a.c.DeletePerson(ctx, id, o...)
		},
		a.leaf("people find", "people find -first-name A -last-name B [-date-of-birth D] [-create]", "the person with this identity (created with -create)", 0, 0,
			func(fs *flag.FlagSet) {
				fs.StringVar(&personIn.FirstName, "first-name", "", "first name")
				fs.StringVar(&personIn.LastName, "last-name", "", "last name")
				fs.StringVar(&personIn.DateOfBirth, "date-of-birth", "", "YYYY-MM-DD")
				fs.BoolVar(&create, "create", false, "create the person when none matches")
			},
			func(ctx context.Context, _ []string) error {
				p, _, err := a.c.FindPerson(ctx, personIn, create)
				if err != nil {
					return err
				}
				return a.print("people", p)
			}),
		a.leaf("people link", "people link PERSON_ID ORGANIZATION_ID -relation-type employee", "link a person to an organization", 2, 2,
			func(fs *flag.FlagSet) {
				fs.StringVar(&relation, "relation-type", "", "a lowercase token, e.g. employee")
			},
			func(ctx context.Context, args []string) error {
				l, err := a.c.LinkPerson(ctx, args[0], args[1], relation)
				if err != nil {
					return err
				}
				return a.print("links", l)
			}),
		a.leaf("people unlink", "people unlink PERSON_ID ORGANIZATION_ID -relation-type employee", "remove a link", 2, 2,
			func(fs *flag.FlagSet) { fs.StringVar(&relation, "relation-type", "", "the link's relation type") },
			func(ctx context.Context, args []string) error {
				return a.c.UnlinkPerson(ctx, args[0], args[1], relation)
			}),
	)
}

// assetTypesCommand is `registry asset_types`.
func (a *app) assetTypesCommand() *ffcli.Command {
	var version string
	return resource(a, "asset_types", "asset types: list, get, create, update, delete, by-brand-and-model, attach, detach, thumbnail",
		func(ctx context.Context, f registry.Filter) iterAssetType { return a.c.ListAssetTypes(ctx, f) },
		func(ctx context.Context, id string) (*registry.AssetType, error) { return a.c.GetAssetType(ctx, id) },
		func(ctx context.Context, in registry.AssetTypeInput, o ...registry.CallOption) (*registry.AssetType, error) {
			return a.c.CreateAssetType(ctx, in, o...)
		},
		func(ctx context.Context, id string, p registry.Patch, o ...registry.CallOption) (*registry.AssetType, error) {
			return a.c.UpdateAssetType(ctx, id, p, o...)
		},
		func(ctx context.Context, id string, o ...registry.CallOption) error {
			return a.c.DeleteAssetType(ctx, id, o...)
		},
		a.leaf("asset_types by-brand-and-model", "asset_types by-brand-and-model BRAND MODEL [-version V]", "the asset types of a brand and model", 2, 2,
			func(fs *flag.FlagSet) { fs.StringVar(&version, "version", "", "only this version") },
			func(ctx context.Context, args []string) error {
				ts, err := a.c.AssetTypesByBrandAndModel(ctx, args[0], args[1], version)
				if err != nil {
					return err
				}
				return a.print("asset_types", ts)
			}),
		a.leaf("asset_types attach", "asset_types attach ASSET_TYPE_ID DOCUMENT_ID", "attach a document", 2, 2, nil,
			func(ctx context.Context, args []string) error { return a.c.AttachDocument(ctx, args[0], args[1]) }),
		a.leaf("asset_types detach", "asset_types detach ASSET_TYPE_ID DOCUMENT_ID", "detach a document", 2, 2, nil,
			func(ctx context.Context, args []string) error { return a.c.DetachDocument(ctx, args[0], args[1]) }),
		a.leaf("asset_types thumbnail", "asset_types thumbnail ASSET_TYPE_ID DOCUMENT_ID", "make an image document the thumbnail", 2, 2, nil,
			func(ctx context.Context, args []string) error {
				t, err := a.c.SetThumbnail(ctx, args[0], args[1])
				if err != nil {
					return err
				}
				return a.print("asset_types", t)
			}),
	)
}

// assetsCommand is `registry assets`.
func (a *app) assetsCommand() *ffcli.Command {
	var create bool
	var assetIn registry.AssetQuery
	return resource(a, "assets", "assets: list, get, create, update, delete, find, set-owner",
		func(ctx context.Context, f registry.Filter) iterAsset { return a.c.ListAssets(ctx, f) },
		func(ctx context.Context, id string) (*registry.Asset, error) { return a.c.GetAsset(ctx, id) },
		func(ctx context.Context, in registry.AssetInput, o ...registry.CallOption) (*registry.Asset, error) {
			return a.c.CreateAsset(ctx, in, o...)
		},
		func(ctx context.Context, id string, p registry.Patch, o ...registry.CallOption) (*registry.Asset, error) {
			return a.c.UpdateAsset(ctx, id, p, o...)
		},
		func(ctx context.Context, id string, o ...registry.CallOption) error {
			return a.c.DeleteAsset(ctx, id, o...)
		},
		a.leaf("assets find", "assets find -serial-number S [-brand B -model M [-version V]] [-create]", "the asset with this serial number (created with -create)", 0, 0,
			func(fs *flag.FlagSet) {
				fs.StringVar(&assetIn.SerialNumber, "serial-number", "", "serial number")
				fs.StringVar(&assetIn.Brand, "brand", "", "the asset type's brand")
				fs.StringVar(&assetIn.Model, "model", "", "the asset type's model")
				fs.StringVar(&assetIn.ModelVersion, "version", "", "the asset type's version")
				fs.BoolVar(&create, "create", false, "create the asset when none matches")
			},
			func(ctx context.Context, _ []string) error {
				v, _, err := a.c.FindAsset(ctx, assetIn, create)
				if err != nil {
					return err
				}
				return a.print("assets", v)
			}),
		a.setOwnerCommand(),
	)
}

// actionsCommand is `registry actions`.
func (a *app) actionsCommand() *ffcli.Command {
	return resource(a, "actions", "actions: list, get, create, update, delete, find",
		func(ctx context.Context, f registry.Filter) iterAction { return a.c.ListActions(ctx, f) },
		func(ctx context.Context, id string) (*registry.Action, error) { return a.c.GetAction(ctx, id) },
		func(ctx context.Context, in registry.ActionInput, o ...registry.CallOption) (*registry.Action, error) {
			return a.c.CreateAction(ctx, in, o...)
		},
		func(ctx context.Context, id string, p registry.Patch, o ...registry.CallOption) (*registry.Action, error) {
			return a.c.UpdateAction(ctx, id, p, o...)
		},
		func(ctx context.Context, id string, o ...registry.CallOption) error {
			return a.c.DeleteAction(ctx, id, o...)
		},
		a.actionsFindCommand(),
	)
}

// actionDocumentsCommand is `registry action_documents`.
func (a *app) actionDocumentsCommand() *ffcli.Command {
	var adData, adFile string
	return group("action_documents", "action documents: create, update, delete",
		a.leaf("create", "action_documents create ACTION_ID -data JSON", "link a document to an action", 1, 1,
			func(fs *flag.FlagSet) {
				fs.StringVar(&adData, "data", "", `{"document_id", "source_system", "source_reference"}`)
				fs.StringVar(&adFile, "file", "", "a file holding the JSON body")
			},
			func(ctx context.Context, args []string) error {
				var in registry.ActionDocumentInput
				if err := readInput(adData, adFile, &in); err != nil {
					return err
				}
				v, err := a.c.CreateActionDocument(ctx, args[0], in)
				if err != nil {
					return err
				}
				return a.print("action_documents", v)
			}),
		a.leaf("update", "action_documents update ACTION_ID ID -data JSON", "change one (JSON merge patch)", 2, 2,
			func(fs *flag.FlagSet) {
				fs.StringVar(&adData, "data", "", "the merge patch")
				fs.StringVar(&adFile, "file", "", "a file holding the merge patch")
			},
			func(ctx context.Context, args []string) error {
				var p registry.Patch
				if err := readInput(adData, adFile, &p); err != nil {
					return err
				}
				v, err := a.c.UpdateActionDocument(ctx, args[0], args[1], p)
				if err != nil {
					return err
				}
				return a.print("action_documents", v)
			}),
		a.leaf("delete", "action_documents delete ACTION_ID ID", "remove the link", 2, 2, nil,
			func(ctx context.Context, args []string) error { return a.c.DeleteActionDocument(ctx, args[0], args[1]) }),
	)
}

// documentsCommand is `registry documents`.
func (a *app) documentsCommand() *ffcli.Command {
	var documentType, out, sum string
	var asOf asOfFlag
	return group("documents", "documents: upload, get, find, download, delete",
		a.leaf("upload", "documents upload FILE [-document-type T]", "upload a file as a document", 1, 1,
			func(fs *flag.FlagSet) {
				fs.StringVar(&documentType, "document-type", "expert_control_report", "a lowercase token")
			},
			func(ctx context.Context, args []string) error {
				d, err := a.c.UploadFile(ctx, documentType, args[0])
				if err != nil {
					return err
				}
				return a.print("documents", d)
			}),
		a.leaf("get", "documents get ID [-as-of T]", "a document's metadata and action documents", 1, 1,
			func(fs *flag.FlagSet) { asOf.register("documents", fs) },
			func(ctx context.Context, args []string) error {
				d, err := asOf.get(ctx, a.c, "documents", args[0], func() (any, error) { return a.c.GetDocument(ctx, args[0]) })
				if err != nil {
					return err
				}
				return a.print("documents", d)
			}),
		a.leaf("find", "documents find -sha256 HEX", "the documents whose file has this SHA-256 sum", 0, 0,
			func(fs *flag.FlagSet) {
				fs.StringVar(&sum, "sha256", "", "the file's SHA-256, 64 lowercase hex digits")
			},
			func(ctx context.Context, _ []string) error {
				if sum == "" {
					return usageError{"registry documents find: give -sha256 HEX"}
				}
				ds, err := collect(a.c.FindDocumentsBySHA256(ctx, sum), 0)
				if err != nil {
					return err
				}
				return a.print("documents", ds)
			}),
		a.leaf("download", "documents download ID [-o FILE]", "a document's bytes", 1, 1,
			func(fs *flag.FlagSet) { fs.StringVar(&out, "o", "-", "where to write (- for stdout)") },
			func(ctx context.Context, args []string) error {
				w := a.stdout
				if out != "-" {
					f, err := os.Create(out)
					if err != nil {
						return usageError{"-o: " + oneLine(err)}
					}
					defer f.Close()
					w = f
				}
				_, err := a.c.DownloadDocument(ctx, args[0], w)
				return err
			}),
		a.leaf("delete", "documents delete ID", "delete a document", 1, 1, nil,
			func(ctx context.Context, args []string) error { return a.c.DeleteDocument(ctx, args[0]) }),
	)
}
