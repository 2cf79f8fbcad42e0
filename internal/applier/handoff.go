package applier

import (
	"context"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	"syncd.dev/syncd/internal/paths"
	"syncd.dev/syncd/internal/planner"
)

// hold keeps fields that manager m is about to drop at their live value,
// under m's handoff manager, when dropping them would reset them to a
// server default instead of deleting them (the HPA replicas trap). The
// dry run of m's next apply (next, sent as a dry run whatever it says)
// tells which. It returns the held paths; a dry-run applier only names
// them.
func (r *objectRun) hold(ctx context.Context, ri dynamic.ResourceInterface, obj *planner.Object, next request, dropped *fieldpath.Set) ([]string, error) {
	m := next.Manager
	next.DryRun = true
	preview, err := r.a.send(ctx, ri, obj.Ref, next)
	if err != nil {
		return nil, err
	}
	// The values are needed here (the object at hand may be metadata
	// only, from a watch cache), and this path is rare.
	live, err := ri.Get(ctx, obj.Ref.Name, metav1.GetOptions{})
	if err != nil {
		return nil, describeError(obj.Ref, "get", err)
	}
	held := fieldpath.NewSet()
	var names []string
	dropped.Iterate(func(p fieldpath.Path) {
		was, inLive := paths.Lookup(live.Object, p)
		now, inPreview := paths.Lookup(preview.Object, p)
		_, wasMap := was.(map[string]any)
		_, nowMap := now.(map[string]any)
		if wasMap && nowMap {
			// A map the manager owned as a node (.metadata.annotations
			// after client-side apply's annotation left it): its keys
			// are separate fields with their own owners, so other keys
			// changing is not a reset.
			return
		}
		if inLive && inPreview && !equality.Semantic.DeepEqual(was, now) {
			held.Insert(p.Copy())
			names = append(names, p.String())
		}
	})
	if held.Empty() || r.a.opts.DryRun {
		return names, nil
	}
	hs, err := obj.ResliceFrom(live, HandoffManager(m), held)
	if err != nil {
		return nil, err
	}
	if _, err := r.a.send(ctx, ri, obj.Ref, request{Manager: HandoffManager(m), Object: hs.Object, Force: true}); err != nil {
		return nil, fmt.Errorf("%s: hold %s for handoff: %w", obj.Ref, strings.Join(names, ", "), err)
	}
	return names, nil
}

// identity returns an apply configuration with only the object's identity:
// applying it as a manager releases everything that manager owns.
func identity(obj *planner.Object) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion(obj.Desired.GetAPIVersion())
	u.SetKind(obj.Desired.GetKind())
	u.SetName(obj.Ref.Name)
	if obj.Ref.Namespace != "" {
		u.SetNamespace(obj.Ref.Namespace)
	}
	return u
}
