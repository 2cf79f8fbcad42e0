package drift

import (
	"context"
	"fmt"
	"sort"

	"golang.org/x/sync/errgroup"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	"syncd.dev/syncd/internal/applier"
	"syncd.dev/syncd/internal/planner"
)

// Normalizer asks the API server what it would store for one of syncd's
// slices of an object: the object as the server would return it after
// applying s as s.Manager, forced, with nothing written (a server-side
// dry run). Its declared leaves hold the server's own form of the values
// Git declares: zero values dropped, quantities canonical, defaults and
// admission mutations applied.
type Normalizer interface {
	Normalize(ctx context.Context, ref planner.ObjectRef, s planner.Slice) (*unstructured.Unstructured, error)
}

// The applier sends the same apply request as a dry run.
var _ Normalizer = (*applier.Applier)(nil)

// Normalized holds, per object and syncd manager, what the API server
// would store for that manager's slice (Normalizer). Detect compares a
// declared leaf whose live value differs from Git's text with the value
// at the same path here: equal means the server stores the declared value
// that way, so it is not drift.
type Normalized map[planner.ObjectRef]map[planner.FieldManager]*unstructured.Unstructured

// normalizeConcurrency bounds the dry runs Normalize has in flight.
const normalizeConcurrency = 8

// normalizeRequest is one slice Normalize asks the server about.
type normalizeRequest struct {
	ref   planner.ObjectRef
	slice planner.Slice
}

// Normalize runs Detect's comparison without normalisation and, for each
// slice with a value-drift finding (a leaf only syncd owns whose live
// value is not Git's text, zero values the server omits already
// excepted), asks n what the server would store: one dry-run request per
// such slice, none for an object without one. Pass the result as
// Options.Normalized to Detect. A failed request is a warning naming the
// object and manager; its fields are then compared with Git's text.
func Normalize(ctx context.Context, n Normalizer, plan *planner.Plan, live map[planner.ObjectRef]*unstructured.Unstructured, opts Options) (Normalized, []string) {
	byKey := make(map[objKey]*unstructured.Unstructured, len(live))
	for r, o := range live {
		byKey[keyOf(r)] = o
	}
	opts.Normalized = nil
	d := newDetector(plan, opts)
	var reqs []normalizeRequest
	for i := range plan.Objects {
		obj := &plan.Objects[i]
		l := byKey[keyOf(obj.Ref)]
		if l == nil {
			continue
		}
		want := valueDriftManagers(d.check(obj, l).findings)
		for _, s := range obj.Slices {
			if want[s.Manager] {
				reqs = append(reqs, normalizeRequest{ref: obj.Ref, slice: s})
			}
		}
	}
	results := make([]*unstructured.Unstructured, len(reqs))
	errs := make([]error, len(reqs))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(normalizeConcurrency)
	for i, r := range reqs {
		g.Go(func() error {
			results[i], errs[i] = n.Normalize(gctx, r.ref, r.slice)
			return nil
		})
	}
	_ = g.Wait()
	out := Normalized{}
	var warns []string
	for i, r := range reqs {
		if errs[i] != nil {
			warns = append(warns, normalizeError(r.ref, r.slice.Manager, errs[i]).Error())
			continue
		}
		if out[r.ref] == nil {
			out[r.ref] = map[planner.FieldManager]*unstructured.Unstructured{}
		}
		out[r.ref][r.slice.Manager] = results[i]
	}
	return out, warns
}

// normalizeError says that the dry run of m's slice of ref failed and what
// that means for the findings.
func normalizeError(ref planner.ObjectRef, m planner.FieldManager, err error) error {
	return fmt.Errorf("%s: could not ask the API server how it stores the fields of %s (dry-run apply): %w; they were compared with Git's text", ref, m, err)
}

// storedAsDeclared reports whether the live value at path is what the API
// server stores for the declared one: the value at path in the server's
// dry run of manager's slice (Options.Normalized), compared like Git's
// text. False when there is no such dry run.
func (d *detector) storedAsDeclared(ref planner.ObjectRef, manager string, path fieldpath.Path, live any) bool {
	n := d.normalized[keyOf(ref)][manager]
	if n == nil || len(path) == 0 {
		return false
	}
	stored, _ := lookupLive(n.Object, path, isSecret(ref))
	return equalDeclared(stored, live)
}

// normalizedIndex indexes Options.Normalized by object key and manager;
// refs are visited in order, so of two versions of one object the later
// one wins, every time.
func normalizedIndex(n Normalized) map[objKey]map[string]*unstructured.Unstructured {
	out := map[objKey]map[string]*unstructured.Unstructured{}
	refs := make([]planner.ObjectRef, 0, len(n))
	for r := range n {
		refs = append(refs, r)
	}
	sort.Slice(refs, func(i, j int) bool { return refs[i].Less(refs[j]) })
	for _, r := range refs {
		k := keyOf(r)
		if out[k] == nil {
			out[k] = map[string]*unstructured.Unstructured{}
		}
		for m, u := range n[r] {
			out[k][string(m)] = u
		}
	}
	return out
}
