{{- /*
Who may reach whom. A service's API is reached by the gateway and by its
peers only; the gateway and the identity provider by their clients; every
metrics port by Prometheus. NetworkPolicy says it at the network level
(with the umbrella's default-deny, nothing else moves); a mesh says it again
with workload identities.
*/ -}}

{{- /* registry-lib.callers: the deployables allowed to call this one's API, or "*" for anyone. */ -}}
{{- define "registry-lib.callers" -}}
{{- if eq .f.kind "service" -}}
{{- toJson (concat (list "api-gateway") .f.callers | uniq) -}}
{{- else -}}
{{- toJson (list "*") -}}
{{- end -}}
{{- end -}}

{{- define "registry-lib.networkPolicy" -}}
{{- if .g.networkPolicy.enabled -}}
{{- $np := .g.networkPolicy -}}
{{- $callers := include "registry-lib.callers" . | fromJsonArray -}}
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata:
  name: {{ .name }}
  labels:
    {{- include "registry-lib.labels" . | nindent 4 }}
spec:
  # The server's pods and its migration Job's.
  podSelector:
    matchLabels:
      app.kubernetes.io/name: {{ .name }}
  policyTypes: [Ingress, Egress]
  ingress:
    {{- if eq .f.kind "service" }}
    - from:
        - podSelector:
            matchExpressions:
              - key: app.kubernetes.io/name
                operator: In
                values: {{ toJson $callers }}
              - key: app.kubernetes.io/component
                operator: In
                values: [server]
      ports:
        - port: http
          protocol: TCP
    {{- else if eq .f.kind "gateway" }}
    - ports:
        - port: http
          protocol: TCP
      {{- with $np.gatewayFrom }}
      from:
        {{- toYaml . | nindent 8 }}
      {{- end }}
    {{- else }}
    - ports:
        - port: http
          protocol: TCP
      {{- with $np.idpFrom }}
      from:
        - podSelector:
            matchLabels:
              app.kubernetes.io/part-of: asset-registry
        {{- toYaml . | nindent 8 }}
      {{- end }}
    {{- end }}
    - ports:
        - port: metrics
          protocol: TCP
      {{- with $np.metricsFrom }}
      from:
        {{- toYaml . | nindent 8 }}
      {{- end }}
  egress:
    {{- with $np.dnsEgress }}
    {{- toYaml . | nindent 4 }}
    {{- end }}
    {{- if has "postgres" .f.needs }}
    {{- with $np.postgresEgress }}
    {{- toYaml . | nindent 4 }}
    {{- end }}
    {{- end }}
    {{- if and (has "redis" .f.needs) .g.redis.enabled }}
    {{- with $np.redisEgress }}
    {{- toYaml . | nindent 4 }}
    {{- end }}
    {{- end }}
    {{- if has "s3" .f.needs }}
    {{- with $np.objectStoreEgress }}
    {{- toYaml . | nindent 4 }}
    {{- end }}
    {{- end }}
    {{- if has "nats" .f.needs }}
    {{- with $np.natsEgress }}
    {{- toYaml . | nindent 4 }}
    {{- end }}
    {{- end }}
    {{- if or .f.verifiesTokens .f.peers }}
    {{- if and .g.oidc.inClusterIdP (not .g.oidc.jwksURL) }}
    # Token keys (and, for peers, tokens) from the identity provider.
    - to:
        - podSelector:
            matchLabels:
              app.kubernetes.io/name: idp
              app.kubernetes.io/component: server
      ports:
        - port: 8080
          protocol: TCP
    {{- else }}
    {{- with $np.issuerEgress }}
    {{- toYaml . | nindent 4 }}
    {{- end }}
    {{- end }}
    {{- end }}
    {{- if .f.deliversWebhooks }}
    {{- $egress := .v.webhooks.egress }}
    # Webhook receivers: public addresses on the listed ports. The ranges the
    # service refuses to deliver to are excepted (loopback, private, link-local
    # and metadata, carrier-grade NAT, multicast, reserved), unless the operator
    # lists a network of them in webhooks.egress.privateRanges.
    - to:
        - ipBlock:
            cidr: 0.0.0.0/0
            except: [0.0.0.0/8, 10.0.0.0/8, 100.64.0.0/10, 127.0.0.0/8, 169.254.0.0/16, 172.16.0.0/12, 192.0.0.0/24, 192.168.0.0/16, 198.18.0.0/15, 224.0.0.0/4, 240.0.0.0/4]
        - ipBlock:
            cidr: ::/0
            except: ["::/128", "::1/128", "::ffff:0:0/96", "64:ff9b:1::/48", "100::/64", "2001::/23", "2001:db8::/32", "2002::/16", "fc00::/7", "fe80::/10", "ff00::/8"]
        {{- range $egress.privateRanges }}
        - ipBlock:
            cidr: {{ . | quote }}
        {{- end }}
      ports:
        {{- range $egress.ports }}
        - port: {{ int . }}
          protocol: TCP
        {{- end }}
    {{- end }}
    {{- $targets := ternary .f.upstreams .f.peers (eq .f.kind "gateway") }}
    {{- if $targets }}
    - to:
        - podSelector:
            matchExpressions:
              - key: app.kubernetes.io/name
                operator: In
                values: {{ toJson $targets }}
              - key: app.kubernetes.io/component
                operator: In
                values: [server]
      ports:
        - port: 8080
          protocol: TCP
    {{- end }}
    {{- if ne .g.mesh.provider "none" }}
    # The mesh proxy's control plane.
    - to:
        - namespaceSelector:
            matchLabels:
              kubernetes.io/metadata.name: {{ include "registry-lib.meshNamespace" . }}
      {{- if eq .g.mesh.provider "istio" }}
      ports:
        - port: 15012
          protocol: TCP
      {{- else }}
      ports:
        - port: 8080
          protocol: TCP
        - port: 8086
          protocol: TCP
        - port: 8090
          protocol: TCP
      {{- end }}
    {{- end }}
{{- end -}}
{{- end -}}

