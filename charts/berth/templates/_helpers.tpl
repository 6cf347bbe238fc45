{{/*
The chart's name. It is not overridable: the objects' names and the
selectors of the generated webhook Service are those of config/default.
*/}}
{{- define "berth.name" -}}
{{- .Chart.Name | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/*
The release's full name, for the objects only this chart makes (the
cert-manager Issuer, the ServiceMonitor). Every object config/default also
makes keeps its name there (berth-controller, berth-webhook-service, ...):
the controller's configuration and the API contract refer to those, and
cluster-scoped names allow one Berth per cluster anyway.
*/}}
{{- define "berth.fullname" -}}
{{- if contains .Chart.Name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}

{{/*
The chart label's value: name and version.
*/}}
{{- define "berth.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/*
Helm's labels, on every object. Only these: they are what the chart adds
to config/default's objects, and test/chart leaves exactly these out when
it compares the two.
*/}}
{{- define "berth.labels" -}}
helm.sh/chart: {{ include "berth.chart" . }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- with .Chart.AppVersion }}
app.kubernetes.io/version: {{ . | quote }}
{{- end }}
{{- end }}

{{/*
The labels that select the controller's pods, as config/default has them.
No instance label: the selectors of config/default (the generated webhook
Service's among them) do not have it, and a Deployment's selector cannot
change on upgrade.
*/}}
{{- define "berth.selectorLabels" -}}
app.kubernetes.io/name: {{ include "berth.name" . }}
app.kubernetes.io/component: controller
{{- end }}

{{/*
The labels of the controller's objects and pods.
*/}}
{{- define "berth.controllerLabels" -}}
{{ include "berth.labels" . }}
{{ include "berth.selectorLabels" . }}
{{- end }}

{{/*
The controller's image: by digest when one is given, else by tag (the
chart's appVersion by default).
*/}}
{{- define "berth.image" -}}
{{- if .Values.image.digest }}
{{- printf "%s@%s" .Values.image.repository .Values.image.digest }}
{{- else }}
{{- printf "%s:%s" .Values.image.repository (.Values.image.tag | default .Chart.AppVersion) }}
{{- end }}
{{- end }}

{{/*
The controller's configuration, as YAML: .Values.configuration with the
release's namespace and the convenience values applied.
*/}}
{{- define "berth.configuration" -}}
{{- $cfg := deepCopy .Values.configuration }}
{{- $ns := .Release.Namespace }}
{{- $le := get $cfg "leaderElection" | default dict }}
{{- $_ := set $le "resourceNamespace" $ns }}
{{- $_ = set $cfg "leaderElection" $le }}
{{- $icm := get $cfg "internalCertManagement" | default dict }}
{{- $_ = set $icm "webhookServiceNamespace" $ns }}
{{- if .Values.certManager.enable }}
{{- $_ = set $icm "enable" false }}
{{- end }}
{{- $_ = set $cfg "internalCertManagement" $icm }}
{{- $int := get $cfg "integrations" | default dict }}
{{- with .Values.integrations.frameworks }}
{{- $_ = set $int "frameworks" . }}
{{- end }}
{{- range $sel := list (dig "podOptions" "namespaceSelector" dict $int) (get $cfg "managedJobsNamespaceSelector" | default dict) }}
{{- range (get $sel "matchExpressions" | default list) }}
{{- if and (eq .key "kubernetes.io/metadata.name") (eq .operator "NotIn") (not (has $ns .values)) }}
{{- $_ := set . "values" (append .values $ns) }}
{{- end }}
{{- end }}
{{- end }}
{{- $_ = set $cfg "integrations" $int }}
{{- with .Values.fairSharing }}
{{- $_ = set $cfg "fairSharing" . }}
{{- end }}
{{- if $cfg.manageJobsWithoutQueueName }}
{{- fail "configuration.manageJobsWithoutQueueName: the chart's webhooks are called only for objects labelled berth.dev/queue-name, so Berth could not hold the others; install from config/default without the webhooks' objectSelector patch instead" }}
{{- end }}
{{- toYaml $cfg }}
{{- end }}
