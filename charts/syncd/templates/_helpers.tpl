{{/*
syncd.labels: the labels of every object, the same as manifests/
kustomization.yaml's (the names stay fixed, see values.yaml).
*/}}
{{- define "syncd.labels" -}}
app.kubernetes.io/name: syncd
app.kubernetes.io/part-of: syncd
{{- end }}

{{/*
syncd.selector: the labels selecting the pods of one shard's Deployment.
Called with a dict: root (the top context) and shard (an int; -1: not
sharded).
*/}}
{{- define "syncd.selector" -}}
app.kubernetes.io/name: syncd
app.kubernetes.io/component: controller
{{- if ge (int .shard) 0 }}
syncd.dev/shard: {{ .shard | quote }}
{{- end }}
{{- end }}

{{/*
syncd.shards: the shard numbers as a list: [-1] when not sharded (one
Deployment "syncd"), else 0..shards-1 (Deployments "syncd-shard-K").
*/}}
{{- define "syncd.shards" -}}
{{- $n := int .Values.shards -}}
{{- if lt $n 1 }}{{ fail "shards: must be 1 or more" }}{{ end -}}
{{- if eq $n 1 -}}
[-1]
{{- else -}}
{{ untilStep 0 $n 1 | toJson }}
{{- end -}}
{{- end }}

{{/*
syncd.suffix: "" when not sharded, else "-shard-K".
*/}}
{{- define "syncd.suffix" -}}
{{- if ge (int .) 0 }}-shard-{{ . }}{{ end -}}
{{- end }}

{{/*
syncd.image: repository[:tag][@digest]; the tag defaults to the chart's
appVersion.
*/}}
{{- define "syncd.image" -}}
{{- $tag := .Values.image.tag | default .Chart.AppVersion -}}
{{- .Values.image.repository -}}
{{- if $tag }}:{{ $tag }}{{ end -}}
{{- if .Values.image.digest }}@{{ .Values.image.digest }}{{ end -}}
{{- end }}

{{/*
syncd.configMapName: the ConfigMap holding syncd.yaml.
*/}}
{{- define "syncd.configMapName" -}}
{{- .Values.config.existingConfigMap | default "syncd-config" -}}
{{- end }}
