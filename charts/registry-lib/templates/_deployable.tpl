{{- /*
registry-lib.deployable: everything one deployable needs, from its chart's
context. A deployable's chart has this one line as its only template.
*/ -}}
{{- define "registry-lib.deployable" -}}
{{- $ctx := include "registry-lib.context" . | fromJson -}}
{{- $_ := set $ctx "root" . -}}
{{- $docs := list
  (include "registry-lib.serviceAccount" $ctx)
  (include "registry-lib.configMap" $ctx)
  (include "registry-lib.service" $ctx)
  (include "registry-lib.deployment" $ctx)
  (include "registry-lib.podDisruptionBudget" $ctx)
  (include "registry-lib.horizontalPodAutoscaler" $ctx)
  (include "registry-lib.networkPolicy" $ctx)
  (include "registry-lib.serviceMonitor" $ctx)
  (include "registry-lib.migrationJob" $ctx)
  (include "registry-lib.mesh" $ctx)
-}}
{{- range $docs }}
{{- if trim . }}
---
{{ trim . }}
{{- end }}
{{- end }}
{{- end -}}

{{- define "registry-lib.serviceAccount" -}}
apiVersion: v1
kind: ServiceAccount
metadata:
  name: {{ .name }}
  labels:
    {{- include "registry-lib.labels" . | nindent 4 }}
# The binaries never call the Kubernetes API.
automountServiceAccountToken: false
{{- end -}}

{{- define "registry-lib.configMap" -}}
apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .name }}
  labels:
    {{- include "registry-lib.labels" . | nindent 4 }}
data:
  {{- range $k, $v := include "registry-lib.config" . | fromJson }}
  {{ $k }}: {{ $v | toString | quote }}
  {{- end }}
{{- end -}}

{{- define "registry-lib.service" -}}
apiVersion: v1
kind: Service
metadata:
  name: {{ .name }}
  labels:
    {{- include "registry-lib.labels" . | nindent 4 }}
spec:
  type: ClusterIP
  selector:
    {{- include "registry-lib.selector" . | nindent 4 }}
  ports:
    - name: http
      port: 8080
      targetPort: http
      protocol: TCP
      appProtocol: http
    - name: metrics
      port: 9090
      targetPort: metrics
      protocol: TCP
      appProtocol: http
{{- end -}}

{{- define "registry-lib.deployment" -}}
{{- $grace := add .v.shutdown.preStopSeconds .v.shutdown.delaySeconds .v.shutdown.timeoutSeconds 5 -}}
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ .name }}
  labels:
    {{- include "registry-lib.labels" . | nindent 4 }}
    app.kubernetes.io/component: server
