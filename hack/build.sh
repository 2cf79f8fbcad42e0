#!/usr/bin/env bash
# Builds the static syncd binary and syncd-render, the binary syncd runs each
# render in (it must be beside syncd or on PATH), with version information:
# the exact lines the Dockerfile runs. Usage: hack/build.sh [OUTPUT]; OUTPUT
# is syncd's path (default dist/syncd), syncd-render goes beside it.
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-dist/syncd}
VERSION=${VERSION:-$(git describe --tags --always --dirty 2>/dev/null || echo dev)}
COMMIT=${COMMIT:-$(git rev-parse --short HEAD 2>/dev/null || echo unknown)}
ldflags="-s -w -X main.version=${VERSION} -X main.commit=${COMMIT}"
CGO_ENABLED=0 go build -trimpath -ldflags "$ldflags" -o "$out" ./cmd/syncd
CGO_ENABLED=0 go build -trimpath -ldflags "$ldflags" -o "$(dirname "$out")/syncd-render" ./cmd/syncd-render
