// Package syncd holds syncd's Helm chart, the files of this directory, and
// embeds them in the syncd binary (FS), so that `syncd install` and
// `syncd check` render and compare the very chart `helm install` uses.
//
// The chart's CRDs (crds/) are a copy of manifests/crds that
// hack/generate.sh writes; its --check fails when the copy is stale. The
// Go files are not part of the chart (.helmignore).
package syncd

import "embed"

// FS is the chart: Chart.yaml, values.yaml, templates/ (with _helpers.tpl,
// hence all:), crds/ and files/, relative to the chart's directory.
//
//go:embed Chart.yaml values.yaml .helmignore all:templates crds files README.md
var FS embed.FS
