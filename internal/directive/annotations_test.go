package directive

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func TestOf(t *testing.T) {
	tests := map[string]struct {
		annotations, labels map[string]string
		want                Set
		mode                SSAMode
	}{
		"none": {mode: SSAMerge},
		"syncd prune": {
			annotations: map[string]string{SyncdPrune: "disabled"},
			want:        Set{PruneDisabled: Directive{SyncdPrune, "disabled"}}, mode: SSAMerge,
		},
		"flux prune, any case": {
			annotations: map[string]string{FluxPrune: "Disabled"},
			want:        Set{PruneDisabled: Directive{FluxPrune, "Disabled"}}, mode: SSAMerge,
		},
		"prune allow is not disabled": {
			annotations: map[string]string{SyncdPrune: "allow"}, mode: SSAMerge,
		},
		"helm resource-policy keep (cert-manager's and argo-cd's CRDs)": {
			annotations: map[string]string{HelmResourcePolicy: "keep"},
			want:        Set{PruneDisabled: Directive{HelmResourcePolicy, "keep"}}, mode: SSAMerge,
		},
		"helm resource-policy of another value keeps nothing": {
			annotations: map[string]string{HelmResourcePolicy: "delete"}, mode: SSAMerge,
		},
		"prune disabled before helm keep": {
			annotations: map[string]string{HelmResourcePolicy: "keep", SyncdPrune: "disabled"},
			want:        Set{PruneDisabled: Directive{SyncdPrune, "disabled"}}, mode: SSAMerge,
		},
		"flux reconcile in a label": {
			labels: map[string]string{FluxReconcile: "disabled"},
			want:   Set{ReconcileDisabled: Directive{FluxReconcile, "disabled"}}, mode: SSAMerge,
		},
		"syncd ssa IfNotPresent": {
			annotations: map[string]string{SyncdSSA: "IfNotPresent"},
			want:        Set{SSA: Directive{SyncdSSA, "IfNotPresent"}}, mode: SSAIfNotPresent,
		},
		"flux ssa ignore lower case": {
			annotations: map[string]string{FluxSSA: "ignore"},
			want:        Set{SSA: Directive{FluxSSA, "ignore"}}, mode: SSAIgnore,
		},
		"ssa Merge is the default": {
			annotations: map[string]string{FluxSSA: "Merge"}, mode: SSAMerge,
		},
		"syncd's key first": {
			annotations: map[string]string{SyncdReconcile: "disabled", FluxReconcile: "disabled"},
			want:        Set{ReconcileDisabled: Directive{SyncdReconcile, "disabled"}}, mode: SSAMerge,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			u := &unstructured.Unstructured{Object: map[string]any{}}
			u.SetAnnotations(tc.annotations)
			u.SetLabels(tc.labels)
			got := Of(u)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Of (-want +got):\n%s", diff)
			}
			if m := got.Mode(); m != tc.mode {
				t.Errorf("Mode() = %q, want %q", m, tc.mode)
			}
		})
	}
	if got := Of(nil); got != (Set{}) {
		t.Errorf("Of(nil) = %+v, want none", got)
	}
}
