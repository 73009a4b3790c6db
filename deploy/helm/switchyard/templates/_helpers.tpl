{{/* The chart's name, at most 63 characters (a DNS label). */}}
{{- define "switchyard.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* The release's objects' name: RELEASE-switchyard, or the release name when it holds the chart's. */}}
{{- define "switchyard.fullname" -}}
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

{{- define "switchyard.selectorLabels" -}}
app.kubernetes.io/name: {{ include "switchyard.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "switchyard.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{ include "switchyard.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end -}}

{{/* The chart's own Secret's entries (name: value): the non-empty secretEnv and the store URLs given as values. */}}
{{- define "switchyard.secretData" -}}
{{- $data := dict -}}
{{- range $k, $v := .Values.secretEnv -}}
{{- if $v -}}{{- $_ := set $data $k (toString $v) -}}{{- end -}}
{{- end -}}
{{- if and .Values.postgres.url (not .Values.postgres.existingSecret) -}}
{{- $_ := set $data "SWITCHYARD_STORE_URL" .Values.postgres.url -}}
{{- end -}}
{{- if and .Values.redis.url (not .Values.redis.existingSecret) -}}
{{- $_ := set $data "SWITCHYARD_ADMISSION_URL" .Values.redis.url -}}
{{- end -}}
{{- toYaml $data -}}
{{- end -}}

{{/*
The configuration file: .Values.config with store.url and admission.url read from the
environment when postgres and redis are given. Refuses several replicas without both: SQLite
and the in-memory admission store serve one process only (docs/deploy.md).
*/}}
{{- define "switchyard.config" -}}
{{- $pg := or .Values.postgres.url .Values.postgres.existingSecret -}}
{{- $redis := or .Values.redis.url .Values.redis.existingSecret -}}
{{- if and (gt (int .Values.replicaCount) 1) (not (and $pg $redis)) -}}
{{- fail "replicaCount > 1 needs postgres.url (or postgres.existingSecret) and redis.url (or redis.existingSecret): SQLite and the in-memory admission store serve one process only" -}}
{{- end -}}
{{- $cfg := deepCopy (.Values.config | default dict) -}}
{{- if $pg -}}
{{- $store := get $cfg "store" | default dict -}}
{{- $_ := set $store "url" "${SWITCHYARD_STORE_URL}" -}}
{{- $_ := set $cfg "store" $store -}}
{{- end -}}
{{- if $redis -}}
{{- $adm := get $cfg "admission" | default dict -}}
{{- $_ := set $adm "url" "${SWITCHYARD_ADMISSION_URL}" -}}
{{- $_ := set $cfg "admission" $adm -}}
{{- end -}}
{{- toYaml $cfg -}}
{{- end -}}
