package e2e

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// shopChart is a Helm chart in the shape `helm create` and published
// charts have: name helpers in templates/_helpers.tpl, a Deployment
// whose pod template carries a checksum of its ConfigMap, a Service, a
// ConfigMap of settings, values.yaml and a values-prod.yaml beside it.
// version is the chart's version and appVersion the image tag its
// values.yaml pins. Chart.yaml is included: a Git repository and helm
// push carry it (helmserver writes its own; see repoChart).
func shopChart(version, appVersion string) map[string]string {
	return map[string]string{
		"Chart.yaml": fmt.Sprintf(`apiVersion: v2
name: shop
description: The shop storefront.
type: application
version: %s
appVersion: %q
`, version, appVersion),
		"values.yaml": fmt.Sprintf(`replicaCount: 1
image:
  repository: ghcr.io/example/shop
  tag: %q
  pullPolicy: IfNotPresent
nameOverride: ""
fullnameOverride: ""
service:
  type: ClusterIP
  port: 80
  targetPort: 8080
config:
  logLevel: info
  extra: {}
resources: {}
`, appVersion),
		"values-prod.yaml": shopProdValues(3, "warn"),
		"templates/_helpers.tpl": `{{/*
shop.name is the chart's name, or nameOverride.
*/}}
{{- define "shop.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/*
shop.fullname is the release-qualified name of every object.
*/}}
{{- define "shop.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else if contains (include "shop.name" .) .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name (include "shop.name" .) | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}

{{/*
shop.labels are the common labels.
*/}}
{{- define "shop.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{ include "shop.selectorLabels" . }}
app.kubernetes.io/version: {{ .Values.image.tag | default .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{/*
shop.selectorLabels select the pods; they never change across versions.
*/}}
{{- define "shop.selectorLabels" -}}
app.kubernetes.io/name: {{ include "shop.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}
`,
		"templates/configmap.yaml": `apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ include "shop.fullname" . }}
  labels:
    {{- include "shop.labels" . | nindent 4 }}
data:
  LOG_LEVEL: {{ .Values.config.logLevel | quote }}
  {{- range $k, $v := .Values.config.extra }}
  {{ $k }}: {{ $v | quote }}
  {{- end }}
`,
		"templates/deployment.yaml": `apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ include "shop.fullname" . }}
  labels:
    {{- include "shop.labels" . | nindent 4 }}
spec:
  replicas: {{ .Values.replicaCount }}
  selector:
    matchLabels:
      {{- include "shop.selectorLabels" . | nindent 6 }}
  template:
    metadata:
      annotations:
        checksum/config: {{ include (print $.Template.BasePath "/configmap.yaml") . | sha256sum }}
      labels:
        {{- include "shop.selectorLabels" . | nindent 8 }}
    spec:
      containers:
        - name: {{ .Chart.Name }}
          image: "{{ .Values.image.repository }}:{{ .Values.image.tag | default .Chart.AppVersion }}"
          imagePullPolicy: {{ .Values.image.pullPolicy }}
          ports:
            - name: http
              containerPort: {{ .Values.service.targetPort }}
              protocol: TCP
          envFrom:
            - configMapRef:
                name: {{ include "shop.fullname" . }}
          {{- with .Values.resources }}
          resources:
            {{- toYaml . | nindent 12 }}
          {{- end }}
`,
		"templates/service.yaml": `apiVersion: v1
kind: Service
metadata:
  name: {{ include "shop.fullname" . }}
  labels:
    {{- include "shop.labels" . | nindent 4 }}
spec:
  type: {{ .Values.service.type }}
  ports:
    - port: {{ .Values.service.port }}
      targetPort: http
      protocol: TCP
      name: http
  selector:
    {{- include "shop.selectorLabels" . | nindent 4 }}
`,
		"templates/NOTES.txt": `The shop is served by the Service {{ include "shop.fullname" . }} on port {{ .Values.service.port }}.
`,
	}
}

// shopProdValues is the chart's values-prod.yaml: production replicas,
// log level and resources.
func shopProdValues(replicas int, logLevel string) string {
	return fmt.Sprintf(`replicaCount: %d
config:
  logLevel: %s
  extra:
    CHECKOUT_TIMEOUT: 30s
resources:
  requests: {cpu: 100m, memory: 128Mi}
  limits: {memory: 256Mi}
`, replicas, logLevel)
}

// shopLive reads the chart's live Deployment and ConfigMap (release
// shop, so both are named shop) and reports what the journeys check.
type shopLive struct {
	replicas          int64
	image, chartLabel string
	logLevel          string
}

func readShop(t *testing.T, cl *cluster, ns string) shopLive {
	t.Helper()
	d, err := cl.get(objectRef{group: "apps", kind: "Deployment", namespace: ns, name: "shop"})
	if err != nil {
		t.Fatal(err)
	}
	cm, err := cl.get(objectRef{kind: "ConfigMap", namespace: ns, name: "shop"})
	if err != nil {
		t.Fatal(err)
	}
	var live shopLive
	live.replicas, _, _ = unstructured.NestedInt64(d.Object, "spec", "replicas")
	containers, _, _ := unstructured.NestedSlice(d.Object, "spec", "template", "spec", "containers")
	if len(containers) > 0 {
		live.image, _, _ = unstructured.NestedString(containers[0].(map[string]any), "image")
	}
	live.chartLabel = d.GetLabels()["helm.sh/chart"]
	live.logLevel, _, _ = unstructured.NestedString(cm.Object, "data", "LOG_LEVEL")
	return live
}

// checkShop fails the test unless the live chart is want.
func checkShop(t *testing.T, cl *cluster, ns string, want shopLive) {
	t.Helper()
	if got := readShop(t, cl, ns); got != want {
		t.Errorf("live shop chart in %s: %+v, want %+v", ns, got, want)
	}
}

// waitShop waits up to two minutes until the daemon d made the live shop
// chart in ns what want says.
func waitShop(t *testing.T, cl *cluster, ns string, want shopLive, d *daemon) {
	t.Helper()
	waitFor(t, "syncd run to apply "+want.chartLabel, 2*time.Minute, func() (bool, string) {
		got := readShop(t, cl, ns)
		return got == want, fmt.Sprintf("live %+v\n%s", got, tail(d.logText(), 3000))
	})
}

// withoutChartYAML drops Chart.yaml: helmserver.Package writes it from
// the chart's name and version.
func withoutChartYAML(files map[string]string) map[string]string {
	out := map[string]string{}
	for n, b := range files {
		if n != "Chart.yaml" {
			out[n] = b
		}
	}
	return out
}

// gitFiles prefixes files with dir for a gitserver commit.
func gitFiles(dir string, files map[string]string) map[string][]byte {
	out := map[string][]byte{}
	for n, b := range files {
		out[strings.TrimSuffix(dir, "/")+"/"+n] = []byte(b)
	}
	return out
}
