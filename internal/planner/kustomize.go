package planner

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync/atomic"
	"time"

	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/api/resmap"
	"sigs.k8s.io/kustomize/api/types"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/kustomize/kyaml/openapi"
)

// kustomizeSlot lets one kustomize build run at a time. kyaml keeps the
// OpenAPI schema a build uses in process-wide state, which krusty sets
// from the kustomization's openapi field and does not restore: two
// concurrent builds would see each other's schema, and a later build would
// inherit an earlier one's custom schema. Builds are therefore serialized,
// and the schema is reset after each that changed it (resetSchema).
var kustomizeSlot = make(chan struct{}, 1)

// slotDeadline is the deadline (UnixNano) of the build holding
// kustomizeSlot, 0 while it is free or being taken.
var slotDeadline atomic.Int64

// stuckGrace is how long past its deadline a build may keep the slot
// before the builds waiting for it give up: an abandoned build normally
// ends at its next file read.
var stuckGrace = 30 * time.Second

// errSlotStuck is returned to builds waiting behind one that has not
// ended long after its deadline.
var errSlotStuck = errors.New("another app's kustomize build ran past its time limit and has not ended, so no kustomize build can run: restart syncd, and fix or remove the app whose build timed out")

// takeSlot waits for kustomizeSlot until ctx ends or the build holding it
// is stuck. Waiting behind builds that end in time has no limit of its
// own.
func takeSlot(ctx context.Context) error {
	timer := time.NewTimer(buildTimeout + stuckGrace)
	defer timer.Stop()
	for {
		select {
		case kustomizeSlot <- struct{}{}:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		case <-timer.C:
			d := slotDeadline.Load()
			if d != 0 && time.Now().After(time.Unix(0, d).Add(stuckGrace)) {
				return errSlotStuck
			}
			next := stuckGrace
			if d != 0 {
				next = time.Until(time.Unix(0, d).Add(stuckGrace)) + time.Millisecond
			}
			timer.Reset(next)
		}
	}
}

// runKrusty is the build itself; tests replace it to make it panic or
// hang.
var runKrusty = func(fsys filesys.FileSystem, dir string) (resmap.ResMap, error) {
	opts := krusty.MakeDefaultOptions()
	// The file system is the restriction: it is confined to the
	// repository, so a kustomization may use anything in it.
	opts.LoadRestrictions = types.LoadRestrictionsNone
	opts.PluginConfig = types.DisabledPluginConfig()
	opts.PluginConfig.HelmConfig.Enabled = false
	return krusty.MakeKustomizer(opts).Run(fsys, dir)
}

// defaultSchemaVersion is what kyaml reports before any kustomization
// chose a schema.
var defaultSchemaVersion = openapi.GetSchemaVersion()

// resetSchema puts kyaml's OpenAPI schema back to the default after a
// build whose kustomizations chose another one (openapi.version or
// openapi.path). A build that chose none leaves the schema as it was, and
// keeping the parsed default saves parsing it again (~30 ms a build).
func resetSchema() {
	if openapi.GetSchemaVersion() != defaultSchemaVersion {
		openapi.ResetOpenAPI()
	}
}

// BeforeKustomizeBuildForTest, when set, runs inside every kustomize
// build just before kustomize does, with the kustomization's directory
// relative to the repository root, where a panic is recovered like one in
// kustomize. It exists so tests of other packages can make one app's build
// panic (no input is known to panic kustomize v0.21); nothing else sets
// it. Set it before builds start.
var BeforeKustomizeBuildForTest func(dir string)

type buildResult struct {
	resMap resmap.ResMap
	err    error
}

// kustomize builds the kustomization in dir, one build at a time, for at
// most buildTimeout from when its turn comes (less if ctx ends sooner). A
// panic inside kustomize becomes the error. A build that runs past its
// deadline is abandoned (it cannot be interrupted); its file system fails
// every operation from then on, so it ends at its next read and frees the
// slot.
func kustomize(ctx context.Context, fsys *repoFS, dir string) (resmap.ResMap, error) {
	if err := takeSlot(ctx); err != nil {
		return nil, fmt.Errorf("kustomize build: %w", err)
	}
	deadline := buildDeadline(ctx)
	fsys.setDeadline(deadline)
	slotDeadline.Store(deadline.UnixNano())
	timer := time.NewTimer(time.Until(deadline))
	defer timer.Stop()
	done := make(chan buildResult, 1)
	go func() {
		defer func() {
			slotDeadline.Store(0)
			<-kustomizeSlot
		}()
		defer func() {
			if p := recover(); p != nil {
				openapi.ResetOpenAPI()
				done <- buildResult{err: panicError(p)}
				return
			}
			resetSchema()
		}()
		if hook := BeforeKustomizeBuildForTest; hook != nil {
			hook(repoRel(dir))
		}
		m, err := runKrusty(fsys, dir)
		done <- buildResult{resMap: m, err: err}
	}()
	select {
	case r := <-done:
		if r.err != nil {
			if errors.Is(r.err, errBuildTimeout) {
				return nil, fmt.Errorf("kustomize build: %w: simplify the kustomization or split the app", errBuildTimeout)
			}
			return nil, fmt.Errorf("kustomize build: %s", trimRepoRoot(r.err.Error()))
		}
		return r.resMap, nil
	case <-ctx.Done():
		return nil, fmt.Errorf("kustomize build: %w", ctx.Err())
	case <-timer.C:
		return nil, fmt.Errorf("kustomize build: %w: simplify the kustomization or split the app", errBuildTimeout)
	}
}

// panicError describes a panic inside kustomize. Only a runtime error's
// text is shown: other panic values may quote the files being built,
// Secrets included.
func panicError(p any) error {
	detail := "its value is not shown, as it may quote file content"
	if re, ok := p.(runtime.Error); ok {
		detail = re.Error()
	}
	return fmt.Errorf("kustomize panicked (%s): a kustomize bug this kustomization triggers; "+
		"run `kustomize build` on it and simplify what it uses until the build passes", detail)
}
