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
{{- if not (has .Values.kafka.protocol (list "PLAINTEXT" "SSL" "SASL_PLAINTEXT" "SASL_SSL")) -}}
{{- fail (printf "kafka.protocol: PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL, not %q" .Values.kafka.protocol) -}}
{{- end -}}
{{- if eq .Values.mode "upstream" -}}
{{- include "sluice.validateUpstream" . -}}
{{- end -}}
{{- end -}}

{{/* Upstream mode: the Kafka proxy's addresses and the SQS fleet. */}}
{{- define "sluice.validateUpstream" -}}
{{- range $key := list "proxy.node.port.base" "proxy.sni.host.pattern" "sqs.fleet.url" -}}
{{- if hasKey $.Values.config $key -}}
{{- fail (printf "config.%s: the chart sets it from its values (proxy.nodePortBase, proxy.sniHostPattern, sqs.fleetHost) so that the pods, the Service and sluice agree" $key) -}}
{{- end -}}
{{- end -}}
{{- if .Values.ports.kafka -}}
{{- if not .Values.kafka.advertisedHost -}}
{{- fail "kafka.advertisedHost: the Kafka proxy (upstream mode) tells clients this host for the bootstrap and every broker; set the name clients reach the Service by (e.g. the LoadBalancer's DNS name), or ports.kafka=0 to turn the proxy off" -}}
{{- end -}}
{{- $kafkaPort := int .Values.ports.kafka -}}
{{- $pinned := eq .Values.service.type "NodePort" -}}
{{- if and $pinned (or (lt $kafkaPort 30000) (gt $kafkaPort 32767)) -}}
{{- fail (printf "service.type NodePort: Kafka clients are told port %d, which must then be the node port: ports.kafka in 30000-32767" $kafkaPort) -}}
{{- end -}}
{{- if .Values.proxy.sniHostPattern -}}
{{- if not (has .Values.kafka.protocol (list "SSL" "SASL_SSL")) -}}
{{- fail (printf "proxy.sniHostPattern: SNI routing needs TLS; kafka.protocol is %s, set SSL or SASL_SSL" .Values.kafka.protocol) -}}
{{- end -}}
{{- if not (contains "$(nodeId)" .Values.proxy.sniHostPattern) -}}
{{- fail (printf "proxy.sniHostPattern: %q names no broker: put $(nodeId) where the broker id goes (broker-$(nodeId).kafka.example.com)" .Values.proxy.sniHostPattern) -}}
{{- end -}}
{{- if .Values.proxy.nodePortBase -}}
{{- fail "proxy.nodePortBase: SNI routing (proxy.sniHostPattern) serves every broker on ports.kafka; leave nodePortBase at 0" -}}
{{- end -}}
{{- else -}}
{{- if not .Values.upstream.brokerIds -}}
{{- fail "upstream.brokerIds: list the Kafka cluster's broker ids (e.g. {0,1,2}): the Kafka proxy serves broker N on port proxy.nodePortBase + N, which the pods and the Service must expose (or use proxy.sniHostPattern with TLS, one port)" -}}
{{- end -}}
{{- $base := int (include "sluice.nodePortBase" .) -}}
{{- if lt $base 1 -}}
{{- fail (printf "proxy.nodePortBase: a port, 1 to 65535, not %v" .Values.proxy.nodePortBase) -}}
{{- end -}}
{{- $seen := list -}}
{{- range .Values.upstream.brokerIds -}}
{{- if not (regexMatch "^[0-9]+$" (toString .)) -}}
{{- fail (printf "upstream.brokerIds: %q is not a broker id (an integer, 0 or more)" (toString .)) -}}
{{- end -}}
{{- $id := int . -}}
{{- if has $id $seen -}}
{{- fail (printf "upstream.brokerIds: %d is listed twice" $id) -}}
{{- end -}}
{{- $seen = append $seen $id -}}
{{- $port := add $base $id -}}
{{- if gt $port 65535 -}}
{{- fail (printf "upstream.brokerIds: broker %d would be served on port %d (proxy.nodePortBase %d + %d), over 65535; lower proxy.nodePortBase" $id $port $base $id) -}}
{{- end -}}
{{- range $name, $other := dict "ports.kafka" $.Values.ports.kafka "ports.http" $.Values.ports.http "ports.sqs" $.Values.ports.sqs -}}
{{- if and $other (eq $port (int $other)) -}}
{{- fail (printf "upstream.brokerIds: broker %d would be served on port %d, which is %s; move proxy.nodePortBase" $id $port $name) -}}
{{- end -}}
{{- end -}}
{{- if and $pinned (or (lt $port 30000) (gt $port 32767)) -}}
{{- fail (printf "service.type NodePort: Kafka clients are told port %d for broker %d, which must then be the node port: proxy.nodePortBase + the broker ids in 30000-32767" $port $id) -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- if and .Values.ports.sqs (lt (int .Values.terminationGracePeriodSeconds) 35) -}}
{{- fail (printf "terminationGracePeriodSeconds: %v is too short for the SQS fleet: a stopping gateway leaves the queue owner group and closes within about 31 s; killed sooner, the queues it owns wait sqs.fleet.session.timeout.ms for a new owner (35 or more)" .Values.terminationGracePeriodSeconds) -}}
{{- end -}}
{{- end -}}

