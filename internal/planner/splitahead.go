package planner

import (
	"context"
	"runtime"
	"sync"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/structured-merge-diff/v6/typed"
)

// splitAheadMin is the fewest objects worth typing and splitting on
// several CPUs at once.
const splitAheadMin = 64

// typedSplit is what typing and splitting one object of a built-in kind
// came to, worked out ahead of the plan's pass over its objects
// (splitBuiltinsAhead).
type typedSplit struct {
	done   bool
	tv     *typed.TypedValue
	slices []Slice
	err    error
}

// splitBuiltinsAhead types and splits the objects of built-in kinds
// (most of any render) on every CPU, each CPU a run of items, and marks
// in matched the split paths they matched. It returns each item's
// result, in item order (not done: an object splitOne works out in the
// plan's pass, as every object of a kind that needs a CRD of the render
// or the cluster's schema, whose converters are found and kept as the
// pass goes). Nil when there are too few objects or CPUs to gain. The
// plan's pass records the results in item order, so errors and warnings
// come out as without it.
func (r *planRun) splitBuiltinsAhead(ctx context.Context, items []planned, matched [][]bool) []typedSplit {
	workers := min(runtime.GOMAXPROCS(0), len(items)/splitAheadMin)
	if workers < 2 || r.p.opts.Converter != nil {
		return nil
	}
	out := make([]typedSplit, len(items))
	seen := make([][][]bool, workers)
	var wg sync.WaitGroup
	for w := range workers {
		seen[w] = newMatched(r.p.rules)
		lo, hi := w*len(items)/workers, (w+1)*len(items)/workers
		wg.Go(func() {
			for i := lo; i < hi && ctx.Err() == nil; i++ {
				out[i] = r.p.splitBuiltin(items[i].obj.Desired, seen[w])
				r.fieldSets.share(out[i].slices)
			}
		})
	}
	wg.Wait()
	for _, s := range seen {
		for i := range s {
			for j, ok := range s[i] {
				matched[i][j] = matched[i][j] || ok
			}
		}
	}
	return out
}

// splitBuiltin types and splits obj when it is of a built-in kind, as
// toTyped and split do; not done for any other kind.
func (p *Planner) splitBuiltin(obj *unstructured.Unstructured, matched [][]bool) typedSplit {
	gvk := obj.GroupVersionKind()
	if !builtinScheme.Recognizes(gvk) {
		return typedSplit{}
	}
	tv, err := p.builtin.ObjectToTyped(obj)
	if err != nil {
		return typedSplit{done: true, err: schemaMismatch(gvk, err)}
	}
	slices, err := p.split(obj, tv, false, matched)
	return typedSplit{done: true, tv: tv, slices: slices, err: err}
}

// settle records in it what splitBuiltin worked out for it, as splitOne
// would have.
func (r *planRun) settle(it *planned, res typedSplit) {
	if res.err != nil {
		r.fail(*it.m, it.obj.Desired, res.err)
		return
	}
	it.obj.Slices = res.slices
	it.obj.typ = r.typeOf(res.tv)
	it.obj.deduced = false
}

// newMatched is a record of which paths of rules matched, none yet.
func newMatched(rules []rule) [][]bool {
	matched := make([][]bool, len(rules))
	for i, rl := range rules {
		matched[i] = make([]bool, len(rl.paths))
	}
	return matched
}
