{{- /*
registry-lib.merge: (list base over) → JSON of base with over laid on it,
recursively. Unlike sprig's mergeOverwrite it lets false, 0 and "" win (a
value that turns a default off must turn it off); a null in over keeps base.
*/ -}}
{{- define "registry-lib.merge" -}}
{{- $out := deepCopy (index . 0 | default dict) -}}
{{- range $k, $v := (index . 1 | default dict) -}}
{{- $cur := index $out $k -}}
{{- if and (kindIs "map" $v) (kindIs "map" $cur) -}}
{{- $_ := set $out $k (include "registry-lib.merge" (list $cur $v) | fromJson) -}}
{{- else if not (kindIs "invalid" $v) -}}
{{- $_ := set $out $k $v -}}
{{- end -}}
{{- end -}}
{{- toJson $out -}}
{{- end -}}

{{- /*
registry-lib.context: the chart's root context → the dict every template
works on:
  root  the chart's context (.Release, .Chart, .Files)
  name  the deployable (also every object's name: the same in the umbrella
        and in a release of its own, so peers and the gateway find it)
  f     its facts (deployable.yaml, generated from pkg/catalog)
  g     the environment: library defaults < .Values.global
  v     its values: library defaults < global.defaults < its chart's values
        < its block of an umbrella values file given to its chart alone
*/ -}}
{{- define "registry-lib.context" -}}
{{- $facts := .Files.Get "deployable.yaml" | fromYaml -}}
{{- if not $facts.name -}}
{{- fail (printf "chart %s has no deployable.yaml: run make generate" .Chart.Name) -}}
{{- end -}}
{{- $defaults := include "registry-lib.defaults" . | fromYaml -}}
{{- $g := include "registry-lib.merge" (list $defaults.global (.Values.global | default dict)) | fromJson -}}
{{- $own := pick .Values "enabled" -}}
{{- range $k, $_ := $defaults.deployable -}}
{{- if hasKey $.Values $k -}}
{{- $_ := set $own $k (index $.Values $k) -}}
{{- end -}}
{{- end -}}
{{- $v := include "registry-lib.merge" (list $defaults.deployable ($g.defaults | default dict)) | fromJson -}}
{{- $v = include "registry-lib.merge" (list $v $own) | fromJson -}}
{{- $block := index .Values $facts.name -}}
{{- if kindIs "map" $block -}}
{{- $v = include "registry-lib.merge" (list $v $block) | fromJson -}}
{{- end -}}
{{- toJson (dict "name" $facts.name "f" $facts "g" $g "v" $v) -}}
{{- end -}}

{{- define "registry-lib.tag" -}}
{{- .v.image.tag | default .g.image.tag | default .root.Chart.AppVersion -}}
{{- end -}}

{{- define "registry-lib.image" -}}
{{- $registry := .g.image.registry | trimSuffix "/" -}}
{{- $repo := .v.image.repository | default (printf "%s%s" (ternary "" (printf "%s/" $registry) (empty $registry)) (printf "asset-registry/%s" .name)) -}}
{{- if .v.image.digest -}}
{{- printf "%s@%s" $repo .v.image.digest -}}
{{- else -}}
{{- printf "%s:%s" $repo (include "registry-lib.tag" .) -}}
{{- end -}}
{{- end -}}

{{- /* Selector labels: release-independent, so NetworkPolicies, mesh policies and peers match a deployable whichever release installed it. */ -}}
{{- define "registry-lib.selector" -}}
app.kubernetes.io/name: {{ .name }}
app.kubernetes.io/component: server
{{- end -}}

{{- define "registry-lib.labels" -}}
app.kubernetes.io/name: {{ .name }}
app.kubernetes.io/instance: {{ .root.Release.Name }}
app.kubernetes.io/version: {{ include "registry-lib.tag" . | trunc 63 | trimSuffix "-" | quote }}
app.kubernetes.io/part-of: asset-registry
app.kubernetes.io/managed-by: {{ .root.Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .root.Chart.Name .root.Chart.Version | replace "+" "_" | trunc 63 }}
asset-registry/environment: {{ .g.environment }}
{{- end -}}

{{- /* registry-lib.schema: DATABASE_SCHEMA, the deployable's name unless set. */ -}}
{{- define "registry-lib.schema" -}}
{{- .v.database.schema | default (.name | replace "-" "_") -}}
{{- end -}}