{{/* Upstream mode with the Kafka proxy on node ports: the port of broker 0 (empty otherwise). */}}
{{- define "sluice.nodePortBase" -}}
{{- if and (eq .Values.mode "upstream") .Values.ports.kafka (not .Values.proxy.sniHostPattern) -}}
{{- if .Values.proxy.nodePortBase -}}{{ int .Values.proxy.nodePortBase }}{{- else -}}{{ add1 (int .Values.ports.kafka) }}{{- end -}}
{{- end -}}
{{- end -}}

{{/* Container or Service ports of the proxy's nodes: node-<id> on nodePortBase + id. `service`
true: Service ports (targetPort, and nodePort with service.type NodePort). */}}
{{- define "sluice.nodePorts" -}}
{{- $ctx := .ctx -}}
{{- $service := .service -}}
{{- with (include "sluice.nodePortBase" $ctx) -}}
{{- $base := int . -}}
{{- range $ctx.Values.upstream.brokerIds }}
- name: node-{{ int . }}
  {{- if $service }}
  port: {{ add $base (int .) }}
  targetPort: node-{{ int . }}
  {{- if eq $ctx.Values.service.type "NodePort" }}
  nodePort: {{ add $base (int .) }}
  {{- end }}
  {{- else }}
  containerPort: {{ add $base (int .) }}
  {{- end }}
  protocol: TCP
{{- end }}
{{- end -}}
{{- end -}}

{{/* sluice's command line. */}}
{{- define "sluice.args" -}}
- --data-dir=/data
- --config=/etc/sluice/sluice.properties
- --log-level={{ .Values.logLevel }}
{{- if (include "sluice.kafkaPort" .) }}
{{- if eq .Values.kafka.protocol "PLAINTEXT" }}
- --kafka=0.0.0.0:{{ (include "sluice.kafkaPort" .) }}
{{- else }}
- --kafka={{ .Values.kafka.protocol }}://0.0.0.0:{{ (include "sluice.kafkaPort" .) }}
{{- end }}
{{- if .Values.kafka.advertisedHost }}
- --advertise-kafka={{ .Values.kafka.advertisedHost }}:{{ (include "sluice.kafkaPort" .) }}
{{- else if eq .Values.mode "native" }}
- --advertise-kafka=$(POD_NAME).{{ include "sluice.fullname" . }}-headless.$(POD_NAMESPACE).svc.{{ .Values.kafka.clusterDomain }}:{{ (include "sluice.kafkaPort" .) }}
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
    {{- if and (eq .Values.mode "upstream") (include "sluice.sqsPort" .) }}
    # sqs.fleet.url: where the other gateways forward SQS requests while this pod owns the
    # queues. Kubernetes expands $(POD_IP), defined above.
    - name: SLUICE_SQS_FLEET_URL
      value: {{ printf "http://%s:%s" .Values.sqs.fleetHost (include "sluice.sqsPort" .) | quote }}
    {{- end }}
    {{- with .Values.extraEnv }}
    {{- toYaml . | nindent 4 }}
    {{- end }}
  ports:
    {{- if (include "sluice.kafkaPort" .) }}
    - name: kafka
      containerPort: {{ (include "sluice.kafkaPort" .) }}
      protocol: TCP
    {{- end }}
    {{- with (include "sluice.nodePorts" (dict "ctx" $ "service" false) | trim) }}
    {{- . | nindent 4 }}
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

{{/* The Kafka port (the broker in native mode, the proxy's bootstrap in upstream mode) and
the SQS port (the fleet's in upstream mode). Empty when off. */}}
{{- define "sluice.kafkaPort" -}}
{{- if .Values.ports.kafka -}}{{ int .Values.ports.kafka }}{{- end -}}
{{- end -}}
{{- define "sluice.sqsPort" -}}
{{- if .Values.ports.sqs -}}{{ int .Values.ports.sqs }}{{- end -}}
{{- end -}}
