package main

import (
	"context"
	"flag"
	"fmt"
	"strings"
	"time"

	"github.com/peterbourgon/ff/v3/ffcli"
	qrcode "github.com/skip2/go-qrcode"

	registry "github.com/assetregistry/registry/sdk"
)

// passportLinksCommand is `registry passport-links`: links that hand an
// asset's passport to anyone who holds them (create, with its QR code;
// list; delete).
func (a *app) passportLinksCommand() *ffcli.Command {
	var expires, qr string
	var size, limit int
	subs := []*ffcli.Command{
		a.leaf("passport-links create", "passport-links create ASSET_ID [-expires RFC3339] [-qr FILE.png] [-qr-size PIXELS]",
			"a link to the asset's passport; its URL is shown only now (keep it); -qr writes it as a printable QR code (PNG)", 1, 1,
			func(fs *flag.FlagSet) {
				fs.StringVar(&expires, "expires", "", "when the link stops answering (RFC 3339); empty: never")
				fs.StringVar(&qr, "qr", "", "a PNG file to write the link's QR code to")
				fs.IntVar(&size, "qr-size", 512, "the QR code's width and height in pixels")
			},
			func(ctx context.Context, args []string) error {
				var in registry.PassportLinkInput
				if expires != "" {
					at, err := time.Parse(time.RFC3339, expires)
					if err != nil {
						return usageError{"registry passport-links create: -expires is not RFC 3339 (2027-01-31T00:00:00Z)"}
					}
					in.ExpiresAt = &at
				}
				l, err := a.c.CreatePassportLink(ctx, args[0], in)
				if err != nil {
					return err
				}
				if qr != "" {
					// Medium error correction: a printed label that is
					// scuffed or partly covered still reads.
					if err := qrcode.WriteFile(l.URL, qrcode.Medium, size, qr); err != nil {
						return fmt.Errorf("registry: the QR code: %w", err)
					}
				}
				return a.print("passport_links", l)
			}),
		a.leaf("passport-links list", "passport-links list ASSET_ID [-limit N]",
			"the asset's links, with how often each was fetched (never their URLs)", 1, 1,
			func(fs *flag.FlagSet) { fs.IntVar(&limit, "limit", 0, "at most this many (0: all)") },
			func(ctx context.Context, args []string) error {
				ls, err := collect(a.c.ListPassportLinks(ctx, args[0]), limit)
				if err != nil {
					return err
				}
				return a.print("passport_links", ls)
			}),
		a.leaf("passport-links delete", "passport-links delete ASSET_ID LINK_ID", "delete a link: its URL answers 404 from now on", 2, 2, nil,
			func(ctx context.Context, args []string) error {
				return a.c.DeletePassportLink(ctx, args[0], args[1])
			}),
	}
	for _, c := range subs {
		c.Name = strings.TrimPrefix(c.Name, "passport-links ")
	}
	return group("passport-links", "links that answer an asset's passport without a token: create (with a QR code), list, delete", subs...)
}
