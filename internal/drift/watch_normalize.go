package drift

import (
	"context"
	"fmt"

	"golang.org/x/sync/errgroup"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"syncd.dev/syncd/internal/planner"
)

// toNormalize returns the slice versions of the watched object k whose
// value-drift findings in fs need the server's answer first, and whether
// the object must wait for an answer (asked now or already in flight).
// w.mu is held.
func (w *Watcher) toNormalize(k objKey, wo *watched, fs []Finding) ([]normKey, bool) {
	var asks []normKey
	wait := false
	want := valueDriftManagers(fs)
	for _, s := range wo.decl.slices {
		if !want[s.manager] {
			continue
		}
		nk := normKey{obj: k, manager: string(s.manager), hash: s.hash}
		if _, answered := w.norm[nk]; answered {
			continue
		}
		wait = true
		if !w.asking[nk] {
			w.asking[nk] = true
			asks = append(asks, nk)
		}
	}
	return asks, wait
}

// sliceConfig is the apply configuration of one slice the watcher keeps:
// JSON, decoded only when the Normalizer is asked about it.
type sliceConfig struct {
	sliceVersion
	config []byte
}

// slice decodes the slice for the Normalizer.
func (c sliceConfig) slice() (planner.Slice, error) {
	obj := &unstructured.Unstructured{}
	if err := obj.UnmarshalJSON(c.config); err != nil {
		return planner.Slice{}, fmt.Errorf("decode the apply configuration the watcher kept: %w", err)
	}
	return planner.Slice{Manager: c.manager, Object: obj, Hash: c.hash}, nil
}

// sliceOf returns the slice nk names in the current plan.
func (w *Watcher) sliceOf(nk normKey) (planner.ObjectRef, sliceConfig, bool) {
	wo := w.objects[nk.obj]
	if wo == nil {
		return planner.ObjectRef{}, sliceConfig{}, false
	}
	for i, s := range wo.decl.slices {
		if string(s.manager) == nk.manager && s.hash == nk.hash {
			return wo.decl.ref, sliceConfig{sliceVersion: s, config: wo.configs[i]}, true
		}
	}
	return planner.ObjectRef{}, sliceConfig{}, false
}

// normalize asks the Normalizer about each slice version of asks, at
// most normalizeConcurrency at a time, records the answers and marks the
// objects for recomputation.
func (w *Watcher) normalize(ctx context.Context, asks []normKey) {
	if len(asks) == 0 {
		return
	}
	type ask struct {
		key   normKey
		ref   planner.ObjectRef
		slice sliceConfig
		ok    bool
		res   normResult
	}
	todo := make([]ask, len(asks))
	w.mu.Lock()
	for i, nk := range asks {
		todo[i].key = nk
		todo[i].ref, todo[i].slice, todo[i].ok = w.sliceOf(nk)
	}
	w.mu.Unlock()
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(normalizeConcurrency)
	for i := range todo {
		a := &todo[i]
		if !a.ok {
			continue // left the plan meanwhile
		}
		g.Go(func() error {
			s, err := a.slice.slice()
			if err != nil {
				a.res.err = err
				return nil
			}
			a.res.obj, a.res.err = w.opts.Normalizer.Normalize(gctx, a.ref, s)
			return nil
		})
	}
	_ = g.Wait()
	w.mu.Lock()
	for _, a := range todo {
		delete(w.asking, a.key)
		if !a.ok || ctx.Err() != nil {
			continue // stopping: nothing to recompute
		}
		w.norm[a.key] = a.res
		w.useNormalized(a.key, a.res)
		w.dirty[a.key.obj] = true
	}
	w.mu.Unlock()
	if ctx.Err() != nil {
		return
	}
	for _, a := range todo {
		if a.ok && a.res.err != nil && w.opts.OnError != nil {
			w.opts.OnError(normalizeError(a.ref, a.slice.manager, a.res.err))
		}
	}
	w.poke()
}

// useNormalized gives the detector a successful answer for a slice of the
// current plan. w.mu is held.
func (w *Watcher) useNormalized(nk normKey, r normResult) {
	if r.err != nil || r.obj == nil {
		return
	}
	if _, _, ok := w.sliceOf(nk); !ok {
		return
	}
	if w.det.normalized[nk.obj] == nil {
		w.det.normalized[nk.obj] = map[string]*unstructured.Unstructured{}
	}
	w.det.normalized[nk.obj][nk.manager] = r.obj
}

// keepNormalized keeps the answers for slice versions the new plan still
// has and hands them to its detector; failed ones are asked again. w.mu
// is held.
func (w *Watcher) keepNormalized() {
	for nk, r := range w.norm {
		if _, _, ok := w.sliceOf(nk); !ok || r.err != nil {
			delete(w.norm, nk)
			continue
		}
		w.useNormalized(nk, r)
	}
}
