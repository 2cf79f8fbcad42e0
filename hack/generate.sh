#!/usr/bin/env bash
# Generates the API machinery from the Go types with controller-gen
# (sigs.k8s.io/controller-tools, pinned in tools/controller-gen/go.mod):
# the CRDs in manifests/crds/ (schemas from the types, descriptions from
# their doc comments, CEL rules, bounds, defaults and printer columns
# from their +kubebuilder markers), their copy in the Helm chart
# (charts/syncd/crds/, which `syncd install` embeds), and
# zz_generated.deepcopy.go of internal/api/v1alpha1 and of the
# internal/config types the CRDs embed.
# Run it after changing those types or their markers.
#
#   hack/generate.sh          write the generated files in place
#   hack/generate.sh --check  generate into a copy of the tree and fail,
#                             naming the files, when any differs from the
#                             tree's (hack/test.sh runs this)
#
# controller-gen is built once per version into $SYNCD_TOOLS_DIR (default
# ~/.cache/syncd/tools) from the module proxy.
set -euo pipefail
cd "$(dirname "$0")/.."

# The generated files, relative to the repository root.
generated=(manifests/crds/syncd.dev_apps.yaml manifests/crds/syncd.dev_gitsources.yaml
  manifests/crds/syncd.dev_helmsources.yaml manifests/crds/syncd.dev_ocisources.yaml
  manifests/crds/syncd.dev_alertproviders.yaml manifests/crds/syncd.dev_alerts.yaml
  internal/api/v1alpha1/zz_generated.deepcopy.go internal/config/zz_generated.deepcopy.go)

version=$(cd tools/controller-gen && go list -m -f '{{.Version}}' sigs.k8s.io/controller-tools)
bin=${SYNCD_TOOLS_DIR:-$HOME/.cache/syncd/tools}/controller-gen-$version
if [ ! -x "$bin" ]; then
  mkdir -p "$(dirname "$bin")"
  (cd tools/controller-gen && go build -o "$bin.tmp" sigs.k8s.io/controller-tools/cmd/controller-gen)
  mv "$bin.tmp" "$bin"
fi

# generate writes the generated files of the tree in the current directory.
generate() {
  "$bin" object paths=./internal/api/v1alpha1/... paths=./internal/config/...
  "$bin" crd paths=./internal/api/v1alpha1/... output:crd:artifacts:config=manifests/crds
  copy_chart_crds
}

# copy_chart_crds makes charts/syncd/crds/ the same files as the CRDs in
# manifests/crds/ (every kind, so a new one flows into the chart; a
# removed one leaves it).
copy_chart_crds() {
  rm -f charts/syncd/crds/*.yaml
  cp manifests/crds/*_*.yaml charts/syncd/crds/
}

if [ "${1:-}" != "--check" ]; then
  generate
  exit 0
fi

root=$PWD
copy=$(mktemp -d)
trap 'rm -rf "$copy"' EXIT
git ls-files -z --cached --others --exclude-standard | grep -zv '^tools/\|^test/\|^docs/' |
  tar --null -T - -cf - 2>/dev/null | tar -xf - -C "$copy"
(cd "$copy" && generate)
stale=()
for f in "${generated[@]}"; do
  cmp -s "$root/$f" "$copy/$f" || stale+=("$f")
done
# The chart's CRDs as a directory: a file missing on either side is stale.
diff -rq "$root/charts/syncd/crds" "$copy/charts/syncd/crds" >/dev/null || stale+=(charts/syncd/crds)
if [ ${#stale[@]} -gt 0 ]; then
  echo "generate: stale generated files (the Go types or their markers changed): ${stale[*]}" >&2
  echo "generate: run hack/generate.sh and commit the result" >&2
  for f in "${stale[@]}"; do diff -ru "$root/$f" "$copy/$f" | head -40 >&2 || true; done
  exit 1
fi
