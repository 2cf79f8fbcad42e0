package applier

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	"syncd.dev/syncd/internal/ownership"
	"syncd.dev/syncd/internal/paths"
	"syncd.dev/syncd/internal/planner"
	"syncd.dev/syncd/internal/redact"
)

// write is one apply request's answer: the object it was applied over
// and the API server's response. exact is set when the request carried
// before's resourceVersion as a precondition, so that a new
// resourceVersion in the response is this request's own write.
type write struct {
	before, after *unstructured.Unstructured
	exact         bool
}

// wrote reports whether the API server wrote the object for this request.
// A precondition makes it exact: the response's resourceVersion differs
// from the one the request was applied over exactly when the server
// wrote (spec, generation, metadata or managedFields). Dry runs, and the
// rare request sent without a precondition after other writers kept
// moving the object, fall back to comparing the manager's own fields: a
// controller writing status in between is no change by the apply.
func (w write) wrote(m planner.FieldManager, dryRun bool) bool {
	if !dryRun && w.after.GetResourceVersion() == w.before.GetResourceVersion() {
		return false
	}
	if w.exact && !dryRun {
		return true
	}
	return changedFor(m, w.before, w.after)
}

// outcome tells what one slice's apply did to the object and, when the
// server wrote, what changed. A slice that forced, yielded or left fields
// to the handoff manager says so whether or not the server wrote (the
// policy's decision is the news; Change.Wrote tells the write); any other
// slice is configured only when the server wrote, else unchanged.
func (r *objectRun) outcome(w write, c *Change) (Action, []string) {
	var changed []string
	if w.wrote(c.Manager, r.a.opts.DryRun) {
		changed = writtenFields(c.Manager, w.before, w.after)
	}
	res := c.Resolution()
	switch {
	case len(res.Held) > 0:
		return HandoffPending, changed
	case len(res.Forced) > 0:
		return Forced, changed
	case len(res.Yielded) > 0:
		return Yielded, changed
	case changed == nil:
		return Unchanged, nil
	}
	return Configured, changed
}

// applyOver applies s over before: with before's resourceVersion as a
// precondition, so that the answer tells whether this request wrote. When
// another writer moved the object first (a controller writing status: an
// optimistic-lock conflict), it reads the object again and applies over
// that; if the object keeps moving, the last try goes without the
// precondition and the write is not exact. Dry runs carry no
// precondition.
func (r *objectRun) applyOver(ctx context.Context, ri dynamic.ResourceInterface, ref planner.ObjectRef, s planner.Slice, force bool, before *unstructured.Unstructured) (write, error) {
	if r.a.opts.DryRun {
		res, err := r.a.send(ctx, ri, ref, request{Manager: s.Manager, Object: s.Object, Force: force, DryRun: true})
		return write{before: before, after: res}, err
	}
	base := before
	var res *unstructured.Unstructured
	err := retry.OnError(retry.DefaultBackoff, isRetryableConflict, func() error {
		guarded := s.Object.DeepCopy()
		guarded.SetResourceVersion(base.GetResourceVersion())
		var err error
		if res, err = r.a.send(ctx, ri, ref, request{Manager: s.Manager, Object: guarded, Force: force}); !isRetryableConflict(err) {
			return err
		}
		fresh, gerr := ri.Get(ctx, ref.Name, metav1.GetOptions{})
		if gerr != nil {
			return describeError(ref, "get", gerr)
		}
		base = fresh
		return err
	})
	if err == nil {
		return write{before: base, after: res, exact: true}, nil
	}
	if !isRetryableConflict(err) {
		return write{}, err
	}
	res, err = r.a.send(ctx, ri, ref, request{Manager: s.Manager, Object: s.Object, Force: force})
	return write{before: base, after: res}, err
}

// metadataOnly reports whether u carries nothing but its identity and
// metadata (a PartialObjectMetadata from a watch cache or a metadata
// read).
func metadataOnly(u *unstructured.Unstructured) bool {
	for k := range u.Object {
		if k != "apiVersion" && k != "kind" && k != "metadata" {
			return false
		}
	}
	return true
}

// maxChanged bounds the fields a Change lists; the rest are counted.
const maxChanged = 20

// writtenFields names what a write by m changed, in the API server's path
// notation and never with values: each field m owned before or after
// whose value changed (set, changed or removed), then the fields m began
// or stopped owning with the value unchanged ("(now owned)",
// "(released)"). When the write changed none of those (another
// manager's metadata, the generation), it says "metadata".
func writtenFields(m planner.FieldManager, before, after *unstructured.Unstructured) []string {
	was, is := ownership.Decode(before).Applied(string(m)).Leaves(), ownership.Decode(after).Applied(string(m)).Leaves()
	var values, owners []string
	stored := storedValuesOf(after)
	was.Union(is).Iterate(func(p fieldpath.Path) {
		x, inBefore := stored.at(before, p)
		y, inAfter := stored.at(after, p)
		switch {
		case inBefore != inAfter || !equality.Semantic.DeepEqual(x, y):
			values = append(values, p.String())
		case !was.Has(p):
			owners = append(owners, p.String()+" (now owned)")
		case !is.Has(p):
			owners = append(owners, p.String()+" (released)")
		}
	})
	out := append(values, owners...)
	if len(out) == 0 {
		return []string{"metadata"}
	}
	if len(out) > maxChanged {
		out = append(out[:maxChanged], fmt.Sprintf("and %d more", len(out)-maxChanged))
	}
	return out
}

// storedValues reads field values of objects of one kind as the API
// server returns them; a Secret's write-only .stringData.K is found in
// .data.K (paths.LookupStored), so a rotated stringData value is a
// change. Whether the kind is a Secret is decided once, not per field.
type storedValues struct{ secret bool }

// storedValuesOf returns the reader for obj's kind.
func storedValuesOf(obj *unstructured.Unstructured) storedValues {
	return storedValues{secret: redact.IsSecret(obj.GroupVersionKind().GroupKind())}
}

// at is the value at p of obj.
func (s storedValues) at(obj *unstructured.Unstructured, p fieldpath.Path) (any, bool) {
	return paths.LookupStored(obj.Object, p, s.secret, paths.LookupOptions{})
}

// changedFor reports whether an apply by m changed the object: m's set of
// fields or the value of a field m owns. A new resourceVersion alone does
// not tell, since a controller (the Deployment controller writing status
// and its revision annotation) may have written the object between the
// read and the apply; an apply can only change what its manager owns
// before or after it.
func changedFor(m planner.FieldManager, before, after *unstructured.Unstructured) bool {
	was, is := ownership.Decode(before).Applied(string(m)), ownership.Decode(after).Applied(string(m))
	if !was.Equals(is) {
		return true
	}
	changed := false
	stored := storedValuesOf(after)
	is.Leaves().Iterate(func(p fieldpath.Path) {
		if changed {
			return
		}
		x, inBefore := stored.at(before, p)
		y, inAfter := stored.at(after, p)
		changed = inBefore != inAfter || !equality.Semantic.DeepEqual(x, y)
	})
	return changed
}
