{{/* The chart's name, or nameOverride. */}}
{{- define "sluice.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* The release's objects' base name: <release>-<chart> unless the release name has it. */}}
{{- define "sluice.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- $name := default .Chart.Name .Values.nameOverride -}}
{{- if contains $name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{- define "sluice.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* Labels on every object. */}}
{{- define "sluice.labels" -}}
helm.sh/chart: {{ include "sluice.chart" . }}
{{ include "sluice.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: sluice
{{- end -}}

{{/* The labels a Service or a workload selects its pods by. */}}
{{- define "sluice.selectorLabels" -}}
app.kubernetes.io/name: {{ include "sluice.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "sluice.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- default (include "sluice.fullname" .) .Values.serviceAccount.name -}}
{{- else -}}
{{- default "default" .Values.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{- define "sluice.image" -}}
{{- $tag := default .Chart.AppVersion .Values.image.tag -}}
{{- if eq $tag "latest" -}}
{{- fail "image.tag: name a version, not latest" -}}
{{- end -}}
{{- printf "%s:%s" .Values.image.repository $tag -}}
{{- end -}}

{{- define "sluice.secretName" -}}
{{- default (printf "%s-secrets" (include "sluice.fullname" .)) .Values.secrets.existingSecret -}}
{{- end -}}

{{/* True (non-empty) when the pods mount a Secret. */}}
{{- define "sluice.hasSecret" -}}
{{- if or .Values.secrets.existingSecret .Values.secrets.files .Values.users -}}true{{- end -}}
{{- end -}}

{{/* The checks that stop a bad set of values before anything is rendered. */}}
{{- define "sluice.validate" -}}
{{- if not (has .Values.mode (list "native" "upstream")) -}}
{{- fail (printf "mode: native or upstream, not %q" .Values.mode) -}}
{{- end -}}
{{- if and (eq .Values.mode "native") (gt (int .Values.replicaCount) 1) -}}
{{- fail "replicaCount: the native mode runs one pod (its log is on one volume); use mode=upstream to scale out" -}}
{{- end -}}
{{- if and (eq .Values.mode "upstream") (not .Values.upstream.bootstrapServers) -}}
{{- fail "upstream.bootstrapServers: the upstream mode needs the Kafka cluster's bootstrap servers" -}}
{{- end -}}
{{- if and (eq .Values.mode "native") .Values.persistence.enabled (not .Values.persistence.size) -}}
{{- fail "persistence.size: needed when persistence.enabled" -}}
{{- end -}}
{{- if and .Values.users (eq .Values.mode "upstream") -}}
{{- fail "users: set users on the Kafka cluster in upstream mode" -}}
{{- end -}}
{{- end -}}

{{/* sluice's command line. */}}
{{- define "sluice.args" -}}
- --data-dir=/data
- --config=/etc/sluice/sluice.properties
- --log-level={{ .Values.logLevel }}
{{- if (include "sluice.kafkaPort" .) }}
- --kafka=0.0.0.0:{{ (include "sluice.kafkaPort" .) }}
{{- if .Values.kafka.advertisedHost }}
- --advertise-kafka={{ .Values.kafka.advertisedHost }}:{{ (include "sluice.kafkaPort" .) }}
{{- else if eq .Values.mode "native" }}
- --advertise-kafka=$(POD_NAME).{{ include "sluice.fullname" . }}-headless.$(POD_NAMESPACE).svc.{{ .Values.kafka.clusterDomain }}:{{ (include "sluice.kafkaPort" .) }}
{{- else }}
- --advertise-kafka=$(POD_IP):{{ (include "sluice.kafkaPort" .) }}
{{- end }}
{{- else }}
- --kafka=off
{{- end }}
{{- if .Values.ports.http }}
- --http=0.0.0.0:{{ .Values.ports.http }}
{{- else }}
- --http=off
{{- end }}
{{- if (include "sluice.sqsPort" .) }}
- --sqs=0.0.0.0:{{ (include "sluice.sqsPort" .) }}
{{- else }}
- --sqs=off
{{- end }}
{{- range .Values.extraArgs }}
- {{ . | quote }}
{{- end }}
{{- end -}}

{{/* The container spec both workloads share. */}}
{{- define "sluice.container" -}}
- name: sluice
  image: {{ include "sluice.image" . }}
  imagePullPolicy: {{ .Values.image.pullPolicy }}
  args:
    {{- include "sluice.args" . | nindent 4 }}
  env:
    - name: POD_NAME
      valueFrom:
        fieldRef:
          fieldPath: metadata.name
    - name: POD_NAMESPACE
      valueFrom:
        fieldRef:
          fieldPath: metadata.namespace
    - name: POD_IP
      valueFrom:
        fieldRef:
          fieldPath: status.podIP
    {{- with .Values.extraEnv }}
    {{- toYaml . | nindent 4 }}
    {{- end }}
  ports:
    {{- if (include "sluice.kafkaPort" .) }}
    - name: kafka
      containerPort: {{ (include "sluice.kafkaPort" .) }}
      protocol: TCP
    {{- end }}
    {{- if .Values.ports.http }}
    - name: http
      containerPort: {{ .Values.ports.http }}
      protocol: TCP
    {{- end }}
    {{- if (include "sluice.sqsPort" .) }}
    - name: sqs
      containerPort: {{ (include "sluice.sqsPort" .) }}
      protocol: TCP
    {{- end }}
  {{- if .Values.ports.http }}
  startupProbe:
    httpGet:
      path: /healthz
      port: http
    periodSeconds: {{ .Values.probes.startup.periodSeconds }}
    timeoutSeconds: {{ .Values.probes.startup.timeoutSeconds }}
    failureThreshold: {{ .Values.probes.startup.failureThreshold }}
  livenessProbe:
    httpGet:
      path: /healthz
      port: http
    initialDelaySeconds: {{ .Values.probes.liveness.initialDelaySeconds }}
    periodSeconds: {{ .Values.probes.liveness.periodSeconds }}
    timeoutSeconds: {{ .Values.probes.liveness.timeoutSeconds }}
    failureThreshold: {{ .Values.probes.liveness.failureThreshold }}
  readinessProbe:
    httpGet:
      path: /readyz
      port: http
    periodSeconds: {{ .Values.probes.readiness.periodSeconds }}
    timeoutSeconds: {{ .Values.probes.readiness.timeoutSeconds }}
    failureThreshold: {{ .Values.probes.readiness.failureThreshold }}
  {{- else }}
  {{- $port := ternary "kafka" "sqs" (gt (int (include "sluice.kafkaPort" .)) 0) }}
  livenessProbe:
    tcpSocket:
      port: {{ $port }}
    initialDelaySeconds: {{ .Values.probes.liveness.initialDelaySeconds }}
    periodSeconds: {{ .Values.probes.liveness.periodSeconds }}
  readinessProbe:
    tcpSocket:
      port: {{ $port }}
    periodSeconds: {{ .Values.probes.readiness.periodSeconds }}
  {{- end }}
  resources:
    {{- toYaml .Values.resources | nindent 4 }}
  securityContext:
    {{- toYaml .Values.securityContext | nindent 4 }}
  volumeMounts:
    - name: data
      mountPath: /data
    - name: config
      mountPath: /etc/sluice/sluice.properties
      subPath: sluice.properties
      readOnly: true
    - name: tmp
      mountPath: /tmp
    {{- if include "sluice.hasSecret" . }}
    - name: secrets
      mountPath: /etc/sluice/secrets
      readOnly: true
    {{- end }}
{{- end -}}

{{/* The pod-level parts both workloads share (after the containers). */}}
{{- define "sluice.podCommon" -}}
serviceAccountName: {{ include "sluice.serviceAccountName" . }}
{{- /* Kubernetes would put FOO_SERVICE_HOST, FOO_PORT... into the pod for every Service of the
namespace; the Service named sluice gives SLUICE_PORT=tcp://..., which is no setting. sluice
ignores such variables with a warning; the chart keeps them out of its pods altogether. */}}
enableServiceLinks: false
terminationGracePeriodSeconds: {{ .Values.terminationGracePeriodSeconds }}
securityContext:
  {{- toYaml .Values.podSecurityContext | nindent 2 }}
{{- with .Values.imagePullSecrets }}
imagePullSecrets:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .Values.priorityClassName }}
priorityClassName: {{ . }}
{{- end }}
{{- with .Values.nodeSelector }}
nodeSelector:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .Values.tolerations }}
tolerations:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .Values.affinity }}
affinity:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .Values.topologySpreadConstraints }}
topologySpreadConstraints:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- end -}}

{{/* Volumes other than data. */}}
{{- define "sluice.volumes" -}}
- name: config
  configMap:
    name: {{ include "sluice.fullname" . }}
- name: tmp
  emptyDir: {}
{{- if include "sluice.hasSecret" . }}
- name: secrets
  secret:
    secretName: {{ include "sluice.secretName" . }}
    defaultMode: 0400
{{- end }}
{{- end -}}

{{/* The Kafka and SQS ports sluice serves: none in upstream mode, where the Kafka port as a
proxy and SQS queues shared by a fleet are not served yet (sluice refuses --kafka and --sqs
there). Empty when off. */}}
{{- define "sluice.kafkaPort" -}}
{{- if and .Values.ports.kafka (eq .Values.mode "native") -}}{{ .Values.ports.kafka }}{{- end -}}
{{- end -}}
{{- define "sluice.sqsPort" -}}
{{- if and .Values.ports.sqs (eq .Values.mode "native") -}}{{ .Values.ports.sqs }}{{- end -}}
{{- end -}}
