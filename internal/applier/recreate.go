package applier

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"syncd.dev/syncd/internal/planner"
)

// isImmutable reports whether the API server refused a change because a
// field is immutable, from the error's causes alone: the server's message
// is built from the same causes, so it says nothing they do not
// (TestImmutableCauses: ConfigMap and Secret data, Deployment selector,
// Job template). Refusals worded otherwise, like a Service's clusterIP
// ("may not change once set"), are not immutability and never recreate.
func isImmutable(err error) bool {
	return apierrors.IsInvalid(err) && len(immutableFields(err)) > 0
}

// immutableFields lists the fields an immutability error names.
func immutableFields(err error) []string {
	var status apierrors.APIStatus
	var out []string
	if errors.As(err, &status) && status.Status().Details != nil {
		for _, c := range status.Status().Details.Causes {
			if strings.Contains(c.Message, "immutable") && c.Field != "" {
				out = append(out, c.Field)
			}
		}
	}
	return out
}

// immutableChanged says which immutable fields of ref the API server
// refused to change (cause) and the two ways out.
func immutableChanged(ref planner.ObjectRef, cause error) error {
	return fmt.Errorf("%s: immutable field(s) %s changed: set recreate: true on the app to delete and re-create the object, or revert the field: %w", ref, strings.Join(immutableFields(cause), ", "), cause)
}

// recreate deletes the object and creates it again when the app allows it;
// otherwise it reports the immutable fields.
func (r *objectRun) recreate(ctx context.Context, c objectClient, obj *planner.Object, changes []Change, cause error) (metav1.Object, error) {
	ri := c.ri
	fields := strings.Join(immutableFields(cause), ", ")
	if !r.ao.Recreate {
		return nil, failAt(0, immutableChanged(obj.Ref, cause))
	}
	if r.a.opts.DryRun {
		for i := range changes {
			changes[i].Action = Recreated
		}
		return nil, nil
	}
	propagation := metav1.DeletePropagationForeground
	if err := ri.Delete(ctx, obj.Ref.Name, metav1.DeleteOptions{PropagationPolicy: &propagation}); err != nil && !apierrors.IsNotFound(err) {
		return nil, failAt(0, describeError(obj.Ref, "delete to recreate (immutable "+fields+")", err))
	}
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		_, err := ri.Get(ctx, obj.Ref.Name, metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})
	if err != nil {
		return nil, failAt(0, fmt.Errorf("%s: still present after delete (finalizers?): %w", obj.Ref, err))
	}
	return r.create(ctx, ri, c.mri, obj, changes, Recreated)
}