{{- define "registry-lib.url" -}}
{{- printf "http://%s:8080" . -}}
{{- end -}}

{{- define "registry-lib.envName" -}}
{{- . | upper | replace "-" "_" | replace "." "_" -}}
{{- end -}}

{{- /* registry-lib.jwksURL: where token verifiers fetch keys; empty means discovery from the issuer. */ -}}
{{- define "registry-lib.jwksURL" -}}
{{- if .g.oidc.jwksURL -}}
{{- .g.oidc.jwksURL -}}
{{- else if .g.oidc.inClusterIdP -}}
{{- printf "%s/.well-known/jwks.json" (include "registry-lib.url" "idp") -}}
{{- end -}}
{{- end -}}

{{- /* registry-lib.tokenValidityURL: the token validity list verifiers follow; empty means the one discovery names, if any. */ -}}
{{- define "registry-lib.tokenValidityURL" -}}
{{- if .g.oidc.tokenValidityURL -}}
{{- .g.oidc.tokenValidityURL -}}
{{- else if .g.oidc.inClusterIdP -}}
{{- printf "%s/oidc/token-validity" (include "registry-lib.url" "idp") -}}
{{- end -}}
{{- end -}}

{{- /*
registry-lib.config: the plain settings of the deployable, as a JSON object
of environment variables (its ConfigMap). Credentials are never here; see
registry-lib.secretEnv.
*/ -}}
{{- define "registry-lib.config" -}}
{{- $env := dict
  "HTTP_ADDR" ":8080"
  "METRICS_ADDR" ":9090"
  "LOG_LEVEL" .v.log.level
  "LOG_FORMAT" .v.log.format
  "SHUTDOWN_DELAY" (printf "%ds" (int .v.shutdown.delaySeconds))
  "SHUTDOWN_TIMEOUT" (printf "%ds" (int .v.shutdown.timeoutSeconds))
-}}
{{- if .f.verifiesTokens -}}
{{- $_ := set $env "OIDC_ISSUER" (required "global.oidc.issuer is required" .g.oidc.issuer) -}}
{{- $_ := set $env "OIDC_AUDIENCE" (required "global.publicURL is required" .g.publicURL) -}}
{{- with include "registry-lib.jwksURL" . -}}
{{- $_ := set $env "OIDC_JWKS_URL" . -}}
{{- end -}}
{{- with include "registry-lib.tokenValidityURL" . -}}
{{- $_ := set $env "OIDC_TOKEN_VALIDITY_URL" . -}}
{{- end -}}
{{- $_ := set $env "OIDC_TOKEN_VALIDITY_INTERVAL" .g.oidc.tokenValidityInterval -}}
{{- $_ := set $env "OIDC_TOKEN_VALIDITY_MAX_AGE" .g.oidc.tokenValidityMaxAge -}}
{{- end -}}
{{- if eq .f.kind "service" -}}
{{- $_ := set $env "TENANCY_REQUIRE_ORGANIZATION" (toString .g.tenancy.requireOrganization) -}}
{{- end -}}
{{- if has "postgres" .f.needs -}}
{{- $_ := set $env "DATABASE_SCHEMA" (include "registry-lib.schema" .) -}}
{{- $_ := set $env "DATABASE_MAX_CONNS" (toString (int .v.database.maxConns)) -}}
{{- if .v.database.maxWrites -}}
{{- $_ := set $env "DATABASE_MAX_WRITES" (toString (int .v.database.maxWrites)) -}}
{{- end -}}
{{- end -}}
{{- if and (has "redis" .f.needs) .g.redis.enabled .g.redis.sentinel.masterName -}}
{{- $_ := set $env "REDIS_MASTER_NAME" .g.redis.sentinel.masterName -}}
{{- $_ := set $env "REDIS_SENTINEL_ADDRS" (join "," (required "global.redis.sentinel.addrs is required with a masterName" .g.redis.sentinel.addrs)) -}}
{{- end -}}
{{- if has "s3" .f.needs -}}
{{- $os := .g.objectStore -}}
{{- $bucket := .v.objectStore.bucket | default (printf "%s-%s" .g.environment .name) -}}
{{- if eq .g.environment "prod" -}}
{{- /* Production binds to an S3 (or S3-compatible) store it does not deploy: its address, region, keys and bucket are checked here, at render, not at the first upload. */ -}}
{{- if not (hasPrefix "https://" ($os.endpoint | default "")) -}}
{{- fail (printf "%s: global.objectStore.endpoint must be an https:// address in prod (AWS: https://s3.<region>.amazonaws.com; another S3-compatible store: its TLS address), not %q" .name ($os.endpoint | default "")) -}}
{{- end -}}
{{- if not $os.region -}}
{{- fail (printf "%s: global.objectStore.region is required in prod" .name) -}}
{{- end -}}
{{- if or (not $os.secretName) (not $os.accessKeyKey) (not $os.secretKeyKey) -}}
{{- fail (printf "%s: global.objectStore.secretName, accessKeyKey and secretKeyKey are required in prod: the store's keys come from that Secret" .name) -}}
{{- end -}}
{{- end -}}
{{- if not (regexMatch "^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$" $bucket) -}}
{{- fail (printf "%s: bucket %q is not an S3 bucket name (3 to 63 lowercase letters, digits, dots and hyphens, beginning and ending with a letter or digit)" .name $bucket) -}}
{{- end -}}
{{- with $os.endpoint -}}
{{- $_ := set $env "S3_ENDPOINT" . -}}
{{- end -}}
{{- $_ := set $env "S3_BUCKET" $bucket -}}
{{- $_ := set $env "S3_REGION" $os.region -}}
{{- end -}}
{{- if has "nats" .f.needs -}}
{{- $_ := set $env "NATS_URL" (required "global.nats.url is required" .g.nats.url) -}}
{{- $_ := set $env "NATS_STREAM_REPLICAS" (toString (int .g.nats.replicas)) -}}
{{- $_ := set $env "NATS_STREAM_MAX_AGE" .g.nats.streamMaxAge -}}
{{- end -}}
{{- range .f.peers -}}
{{- $_ := set $env (printf "PEER_%s_URL" (include "registry-lib.envName" .)) (include "registry-lib.url" .) -}}
{{- end -}}
{{- if .f.peers -}}
{{- $_ := set $env "PEER_BREAKER_FAILURES" (toString (int .v.peerBreaker.failures)) -}}
{{- $_ := set $env "PEER_BREAKER_OPEN_FOR" .v.peerBreaker.openFor -}}
{{- end -}}
{{- if .f.deliversWebhooks -}}
{{- $wh := .v.webhooks -}}
{{- $_ := set $env "WEBHOOKS_MAX_PER_CLIENT" (toString (int $wh.maxPerClient)) -}}
{{- $_ := set $env "WEBHOOKS_WORKERS" (toString (int $wh.workers)) -}}
{{- $_ := set $env "WEBHOOKS_MAX_IN_FLIGHT" (toString (int $wh.maxInFlight)) -}}
{{- $_ := set $env "WEBHOOKS_ALLOWED_ORIGINS" (join "," $wh.allowedOrigins) -}}
{{- end -}}
{{- if eq .f.kind "gateway" -}}
{{- range .f.upstreams -}}
{{- $_ := set $env (printf "UPSTREAM_%s" (include "registry-lib.envName" .)) (include "registry-lib.url" .) -}}
{{- end -}}
{{- $up := .v.upstream -}}
{{- $_ := set $env "UPSTREAM_TIMEOUT" $up.timeout -}}
{{- $_ := set $env "UPSTREAM_IDLE_TIMEOUT" $up.idleTimeout -}}
{{- $timeouts := list -}}
{{- $idle := list -}}
{{- range $resource, $d := $up.routes -}}
{{- with $d.timeout -}}{{- $timeouts = append $timeouts (printf "%s=%s" $resource .) -}}{{- end -}}
{{- with $d.idleTimeout -}}{{- $idle = append $idle (printf "%s=%s" $resource .) -}}{{- end -}}
{{- end -}}
{{- $_ := set $env "UPSTREAM_ROUTE_TIMEOUTS" (join "," $timeouts) -}}
{{- $_ := set $env "UPSTREAM_ROUTE_IDLE_TIMEOUTS" (join "," $idle) -}}
{{- $_ := set $env "UPSTREAM_BREAKER_FAILURES" (toString (int $up.breaker.failures)) -}}
{{- $_ := set $env "UPSTREAM_BREAKER_OPEN_FOR" $up.breaker.openFor -}}
{{- $rl := .v.rateLimit -}}
{{- if and $rl.enabled (not .g.redis.enabled) -}}
{{- fail "api-gateway.rateLimit.enabled needs global.redis.enabled: the rate-limit budgets are kept in Redis (set api-gateway.rateLimit.enabled=false to run without limits)" -}}
{{- end -}}
{{- $_ := set $env "RATE_LIMIT_ENABLED" (toString $rl.enabled) -}}
{{- $_ := set $env "RATE_LIMIT_KEY_PREFIX" (printf "api-gateway:%s:" .g.environment) -}}
{{- $_ := set $env "RATE_LIMIT_DEFAULT" $rl.default -}}
{{- $_ := set $env "RATE_LIMIT_UNAUTHENTICATED" $rl.unauthenticated -}}
{{- $_ := set $env "RATE_LIMIT_TIMEOUT" $rl.timeout -}}
{{- /* While Redis cannot answer, each replica keeps a client to the budget divided by this: the
       fewest replicas that run, so that no client is refused within its budget for Redis's sake
       (with more running, the shares add up to more than the budget until Redis is back). */ -}}
{{- $_ := set $env "RATE_LIMIT_REPLICAS" (toString (ternary (int .v.autoscaling.minReplicas) (int .v.replicas) .v.autoscaling.enabled)) -}}
{{- $_ := set $env "RATE_LIMIT_PROBES" $rl.probes -}}
{{- $clients := list -}}
{{- range $sub, $budget := $rl.clients -}}
{{- $clients = append $clients (printf "%s=%s" $sub $budget) -}}
{{- end -}}
{{- $_ := set $env "RATE_LIMIT_CLIENTS" (join "," $clients) -}}
{{- $_ := set $env "RATE_LIMIT_ITEMS" $rl.items -}}
{{- $clientItems := list -}}
{{- range $sub, $budget := $rl.clientItems -}}
{{- $clientItems = append $clientItems (printf "%s=%s" $sub $budget) -}}
{{- end -}}
{{- $_ := set $env "RATE_LIMIT_CLIENT_ITEMS" (join "," $clientItems) -}}
{{- $_ := set $env "RATE_LIMIT_TRUSTED_PROXIES" (join "," (concat .g.ingress.proxyCIDRs $rl.trustedProxies | uniq)) -}}
{{- end -}}
{{- if eq .f.kind "idp" -}}
{{- $_ := set $env "ISSUER" (required "global.oidc.issuer is required" .g.oidc.issuer) -}}
{{- $_ := set $env "TOKEN_TTL" .v.tokenTTL -}}
{{- $_ := set $env "TRUSTED_PROXIES" (join "," .g.ingress.proxyCIDRs) -}}
{{- $_ := set $env "SIGNING_KEY_FILE" (printf "/var/run/secrets/idp/signing/%s" .v.signingKey.key) -}}
{{- $previous := list -}}
{{- range $i, $p := .v.signingKey.previous -}}
{{- $previous = append $previous (printf "/var/run/secrets/idp/previous-%d/%s" $i ($p.key | default "key.pem")) -}}
{{- end -}}
{{- if $previous -}}
{{- $_ := set $env "PREVIOUS_KEY_FILES" (join "," $previous) -}}
{{- end -}}
{{- end -}}
{{- if eq .f.name "actions" -}}
{{- $_ := set $env "COMPLIANCE_ZONE" .v.compliance.zone -}}
{{- $_ := set $env "COMPLIANCE_ROLL_EVERY" .v.compliance.rollEvery -}}
{{- end -}}
{{- if and (eq .f.name "events") .v.transparency.previousKeys -}}
{{- $_ := set $env "TRANSPARENCY_PREVIOUS_KEYS" (join "," .v.transparency.previousKeys) -}}
{{- end -}}
{{- range $k, $val := .v.extraEnv -}}
{{- $_ := set $env $k (toString $val) -}}
{{- end -}}
{{- toJson $env -}}
{{- end -}}

