package applier

import (
	"context"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"syncd.dev/syncd/internal/config"
	"syncd.dev/syncd/internal/directive"
)

// annotatedConfigMap is a ConfigMap with data.v and the annotation
// key: value (none when key is empty).
func annotatedConfigMap(ns, name, v, key, value string) string {
	ann := ""
	if key != "" {
		ann = fmt.Sprintf("\n  annotations:\n    %s: %q", key, value)
	}
	return fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: %s\n  namespace: %s%s\ndata:\n  v: %q\n", name, ns, ann, v)
}

// TestSkipAnnotations: each per-object directive, in syncd's and Flux's
// spelling, against the API server: reconcile: disabled and ssa: Ignore
// create nothing and update nothing (also when only the live object
// carries them), ssa: IfNotPresent creates a missing object and never
// updates it. Excluded changes say why and do not make the apply
// incomplete.
func TestSkipAnnotations(t *testing.T) {
	tests := map[string]struct {
		key, value string
		reason     SkipReason
		creates    bool
	}{
		"syncd reconcile disabled": {key: directive.SyncdReconcile, value: "disabled", reason: ReconcileDisabled},
		"flux reconcile disabled":  {key: directive.FluxReconcile, value: "disabled", reason: ReconcileDisabled},
		"syncd ssa Ignore":         {key: directive.SyncdSSA, value: "Ignore", reason: SSAIgnore},
		"flux ssa ignore":          {key: directive.FluxSSA, value: "ignore", reason: SSAIgnore},
		"syncd ssa IfNotPresent":   {key: directive.SyncdSSA, value: "IfNotPresent", reason: SSAIfNotPresent, creates: true},
		"flux ssa IfNotPresent":    {key: directive.FluxSSA, value: "IfNotPresent", reason: SSAIfNotPresent, creates: true},
	}
	c := newCluster(t, env.Config)
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			ns := env.Namespace(t)
			app := config.App{Name: "web", Namespace: ns}
			cms := c.resource(t, configMaps, ns)

			// A missing object: created only for IfNotPresent.
			cs := c.apply(t, c.plan(t, app, annotatedConfigMap(ns, "new", "1", tc.key, tc.value)), ApplyOptions{})
			_, err := cms.Get(context.Background(), "new", metav1.GetOptions{})
			if tc.creates {
				wantChanges(t, cs, "ConfigMap new syncd-web created")
				if err != nil {
					t.Fatalf("IfNotPresent did not create the missing object: %v", err)
				}
				cs = c.apply(t, c.plan(t, app, annotatedConfigMap(ns, "new", "2", tc.key, tc.value)), ApplyOptions{})
				if got := c.get(t, configMaps, ns, "new").Object["data"]; !cmp.Equal(got, map[string]any{"v": "1"}) {
					t.Errorf("IfNotPresent updated the object: data = %v, want v: 1", got)
				}
			} else if !apierrors.IsNotFound(err) {
				t.Fatalf("get after an excluded apply: %v, want NotFound", err)
			}
			wantExcluded(t, cs, tc.reason)

			// An existing object Git now marks: left as it is.
			c.apply(t, c.plan(t, app, annotatedConfigMap(ns, "old", "1", "", "")), ApplyOptions{})
			before := c.get(t, configMaps, ns, "old")
			cs = c.apply(t, c.plan(t, app, annotatedConfigMap(ns, "old", "2", tc.key, tc.value)), ApplyOptions{})
			wantExcluded(t, cs, tc.reason)
			wantUnwritten(t, "an excluded apply", before, c.get(t, configMaps, ns, "old"))
		})
	}
}

// TestSkipLiveAnnotation: reconcile: disabled and ssa: Ignore written on
// the live object only (kubectl annotate) stop the applier too, as in
// Flux; IfNotPresent is read from Git only.
func TestSkipLiveAnnotation(t *testing.T) {
	c := newCluster(t, env.Config)
	for _, key := range []string{directive.SyncdReconcile, directive.FluxReconcile} {
		t.Run(key, func(t *testing.T) {
			ns := env.Namespace(t)
			app := config.App{Name: "web", Namespace: ns}
			c.apply(t, c.plan(t, app, annotatedConfigMap(ns, "cm", "1", "", "")), ApplyOptions{})
			patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:"disabled"}}}`, key)
			if _, err := c.resource(t, configMaps, ns).Patch(context.Background(), "cm", types.MergePatchType, []byte(patch), metav1.PatchOptions{FieldManager: "kubectl"}); err != nil {
				t.Fatal(err)
			}
			before := c.get(t, configMaps, ns, "cm")
			cs := c.apply(t, c.plan(t, app, annotatedConfigMap(ns, "cm", "2", "", "")), ApplyOptions{})
			wantExcluded(t, cs, ReconcileDisabled)
			if !cs.Changes[0].Skip.Live {
				t.Error("Skip.Live = false for a directive only the live object carries")
			}
			wantUnwritten(t, "an apply of an object disabled in the cluster", before, c.get(t, configMaps, ns, "cm"))
		})
	}
}

// wantExcluded checks that cs has one Excluded change for reason, and
// that the apply counts as complete.
func wantExcluded(t *testing.T, cs *ChangeSet, reason SkipReason) {
	t.Helper()
	if len(cs.Changes) != 1 || cs.Changes[0].Action != Excluded || cs.Changes[0].Skip == nil || cs.Changes[0].Skip.Reason != reason {
		t.Fatalf("changes = %v, want one excluded for %s%s", changes(cs), reason, errs(cs))
	}
	if !cs.OK() {
		t.Error("ChangeSet.OK() = false with only an excluded object")
	}
	t.Logf("%s", cs.Changes[0])
}
