#!/usr/bin/env bash
# The demo: builds the local control plane on first use (~15 min once,
# cached after), then runs syncd end to end against it. See hack/demo.
set -euo pipefail
cd "$(dirname "$0")/.."
SYNCD_CONTROLPLANE_DIR=$(./hack/controlplane.sh)
export SYNCD_CONTROLPLANE_DIR
exec go run ./hack/demo "$@"
