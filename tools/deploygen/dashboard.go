package deploygen

import (
	"fmt"
	"slices"

	"github.com/assetregistry/registry/pkg/catalog"
)

// dashboard renders the Grafana dashboard: a row per deployable with its
// traffic, errors and latency, plus what only it has (pool, cache, tokens).
// The umbrella chart ships it in a ConfigMap for Grafana's sidecar.
func dashboard(all []Facts) ([]byte, error) {
	var panels []any
	id := 0
	y := 0
	for _, f := range all {
		id++
		panels = append(panels, obj("id", id, "type", "row", "title", f.Name, "collapsed", false,
			"gridPos", obj("h", 1, "w", 24, "x", 0, "y", y), "panels", []any{}))
		y++
		sel := fmt.Sprintf(`namespace="$namespace", job=%q`, f.Name)
		http := fmt.Sprintf(`%s, route!~"/healthz|/readyz"`, sel)
		list := []*object{
			panel("Requests per second by status", "reqps",
				target(fmt.Sprintf(`sum by (status) (rate(http_server_requests_total{%s}[$__rate_interval]))`, http), "{{status}}")),
			panel("5xx ratio", "percentunit",
				target(fmt.Sprintf(`sum(rate(http_server_requests_total{%[1]s, status=~"5.."}[$__rate_interval])) / sum(rate(http_server_requests_total{%[1]s}[$__rate_interval]))`, http), "5xx")),
			panel("Latency", "s",
				target(fmt.Sprintf(`histogram_quantile(0.5, sum by (le) (rate(http_server_request_duration_seconds_bucket{%s}[$__rate_interval])))`, http), "p50"),
				target(fmt.Sprintf(`histogram_quantile(0.95, sum by (le) (rate(http_server_request_duration_seconds_bucket{%s}[$__rate_interval])))`, http), "p95"),
				target(fmt.Sprintf(`histogram_quantile(0.99, sum by (le) (rate(http_server_request_duration_seconds_bucket{%s}[$__rate_interval])))`, http), "p99")),
		}
		if slices.Contains(f.Needs, string(catalog.Postgres)) {
			list = append(list,
				panel("Database pool connections", "short",
					target(fmt.Sprintf(`sum by (schema) (pgxpool_acquired_conns{%s})`, sel), "acquired {{schema}}"),
					target(fmt.Sprintf(`sum by (schema) (pgxpool_max_conns{%s})`, sel), "max {{schema}}")),
				panel("Database pool wait per acquire", "s",
					target(fmt.Sprintf(`sum(rate(pgxpool_empty_acquire_wait_seconds_total{%[1]s}[$__rate_interval])) / sum(rate(pgxpool_acquire_count_total{%[1]s}[$__rate_interval]))`, sel), "average wait")))
		}
		if slices.Contains(f.Needs, string(catalog.Redis)) && f.Kind == KindService {
			list = append(list,
				panel("Find cache results", "reqps",
					target(fmt.Sprintf(`sum by (result) (rate(find_cache_requests_total{%s}[$__rate_interval]))`, sel), "{{result}}")),
				panel("Find cache hit ratio", "percentunit",
					target(fmt.Sprintf(`sum(rate(find_cache_requests_total{%[1]s, result="hit"}[$__rate_interval])) / sum(rate(find_cache_requests_total{%[1]s}[$__rate_interval]))`, sel), "hit ratio")))
		}
		if slices.Contains(f.Needs, string(catalog.NATS)) {
			list = append(list,
				panel("Change events waiting in the outbox", "short",
					target(fmt.Sprintf(`max by (schema) (outbox_pending_events{%s})`, sel), "pending {{schema}}")),
				panel("Oldest unpublished change event", "s",
					target(fmt.Sprintf(`max by (schema) (outbox_oldest_pending_seconds{%s})`, sel), "oldest {{schema}}")),
				panel("Change events published per second", "ops",
					target(fmt.Sprintf(`sum(rate(outbox_published_total{%s}[$__rate_interval]))`, sel), "published"),
					target(fmt.Sprintf(`sum(rate(outbox_publish_errors_total{%s}[$__rate_interval]))`, sel), "failed rounds")))
		}
		switch f.Kind {
		case KindGateway:
			list = append(list, panel("Rejected tokens (401) per second", "reqps",
				target(fmt.Sprintf(`sum(rate(http_server_requests_total{%s, status="401"}[$__rate_interval]))`, sel), "401")),
				panel("Rate limits: refused (429) and let through unchecked (Redis down) per second", "reqps",
					target(fmt.Sprintf(`sum by (budget) (rate(gateway_ratelimit_limited_total{%s}[$__rate_interval]))`, sel), "429 {{budget}}"),
					target(fmt.Sprintf(`sum by (budget) (rate(gateway_ratelimit_fail_open_total{%s}[$__rate_interval]))`, sel), "fail open {{budget}}")))
		case KindIdP:
			list = append(list,
				panel("Tokens issued per second by client", "reqps",
					target(fmt.Sprintf(`sum by (client_id) (rate(idp_tokens_issued_total{%s}[$__rate_interval]))`, sel), "{{client_id}}")),
				panel("Token errors per second", "reqps",
					target(fmt.Sprintf(`sum by (error) (rate(idp_token_errors_total{%s}[$__rate_interval]))`, sel), "{{error}}")))
		}
		if f.Name == "events" { // the change feed's consumer and the webhook dispatcher
			list = append(list,
				panel("Events stored per second; stream backlog", "short",
					target(fmt.Sprintf(`sum(rate(registry_events_stored_total{%s}[$__rate_interval]))`, sel), "stored/s"),
					target(fmt.Sprintf(`max(registry_events_consumer_pending{%s})`, sel), "not yet stored")),
				panel("Webhook attempts per second by result", "reqps",
					target(fmt.Sprintf(`sum by (result) (rate(registry_webhook_attempts_total{%s}[$__rate_interval]))`, sel), "{{result}}")),
				panel("Webhook deliveries by status", "short",
					target(fmt.Sprintf(`max by (status) (registry_webhook_deliveries{%s, status!="succeeded"})`, sel), "{{status}}")))
		}
		list = append(list, panel("Resident memory", "bytes",
			target(fmt.Sprintf(`sum by (pod) (process_resident_memory_bytes{%s})`, sel), "rss {{pod}}")))
		for i, p := range list {
			id++
			p.set("id", id)
			p.set("gridPos", obj("h", 7, "w", 8, "x", (i%3)*8, "y", y+(i/3)*7))
			panels = append(panels, p)
		}
		y += ((len(list) + 2) / 3) * 7
	}
	d := obj(
		"title", "Asset registry",
		"uid", "asset-registry",
		"description", "Generated by `make generate` from pkg/catalog: a row per deployable.",
		"tags", []any{"asset-registry"},
		"timezone", "utc",
		"schemaVersion", 39,
		"version", 1,
		"editable", false,
		"refresh", "30s",
		"time", obj("from", "now-6h", "to", "now"),
		"templating", obj("list", []any{
			obj("name", "datasource", "type", "datasource", "query", "prometheus", "label", "Data source"),
			obj("name", "namespace", "type", "query", "label", "Namespace",
				"datasource", obj("type", "prometheus", "uid", "${datasource}"),
				"query", obj("query", "label_values(http_server_requests_total, namespace)", "refId", "namespaces"),
				"definition", "label_values(http_server_requests_total, namespace)",
				"refresh", 2),
		}),
		"panels", panels,
	)
	return toJSON(d)
}

func panel(title, unit string, targets ...*object) *object {
	t := make([]any, len(targets))
	for i, x := range targets {
		x.set("refId", string(rune('A'+i)))
		t[i] = x
	}
	return obj("type", "timeseries", "title", title,
		"datasource", obj("type", "prometheus", "uid", "${datasource}"),
		"fieldConfig", obj("defaults", obj("unit", unit), "overrides", []any{}),
		"targets", t)
}

func target(expr, legend string) *object {
	return obj("expr", expr, "legendFormat", legend,
		"datasource", obj("type", "prometheus", "uid", "${datasource}"))
}
