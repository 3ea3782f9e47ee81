package main

import (
	"context"
	"flag"

	"github.com/peterbourgon/ff/v3/ffcli"

	registry "github.com/assetregistry/registry/sdk"
)

// webhooksCommand is `registry webhooks`: the client's own subscriptions
// (list, get, create, update, delete), their secret's rotation, the
// delivery log and a failed delivery's retry.
func (a *app) webhooksCommand() *ffcli.Command {
	c := func() *registry.Client { return a.c }
	var status string
	var limit int
	return resource(a, "webhooks", "the client's webhook subscriptions: list, get, create, update, delete, rotate, deliveries, retry",
		func(ctx context.Context, f registry.Filter) iterWebhook { return c().ListWebhooks(ctx, f) },
		func(ctx context.Context, id string) (*registry.Webhook, error) { return c().GetWebhook(ctx, id) },
		func(ctx context.Context, in registry.WebhookInput, o ...registry.CallOption) (*registry.Webhook, error) {
			return c().CreateWebhook(ctx, in, o...)
		},
		func(ctx context.Context, id string, p registry.Patch, o ...registry.CallOption) (*registry.Webhook, error) {
			return c().UpdateWebhook(ctx, id, p, o...)
		},
		func(ctx context.Context, id string, o ...registry.CallOption) error {
			return c().DeleteWebhook(ctx, id, o...)
		},
		a.leaf("webhooks rotate", "webhooks rotate ID", "a new secret (printed once: keep it); the old one still signs during the overlap", 1, 1, nil,
			func(ctx context.Context, args []string) error {
				w, err := c().RotateWebhookSecret(ctx, args[0])
				if err != nil {
					return err
				}
				return a.print("webhooks", w)
			}),
		a.leaf("webhooks deliveries", "webhooks deliveries ID [-status pending|succeeded|failed] [-limit N]",
			"the subscription's delivery log, in the order the deliveries were queued", 1, 1,
			func(fs *flag.FlagSet) {
				fs.StringVar(&status, "status", "", "only deliveries in this status: pending, succeeded or failed")
				fs.IntVar(&limit, "limit", 0, "at most this many (0: all)")
			},
			func(ctx context.Context, args []string) error {
				ds, err := collect(c().WebhookDeliveries(ctx, args[0], status), limit)
				if err != nil {
					return err
				}
				return a.print("deliveries", ds)
			}),
		a.leaf("webhooks retry", "webhooks retry ID DELIVERY_ID", "queue a failed delivery again, with a fresh retry schedule", 2, 2, nil,
			func(ctx context.Context, args []string) error {
				d, err := c().RetryWebhookDelivery(ctx, args[0], args[1])
				if err != nil {
					return err
				}
				return a.print("deliveries", d)
			}),
	)
}
