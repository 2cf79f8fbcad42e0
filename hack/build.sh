#!/usr/bin/env bash
# Builds the static syncd binary with version information: the exact line the
# Dockerfile runs. Usage: hack/build.sh [OUTPUT]
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-dist/syncd}
VERSION=${VERSION:-$(git describe --tags --always --dirty 2>/dev/null || echo dev)}
COMMIT=${COMMIT:-$(git rev-parse --short HEAD 2>/dev/null || echo unknown)}
CGO_ENABLED=0 go build -trimpath -ldflags "-s -w -X main.version=${VERSION} -X main.commit=${COMMIT}" -o "$out" ./cmd/syncd