spec:
  {{- if not .v.autoscaling.enabled }}
  replicas: {{ int .v.replicas }}
  {{- end }}
  revisionHistoryLimit: 5
  selector:
    matchLabels:
      {{- include "registry-lib.selector" . | nindent 6 }}
  strategy:
    type: RollingUpdate
    rollingUpdate:
      # A new pod is ready before an old one goes: capacity never drops in a rollout.
      maxUnavailable: 0
      maxSurge: 1
  template:
    metadata:
      labels:
        {{- include "registry-lib.labels" . | nindent 8 }}
        app.kubernetes.io/component: server
        {{- if eq .g.mesh.provider "istio" }}
        sidecar.istio.io/inject: "true"
        {{- end }}
        {{- with .v.podLabels }}
        {{- toYaml . | nindent 8 }}
        {{- end }}
      annotations:
        checksum/config: {{ include "registry-lib.config" . | sha256sum }}
        kubectl.kubernetes.io/default-container: {{ .name }}
        {{- if eq .g.mesh.provider "linkerd" }}
        linkerd.io/inject: enabled
        {{- end }}
        {{- with .v.podAnnotations }}
        {{- toYaml . | nindent 8 }}
        {{- end }}
    spec:
      serviceAccountName: {{ .name }}
      automountServiceAccountToken: false
      enableServiceLinks: false
      # preStop + SHUTDOWN_DELAY + SHUTDOWN_TIMEOUT, and a margin: in-flight requests finish.
      terminationGracePeriodSeconds: {{ $grace }}
      securityContext:
        {{- include "registry-lib.podSecurityContext" . | nindent 8 }}
      {{- with .g.image.pullSecrets }}
      imagePullSecrets:
        {{- range . }}
        - name: {{ . }}
        {{- end }}
      {{- end }}
      {{- with .v.priorityClassName }}
      priorityClassName: {{ . }}
      {{- end }}
      {{- with .v.nodeSelector }}
      nodeSelector:
        {{- toYaml . | nindent 8 }}
      {{- end }}
      {{- with .v.tolerations }}
      tolerations:
        {{- toYaml . | nindent 8 }}
      {{- end }}
      {{- with .v.affinity }}
      affinity:
        {{- toYaml . | nindent 8 }}
      {{- end }}
      {{- if .v.topologySpread.enabled }}
      topologySpreadConstraints:
        - maxSkew: 1
          topologyKey: kubernetes.io/hostname
          whenUnsatisfiable: {{ .v.topologySpread.nodes }}
          labelSelector:
            matchLabels:
              {{- include "registry-lib.selector" . | nindent 14 }}
          matchLabelKeys: [pod-template-hash]
        - maxSkew: 1
          topologyKey: topology.kubernetes.io/zone
          whenUnsatisfiable: {{ .v.topologySpread.zones }}
          labelSelector:
            matchLabels:
              {{- include "registry-lib.selector" . | nindent 14 }}
          matchLabelKeys: [pod-template-hash]
      {{- end }}
      containers:
        - name: {{ .name }}
          image: {{ include "registry-lib.image" . | quote }}
          imagePullPolicy: {{ .g.image.pullPolicy }}
          ports:
            - name: http
              containerPort: 8080
              protocol: TCP
            - name: metrics
              containerPort: 9090
              protocol: TCP
          envFrom:
            - configMapRef:
                name: {{ .name }}
          {{- with include "registry-lib.secretEnv" . }}
          env:
            {{- . | nindent 12 }}
          {{- end }}
          # A server listens once its dependencies answer (a service migrates first): startup allows
          # for database.startup-wait and the migrations.
          startupProbe:
            httpGet:
              path: /healthz
              port: http
            periodSeconds: 5
            failureThreshold: 36
          livenessProbe:
            httpGet:
              path: /healthz
              port: http
            periodSeconds: 10
            timeoutSeconds: 2
            failureThreshold: 3
          readinessProbe:
            httpGet:
              path: /readyz
              port: http
            periodSeconds: 5
            timeoutSeconds: 2
            failureThreshold: 2
          {{- if gt (int .v.shutdown.preStopSeconds) 0 }}
          lifecycle:
            # No shell in the image: the kubelet's own sleep keeps the pod serving while
            # endpoints and load balancers forget it.
            preStop:
              sleep:
                seconds: {{ int .v.shutdown.preStopSeconds }}
          {{- end }}
          resources:
            {{- include "registry-lib.resources" . | nindent 12 }}
          securityContext:
            {{- include "registry-lib.containerSecurityContext" . | nindent 12 }}
          volumeMounts:
            - name: tmp
              mountPath: /tmp
            {{- if eq .f.kind "idp" }}
            - name: signing-key
              mountPath: /var/run/secrets/idp/signing
              readOnly: true
            {{- range $i, $p := .v.signingKey.previous }}
            - name: previous-key-{{ $i }}
              mountPath: /var/run/secrets/idp/previous-{{ $i }}
              readOnly: true
            {{- end }}
            {{- end }}
      volumes:
        - name: tmp
          emptyDir:
            sizeLimit: 64Mi
        {{- if eq .f.kind "idp" }}
        - name: signing-key
          secret:
            secretName: {{ .v.signingKey.secretName }}
            defaultMode: 0440
            items:
              - key: {{ .v.signingKey.key }}
                path: {{ .v.signingKey.key }}
        {{- range $i, $p := .v.signingKey.previous }}
        - name: previous-key-{{ $i }}
          secret:
            secretName: {{ $p.secretName }}
            defaultMode: 0440
            items:
              - key: {{ $p.key | default "key.pem" }}
                path: {{ $p.key | default "key.pem" }}
        {{- end }}
        {{- end }}
{{- end -}}

{{- define "registry-lib.podDisruptionBudget" -}}
{{- if .v.podDisruptionBudget.enabled -}}
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata:
  name: {{ .name }}
  labels:
    {{- include "registry-lib.labels" . | nindent 4 }}
spec:
  maxUnavailable: {{ int .v.podDisruptionBudget.maxUnavailable }}
  selector:
    matchLabels:
      {{- include "registry-lib.selector" . | nindent 6 }}
{{- end -}}
{{- end -}}

