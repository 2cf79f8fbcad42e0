#!/usr/bin/env bash
# The demo: builds the local control plane on first use (~15 min once,
# cached after), then runs syncd end to end against it. See hack/demo.
# Exit codes are the demo's own: 0 every step did what it said, 1 a step
# failed (the message names it), 130 interrupted.
set -euo pipefail
cd "$(dirname "$0")/.."
SYNCD_CONTROLPLANE_DIR=$(./hack/controlplane.sh)
export SYNCD_CONTROLPLANE_DIR
# Built rather than `go run`, which turns every failure into exit 1.
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
go build -o "$tmp/demo" ./hack/demo
set +e
"$tmp/demo" "$@"
exit $?
