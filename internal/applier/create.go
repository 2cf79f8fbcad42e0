package applier

import (
	"context"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/metadata"

	"syncd.dev/syncd/internal/planner"
)

// create makes an object that does not exist yet with the steps
// planCreate plans, marking each slice with action (Created, or
// Recreated after an immutable field), and returns the metadata of the
// last answer (its resourceVersion and managedFields are all a write's
// result needs; mri, when not nil, asks for nothing more). A dry run
// sends the first step only: nothing exists to share fields with, so the
// dry run of the whole object previews every slice.
func (r *objectRun) create(ctx context.Context, ri dynamic.ResourceInterface, mri metadata.ResourceInterface, obj *planner.Object, changes []Change, action Action) (metav1.Object, error) {
	sl, err := r.prepare(obj, false)
	if err != nil {
		return nil, failAt(0, err)
	}
	var last metav1.Object
	for _, st := range planCreate(slicesFields(sl)) {
		u := sl[st.Slice].Object
		if st.Purpose == PurposeWhole {
			u = r.wholeForCreate(obj, sl[0])
		}
		res, err := r.a.sendForMetadata(ctx, ri, mri, obj.Ref, request{Manager: st.Manager, Object: u, Force: st.Force, DryRun: r.a.opts.DryRun})
		if err != nil {
			return nil, failAt(st.Slice, err)
		}
		if st.Purpose == PurposeWhole && r.a.opts.DryRun {
			for i := range changes {
				changes[i].Action = action
			}
			return nil, nil
		}
		if st.Purpose == PurposeExact {
			changes[st.Slice].Action = action
		}
		last = res
	}
	return last, nil
}

// slicesFields returns the slices' managers and fields.
func slicesFields(sl []planner.Slice) []sliceFields {
	out := make([]sliceFields, len(sl))
	for i, s := range sl {
		out[i] = sliceFields{Manager: s.Manager, Fields: s.Fields}
	}
	return out
}

// wholeForCreate returns the whole desired object with what prepare adds
// to the default slice: the managers annotation and the inventory's
// labels.
func (r *objectRun) wholeForCreate(obj *planner.Object, first planner.Slice) *unstructured.Unstructured {
	whole := obj.Desired.DeepCopy()
	if ann := first.Object.GetAnnotations(); ann != nil {
		merged := whole.GetAnnotations()
		if merged == nil {
			merged = map[string]string{}
		}
		key := managersAnnotation(r.app)
		if v, ok := ann[key]; ok {
			merged[key] = v
		}
		whole.SetAnnotations(merged)
	}
	if len(r.ao.Labels) > 0 {
		addLabels(whole, r.ao.Labels)
	}
	return whole
}