{{- define "registry-lib.horizontalPodAutoscaler" -}}
{{- if .v.autoscaling.enabled -}}
{{- if lt (int .v.autoscaling.maxReplicas) (int .v.autoscaling.minReplicas) -}}
{{- fail (printf "%s: autoscaling.maxReplicas is below minReplicas" .name) -}}
{{- end -}}
apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata:
  name: {{ .name }}
  labels:
    {{- include "registry-lib.labels" . | nindent 4 }}
spec:
  scaleTargetRef:
    apiVersion: apps/v1
    kind: Deployment
    name: {{ .name }}
  minReplicas: {{ int .v.autoscaling.minReplicas }}
  maxReplicas: {{ int .v.autoscaling.maxReplicas }}
  metrics:
    - type: Resource
      resource:
        name: cpu
        target:
          type: Utilization
          averageUtilization: {{ int .v.autoscaling.targetCPUUtilizationPercentage }}
{{- end -}}
{{- end -}}

{{- define "registry-lib.serviceMonitor" -}}
{{- if .g.monitoring.serviceMonitor.enabled -}}
apiVersion: monitoring.coreos.com/v1
kind: ServiceMonitor
metadata:
  name: {{ .name }}
  labels:
    {{- include "registry-lib.labels" . | nindent 4 }}
    {{- with .g.monitoring.serviceMonitor.labels }}
    {{- toYaml . | nindent 4 }}
    {{- end }}
spec:
  selector:
    matchLabels:
      {{- include "registry-lib.selector" . | nindent 6 }}
  endpoints:
    - port: metrics
      path: /metrics
      interval: {{ .g.monitoring.serviceMonitor.interval }}
{{- end -}}
{{- end -}}

{{- /*
The migration Job runs `<name> migrate` before any pod of a release changes,
so a migration that fails stops the release. It is a hook: on a first
install it runs before the release's ConfigMap and ServiceAccount exist, so
it carries its own settings and uses none of them; a mesh proxy would keep
it from ever completing, so it has none.
*/ -}}
{{- define "registry-lib.migrationJob" -}}
{{- if and (has "postgres" .f.needs) .v.migration.enabled -}}
apiVersion: batch/v1
kind: Job
metadata:
  name: {{ .name }}-migrate
  labels:
    {{- include "registry-lib.labels" . | nindent 4 }}
    app.kubernetes.io/component: migration
  annotations:
    helm.sh/hook: pre-install,pre-upgrade
    helm.sh/hook-weight: "-5"
    helm.sh/hook-delete-policy: before-hook-creation,hook-succeeded
spec:
  backoffLimit: {{ int .v.migration.backoffLimit }}
  activeDeadlineSeconds: {{ int .v.migration.activeDeadlineSeconds }}
  template:
    metadata:
      labels:
        {{- include "registry-lib.labels" . | nindent 8 }}
        app.kubernetes.io/component: migration
        sidecar.istio.io/inject: "false"
      annotations:
        linkerd.io/inject: disabled
    spec:
      restartPolicy: Never
      automountServiceAccountToken: false
      enableServiceLinks: false
      securityContext:
        {{- include "registry-lib.podSecurityContext" . | nindent 8 }}
      {{- with .g.image.pullSecrets }}
      imagePullSecrets:
        {{- range . }}
        - name: {{ . }}
        {{- end }}
      {{- end }}
      containers:
        - name: migrate
          image: {{ include "registry-lib.image" . | quote }}
          imagePullPolicy: {{ .g.image.pullPolicy }}
          args: [migrate]
          env:
            - name: DATABASE_SCHEMA
              value: {{ include "registry-lib.schema" . | quote }}
            - name: LOG_LEVEL
              value: {{ .v.log.level | quote }}
            - name: LOG_FORMAT
              value: {{ .v.log.format | quote }}
            - name: DATABASE_URL
              valueFrom:
                secretKeyRef:
                  name: {{ .v.database.secretName | default (printf "%s-postgres" .name) }}
                  key: {{ .g.postgres.secretKey }}
            {{- with .g.postgres.directURLKey }}
            {{- /* Migrations take a session lock: past any pooler. */}}
            - name: DATABASE_DIRECT_URL
              valueFrom:
                secretKeyRef:
                  name: {{ $.v.database.secretName | default (printf "%s-postgres" $.name) }}
                  key: {{ . }}
            {{- end }}
          resources:
            {{- include "registry-lib.resources" . | nindent 12 }}
          securityContext:
            {{- include "registry-lib.containerSecurityContext" . | nindent 12 }}
          volumeMounts:
            - name: tmp
              mountPath: /tmp
      volumes:
        - name: tmp
          emptyDir:
            sizeLimit: 64Mi
{{- end -}}
{{- end -}}