{{- /* registry-lib.secretEnv: every credential, from existing Secrets only. */ -}}
{{- define "registry-lib.secretEnv" -}}
{{- if has "postgres" .f.needs }}
- name: DATABASE_URL
  valueFrom:
    secretKeyRef:
      name: {{ .v.database.secretName | default (printf "%s-postgres" .name) }}
      key: {{ .g.postgres.secretKey }}
{{- if and .g.postgres.readURLKey (eq .f.kind "service") }}
- name: DATABASE_READ_URL
  valueFrom:
    secretKeyRef:
      name: {{ .v.database.secretName | default (printf "%s-postgres" .name) }}
      key: {{ .g.postgres.readURLKey }}
{{- end }}
{{- with .g.postgres.directURLKey }}
- name: DATABASE_DIRECT_URL
  valueFrom:
    secretKeyRef:
      name: {{ $.v.database.secretName | default (printf "%s-postgres" $.name) }}
      key: {{ . }}
{{- end }}
{{- end }}
{{- if and (has "redis" .f.needs) .g.redis.enabled }}
- name: REDIS_URL
  valueFrom:
    secretKeyRef:
      name: {{ .g.redis.secretName }}
      key: {{ .g.redis.secretKey }}
{{- with .g.redis.sentinel.passwordKey }}
- name: REDIS_SENTINEL_PASSWORD
  valueFrom:
    secretKeyRef:
      name: {{ $.g.redis.secretName }}
      key: {{ . }}
{{- end }}
{{- end }}
{{- if has "s3" .f.needs }}
- name: S3_ACCESS_KEY
  valueFrom:
    secretKeyRef:
      name: {{ .g.objectStore.secretName }}
      key: {{ .g.objectStore.accessKeyKey }}
