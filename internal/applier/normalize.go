package applier

import (
	"context"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"syncd.dev/syncd/internal/planner"
)

// Normalize returns what the API server would store for the object ref
// after s were applied as s.Manager: the same apply request as Apply's,
// sent forced and with dryRun=All, so nothing is written and no field
// conflict blocks it. The answer holds the server's own form of every
// value s declares (zero values of omitempty fields dropped, quantities
// canonical, defaults and mutating admission applied); drift detection
// compares live values with it. One request, whatever Options.DryRun.
func (a *Applier) Normalize(ctx context.Context, ref planner.ObjectRef, s planner.Slice) (*unstructured.Unstructured, error) {
	mapping, err := a.mapping(ref)
	if err != nil {
		return nil, err
	}
	return a.send(ctx, a.client(mapping, ref), ref, request{Manager: s.Manager, Object: s.Object, Force: true, DryRun: true})
}
