#!/usr/bin/env bash
# The test command: builds (or reuses) the control plane, checks formatting,
# vet and that the generated API files are current, builds the binary
# exactly as the Dockerfile does, runs every test against the real API
# server (the acceptance suite in test/e2e drives that build of the
# binary), fuzzes the decoders for a bounded time, and runs the demo.
set -euo pipefail
cd "$(dirname "$0")/.."

command -v git >/dev/null || { echo "test: git is needed (apt-get install git)" >&2; exit 1; }
# internal/preview renders the example PR comment with headless Chromium and
# fails without it; say so now rather than after ten minutes of tests.
[ -x /usr/bin/chromium ] || { echo "test: Debian's chromium is needed for internal/preview (apt-get install chromium)" >&2; exit 1; }

# phase names a step of the run with the seconds since the run started,
# so that a slow run's log says which step took the time (a cold module
# and build cache, or the control plane's first build, is most of it).
phase() { echo "--- $1 (at ${SECONDS}s)"; }

SYNCD_CONTROLPLANE_DIR=$(./hack/controlplane.sh)
export SYNCD_CONTROLPLANE_DIR

# Every step below builds with the container build line's flags
# (hack/build.sh: CGO_ENABLED=0, -trimpath), so that vet, the tests, the
# benchmarks and fuzzing reuse the packages that line compiles instead of
# compiling syncd's dependencies a second time with cgo and full paths.
# Measured from an empty build cache on 2 cores: after the build line, the
# test binaries took 413 s to compile with the default flags and 213 s with
# these. The race detector needs cgo: its step sets CGO_ENABLED=1 itself.
export CGO_ENABLED=0
export GOFLAGS="${GOFLAGS:+$GOFLAGS }-trimpath"

# A control-plane process that dies on its own mid-run is reported and
# started again by the harness (internal/testenv); the reports are printed
# at the end, whether the run passed or failed, since go test shows
# nothing of a passing package's output.
SYNCD_TESTENV_EVENTS=$(mktemp)
export SYNCD_TESTENV_EVENTS
print_testenv_events() {
  if [ -s "$SYNCD_TESTENV_EVENTS" ]; then
    echo "--- control-plane processes that died on their own during the run"
    cat "$SYNCD_TESTENV_EVENTS"
  fi
  rm -f "$SYNCD_TESTENV_EVENTS"
}
trap print_testenv_events EXIT

phase "gofmt"
unformatted=$(gofmt -l $(git ls-files '*.go' | grep -v '^tools/') 2>/dev/null || true)
if [ -n "$unformatted" ]; then
  echo "gofmt would change:" >&2; echo "$unformatted" >&2; exit 1
fi

phase "go vet"
go vet ./...
# The benchmark module imports syncd's internal packages through a replace;
# vet it so an internal API change cannot break it unnoticed.
(cd bench && go vet ./...)

phase "generated files"
# The CRDs and deepcopy functions are generated from the Go types
# (hack/generate.sh); a type or marker changed without regenerating fails
# here, naming the stale files. The first run builds controller-gen from
# the module proxy (about a minute) and keeps it in ~/.cache/syncd/tools.
./hack/generate.sh --check

phase "container build line"
# Before the tests: test/e2e builds the binary with the same line, and
# then finds every package in the build cache.
./hack/build.sh dist/syncd

phase "go test: under the race detector"
# Packages with concurrency of their own and no control plane also run
# under the race detector whole. Not the ones that start a control plane
# (a 2-5x slower API-server round of tests; a subset of them below), nor
# planner and preview: a race build of client-go, k8s.io/api and kustomize
# adds minutes to a cold CI run, and their own concurrency is small (a
# mutex-guarded schema cache, an errgroup that builds report entries).
CGO_ENABLED=1 go test -count=1 -race ./internal/config/... ./internal/paths/... ./internal/alert/... \
  ./internal/source/ ./internal/webhook/ ./internal/httpauth/ ./internal/testenv/gitserver/