- name: S3_SECRET_KEY
  valueFrom:
    secretKeyRef:
      name: {{ .g.objectStore.secretName }}
      key: {{ .g.objectStore.secretKeyKey }}
{{- end }}
{{- if has "nats" .f.needs }}
- name: NATS_USER
  valueFrom:
    secretKeyRef:
      name: {{ .g.nats.secretName }}
      key: {{ .g.nats.userKey }}
- name: NATS_PASSWORD
  valueFrom:
    secretKeyRef:
      name: {{ .g.nats.secretName }}
      key: {{ .g.nats.passwordKey }}
{{- end }}
{{- if and (eq .f.name "events") .v.transparency.secretName }}
- name: TRANSPARENCY_SIGNING_KEY
  valueFrom:
    secretKeyRef:
      name: {{ .v.transparency.secretName }}
      key: {{ .v.transparency.key }}
{{- end }}
{{- if .f.peers }}
- name: PEER_CLIENT_ID
  valueFrom:
    secretKeyRef:
      name: {{ .v.peerClient.secretName | default (printf "%s-peer-client" .name) }}
      key: {{ .v.peerClient.clientIDKey }}
- name: PEER_CLIENT_SECRET
  valueFrom:
    secretKeyRef:
      name: {{ .v.peerClient.secretName | default (printf "%s-peer-client" .name) }}
      key: {{ .v.peerClient.clientSecretKey }}
{{- end }}
{{- end -}}

{{- define "registry-lib.podSecurityContext" -}}
runAsNonRoot: true
runAsUser: 65532
runAsGroup: 65532
fsGroup: 65532
seccompProfile:
  type: RuntimeDefault
{{- end -}}

{{- define "registry-lib.containerSecurityContext" -}}
runAsNonRoot: true
privileged: false
allowPrivilegeEscalation: false
readOnlyRootFilesystem: true
capabilities:
  drop: [ALL]
{{- end -}}

{{- define "registry-lib.resources" -}}
requests:
  cpu: {{ .v.resources.requests.cpu | quote }}
  memory: {{ .v.resources.requests.memory | quote }}
limits:
  {{- with .v.resources.limits.cpu }}
  cpu: {{ . | quote }}
  {{- end }}
  memory: {{ .v.resources.limits.memory | quote }}
{{- end -}}

{{- /* registry-lib.global: the environment (library defaults < .Values.global) as JSON, for the umbrella's own templates. */ -}}
{{- define "registry-lib.global" -}}
{{- $defaults := include "registry-lib.defaults" . | fromYaml -}}
{{- include "registry-lib.merge" (list $defaults.global (.Values.global | default dict)) -}}
{{- end -}}