{{- define "registry-lib.meshNamespace" -}}
{{- .g.mesh.controlPlaneNamespace | default (ternary "istio-system" "linkerd" (eq .g.mesh.provider "istio")) -}}
{{- end -}}

{{- define "registry-lib.mesh" -}}
{{- if eq .g.mesh.provider "istio" -}}
{{- include "registry-lib.istio" . -}}
{{- else if eq .g.mesh.provider "linkerd" -}}
{{- include "registry-lib.linkerd" . -}}
{{- end -}}
{{- end -}}

{{- define "registry-lib.istio" -}}
{{- $callers := include "registry-lib.callers" . | fromJsonArray -}}
{{- $ns := .root.Release.Namespace -}}
{{- $td := .g.mesh.trustDomain -}}
apiVersion: security.istio.io/v1
kind: PeerAuthentication
metadata:
  name: {{ .name }}
  labels:
    {{- include "registry-lib.labels" . | nindent 4 }}
spec:
  selector:
    matchLabels:
      {{- include "registry-lib.selector" . | nindent 6 }}
  mtls:
    mode: STRICT
  # Prometheus scrapes from outside the mesh.
  portLevelMtls:
    "9090":
      mode: PERMISSIVE
---
apiVersion: security.istio.io/v1
kind: AuthorizationPolicy
metadata:
  name: {{ .name }}
  labels:
    {{- include "registry-lib.labels" . | nindent 4 }}
spec:
  selector:
    matchLabels:
      {{- include "registry-lib.selector" . | nindent 6 }}
  action: ALLOW
  rules:
    {{- if has "*" $callers }}
    - to:
        - operation:
            ports: ["8080"]
    {{- else }}
    - from:
        - source:
            principals:
              {{- range $callers }}
              - {{ printf "%s/ns/%s/sa/%s" $td $ns . | quote }}
              {{- end }}
      to:
        - operation:
            ports: ["8080"]
    {{- end }}
    - to:
        - operation:
            ports: ["9090"]
            paths: [/metrics]
{{- end -}}

{{- define "registry-lib.linkerd" -}}
{{- $callers := include "registry-lib.callers" . | fromJsonArray -}}
{{- $ns := .root.Release.Namespace -}}
{{- $domain := .g.mesh.identityDomain -}}
apiVersion: policy.linkerd.io/v1beta3
kind: Server
metadata:
  name: {{ .name }}-http
  labels:
    {{- include "registry-lib.labels" . | nindent 4 }}
spec:
  podSelector:
    matchLabels:
      {{- include "registry-lib.selector" . | nindent 6 }}
  port: http
  proxyProtocol: HTTP/1
---
apiVersion: policy.linkerd.io/v1beta3
kind: Server
metadata:
  name: {{ .name }}-metrics
  labels:
    {{- include "registry-lib.labels" . | nindent 4 }}
spec:
  podSelector:
    matchLabels:
      {{- include "registry-lib.selector" . | nindent 6 }}
  port: metrics
  proxyProtocol: HTTP/1
---
{{- if has "*" $callers }}
apiVersion: policy.linkerd.io/v1alpha1
kind: NetworkAuthentication
metadata:
  name: {{ .name }}-anyone
  labels:
    {{- include "registry-lib.labels" . | nindent 4 }}
spec:
  networks:
    - cidr: 0.0.0.0/0
    - cidr: ::/0
{{- else }}
apiVersion: policy.linkerd.io/v1alpha1
kind: MeshTLSAuthentication
metadata:
  name: {{ .name }}-callers
  labels:
    {{- include "registry-lib.labels" . | nindent 4 }}
spec:
  identities:
    {{- range $callers }}
    - {{ printf "%s.%s.serviceaccount.identity.linkerd.%s" . $ns $domain | quote }}
    {{- end }}
{{- end }}
---
apiVersion: policy.linkerd.io/v1alpha1
kind: AuthorizationPolicy
metadata:
  name: {{ .name }}-http
  labels:
    {{- include "registry-lib.labels" . | nindent 4 }}
spec:
  targetRef:
    group: policy.linkerd.io
    kind: Server
    name: {{ .name }}-http
  requiredAuthenticationRefs:
    {{- if has "*" $callers }}
    - group: policy.linkerd.io
      kind: NetworkAuthentication
      name: {{ .name }}-anyone
    {{- else }}
    - group: policy.linkerd.io
      kind: MeshTLSAuthentication
      name: {{ .name }}-callers
    {{- end }}
---
apiVersion: policy.linkerd.io/v1alpha1
kind: NetworkAuthentication
metadata:
  name: {{ .name }}-scrapers
  labels:
    {{- include "registry-lib.labels" . | nindent 4 }}
spec:
  networks:
    - cidr: 0.0.0.0/0
    - cidr: ::/0
---
apiVersion: policy.linkerd.io/v1alpha1
kind: AuthorizationPolicy
metadata:
  name: {{ .name }}-metrics
  labels:
    {{- include "registry-lib.labels" . | nindent 4 }}
spec:
  targetRef:
    group: policy.linkerd.io
    kind: Server
    name: {{ .name }}-metrics
  requiredAuthenticationRefs:
    - group: policy.linkerd.io
      kind: NetworkAuthentication
      name: {{ .name }}-scrapers
{{- end -}}