# The stages that start a control plane run a focused subset under the
# race detector: the tests whose goroutines meet — the drift watcher
# (informers, debounce, hold/release, flap detector), applies fanned out and
# cancelled, health waits and retried writes (applier), the inventory's
# member watch, two fenced writers and prunes (inventory), and the daemon's
# app loops, scheduler, alerts, Events and /status (daemon; an API server
# restart mid-prune included). Left out: the rest of those packages, which
# drive the same code serially, and TestInterruptedChunkedWrite (83 s alone
# under -race). 44 tests; measured on a shared 2-core machine
# (load 2-4) with a warm cache: 1 min 14 s added (the race build of these
# packages from a cold cache: +45 s).
race_tests='^Test(Watcher.*|Flap.*|CancelledMidApply|Wait.*|TwoApps.*|SendRetriesOptimisticLock|RefusedStage.*'
race_tests+='|UnchangedFromCache|TwoWritersFenced|TenantWatchesAsItself|InterruptedPrune|NoOpCostsNothing|PruneGuards'
race_tests+='|DaemonEndToEnd|DaemonEvents|DaemonPruneVisible|DaemonDriftResolvedAlerts|DaemonOwnApplyIsNotDrift|DaemonFlapping'
race_tests+='|DaemonAppRetriesSpread|DaemonSourceRetryStatus|DaemonGitServerDown|DaemonKustomizePanicFailsOneApp|DaemonUnhealthy'
race_tests+='|DaemonYieldedNotAlerted|TenantDriftWatch|FaultAPIServerRestartMidPrune)$'
CGO_ENABLED=1 go test -count=1 -race -timeout 10m -run "$race_tests" \
  ./internal/drift/ ./internal/applier/ ./internal/inventory/ ./internal/daemon/
phase "go test: every package"
go test -count=1 -timeout 20m ./...
# manifests/monitoring's dashboard and alert rules, checked with
# Prometheus's own PromQL parser and rule checks against the metrics table
# of docs/operations.md (which cmd/syncd's TestMetricsDocumented keeps
# equal to what syncd registers). A module of its own: Prometheus's server
# module stays out of syncd's dependencies.
(cd test/monitoring && go vet ./... && go test -count=1 ./...)

phase "bench: peak heap"
# The memory regression check: BenchmarkHeap (bench/heap_test.go) syncs
# 10,000 objects of the benchmark mix, the issue's count (first sync, no-op
# and drift watch as the daemon runs an app, then a no-op as syncd apply
# runs one) and fails when a peak live heap grows more than 15 % over
# bench/testdata/heap-baseline.txt. A benchmark run, not a unit test:
# -run '^$' runs no test of the bench module.
(cd bench && go test -run '^$' -bench '^BenchmarkHeap$' -benchtime 1x -timeout 10m .)

phase "fuzz (bounded)"
# Each decoder of untrusted input is fuzzed for a bounded number of
# executions; a missing target fails the run rather than being skipped. The
# budget is a count, not a duration: go1.26's fuzz coordinator reports a
# spurious "context deadline exceeded" when a -fuzztime duration ends while a
# starved worker is mid-call (golang/go#75804, fixed in go1.27).
# FuzzKustomizeChecks builds every kustomization the checks accept, so it
# is slower per execution than the pure decoders.
for target in "./internal/planner FuzzDecode 3000x" "./internal/planner FuzzKustomizeChecks 3000x" "./internal/planner FuzzJSONObject 10000x" \
  "./internal/config FuzzParse 40000x" "./internal/paths FuzzParse 40000x" "./internal/webhook FuzzHandler 20000x" \
  "./internal/inventory FuzzDecode 20000x" "./internal/redact FuzzObject 20000x"; do
  set -- $target
  go test -run '^$' -fuzz "^$2\$" -fuzztime "$3" "$1"
done

phase "demo (the README's first command)"
# It checks every step it narrates and exits non-zero naming the one that
# did not do what it said.
./hack/demo.sh
phase "all checks passed"
