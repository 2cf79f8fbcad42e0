package applier

import (
	"encoding/base64"
	"errors"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/json"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
)

// cause builds a FieldManagerConflict cause the way the API server's
// field manager does (k8s.io/apimachinery/pkg/util/managedfields/internal
// NewConflictError and printManager).
func cause(field, message string) metav1.StatusCause {
	return metav1.StatusCause{Type: metav1.CauseTypeFieldManagerConflict, Field: field, Message: message}
}

func TestFieldConflicts(t *testing.T) {
	tests := map[string]struct {
		err  error
		want Conflicts
	}{
		"apply manager": {
			err:  apierrors.NewApplyConflict([]metav1.StatusCause{cause(".data.color", `conflict with "syncd-a"`)}, `Apply failed with 1 conflict: conflict with "syncd-a": .data.color`),
			want: Conflicts{{Manager: "syncd-a", Path: ".data.color", Operation: "Apply"}},
		},
		"update manager with version and time": {
			err:  apierrors.NewApplyConflict([]metav1.StatusCause{cause(".data.color", `conflict with "operator" using v1 at 2026-11-29T22:40:01Z`)}, "x"),
			want: Conflicts{{Manager: "operator", Path: ".data.color", Operation: "Update", Time: "2026-11-29T22:40:01Z"}},
		},
		"update manager without time": {
			err:  apierrors.NewApplyConflict([]metav1.StatusCause{cause(".spec.replicas", `conflict with "kubectl-edit" using apps/v1`)}, "x"),
			want: Conflicts{{Manager: "kubectl-edit", Path: ".spec.replicas", Operation: "Update"}},
		},
		"update through a subresource": {
			err:  apierrors.NewApplyConflict([]metav1.StatusCause{cause(".spec.replicas", `conflict with "hpa-sim" with subresource "scale" using apps/v1 at 2026-11-29T22:40:01Z`)}, "x"),
			want: Conflicts{{Manager: "hpa-sim", Path: ".spec.replicas", Operation: "Update", Subresource: "scale", Time: "2026-11-29T22:40:01Z"}},
		},
		"apply through a subresource": {
			err:  apierrors.NewApplyConflict([]metav1.StatusCause{cause(".status.phase", `conflict with "ctrl" with subresource "status"`)}, "x"),
			want: Conflicts{{Manager: "ctrl", Path: ".status.phase", Operation: "Apply", Subresource: "status"}},
		},
		"manager name with quotes and spaces": {
			err:  apierrors.NewApplyConflict([]metav1.StatusCause{cause(".data.a", `conflict with "my \"odd\" manager" using v1`)}, "x"),
			want: Conflicts{{Manager: `my "odd" manager`, Path: ".data.a", Operation: "Update"}},
		},
		"several, sorted by path then manager": {
			err: apierrors.NewApplyConflict([]metav1.StatusCause{
				cause(`.spec.template.spec.containers[name="app"].image`, `conflict with "b"`),
				cause(".data.z", `conflict with "z"`),
				cause(".data.a", `conflict with "y"`),
				cause(".data.a", `conflict with "x"`),
			}, "x"),
			want: Conflicts{
				{Manager: "x", Path: ".data.a", Operation: "Apply"},
				{Manager: "y", Path: ".data.a", Operation: "Apply"},
				{Manager: "z", Path: ".data.z", Operation: "Apply"},
				{Manager: "b", Path: `.spec.template.spec.containers[name="app"].image`, Operation: "Apply"},
			},
		},
		"wrapped": {
			err:  fmt.Errorf("ConfigMap ns/x: apply: %w", apierrors.NewApplyConflict([]metav1.StatusCause{cause(".data.a", `conflict with "x"`)}, "x")),
			want: Conflicts{{Manager: "x", Path: ".data.a", Operation: "Apply"}},
		},
		"resourceVersion conflict is not a field conflict": {
			err: apierrors.NewConflict(schema.GroupResource{Resource: "configmaps"}, "x", errors.New("the object has been modified")),
		},
		"already exists is not a field conflict": {
			err: apierrors.NewAlreadyExists(schema.GroupResource{Resource: "configmaps"}, "x"),
		},
		"not an API error": {
			err: errors.New("connection refused"),
		},
		"nil": {},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got := FieldConflicts(tc.err)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("FieldConflicts (-want +got):\n%s", diff)
			}
			if got, want := isRetryableConflict(tc.err), apierrors.IsConflict(tc.err) && tc.want == nil; got != want {
				t.Errorf("isRetryableConflict = %v, want %v", got, want)
			}
		})
	}
}

func TestConflictsError(t *testing.T) {
	cs := Conflicts{
		{Manager: "operator", Path: ".data.color", Operation: "Update", Time: "2026-11-29T22:40:01Z"},
		{Manager: "hpa-sim", Path: ".spec.replicas", Operation: "Update", Subresource: "scale"},
		{Manager: "syncd-b", Path: ".data.size", Operation: "Apply"},
	}
	want := `field conflicts: .data.color is owned by "operator" (Update, at 2026-11-29T22:40:01Z); ` +
		`.spec.replicas is owned by "hpa-sim" (Update, subresource scale); ` +
		`.data.size is owned by "syncd-b" (Apply)`
	if got := cs.Error(); got != want {
		t.Errorf("Error():\n got %s\nwant %s", got, want)
	}
}

func TestSplitSameValue(t *testing.T) {
	env := `.spec.template.spec.containers[name="app"].env[name="POD"].valueFrom.fieldRef`
	fields := fieldpath.NewSet(
		fieldpath.MakePathOrDie("spec", "minReadySeconds"),
		fieldpath.MakePathOrDie("spec", "replicas"),
		fieldpath.MakePathOrDie("spec", "template", "spec", "containers", fieldpath.KeyByFields("name", "app"), "env", fieldpath.KeyByFields("name", "POD"), "valueFrom", "fieldRef"),
		fieldpath.MakePathOrDie("data", "color"),
		fieldpath.MakePathOrDie("stringData", "password"),
	)
	// secret is a Secret as the server returns it: stringData moved to
	// data.
	secret := func(password string) map[string]any {
		return map[string]any{"apiVersion": "v1", "kind": "Secret", "data": map[string]any{"password": base64.StdEncoding.EncodeToString([]byte(password))}}
	}
	deployment := func(spec string) map[string]any {
		t.Helper()
		var m map[string]any
		// Numbers decode as int64, as the dynamic client decodes them.
		if err := json.Unmarshal([]byte(`{"spec":`+spec+`}`), &m); err != nil {
			t.Fatal(err)
		}
		return m
	}
	withEnv := func(fieldRef string) map[string]any {
		return deployment(`{"template":{"spec":{"containers":[{"name":"app","env":[{"name":"POD","valueFrom":{"fieldRef":` + fieldRef + `}}]}]}}}`)
	}
	c := func(path string) Conflict {
		return Conflict{Manager: "kustomize-controller", Path: path, Operation: "Apply"}
	}
	tests := map[string]struct {
		cs           Conflicts
		live, forced map[string]any
		same, differ Conflicts
	}{
		"a zero value the server omits, absent from both": {
			cs:   Conflicts{c(".spec.minReadySeconds")},
			live: deployment(`{"replicas":1}`), forced: deployment(`{"replicas":1}`),
			same: Conflicts{c(".spec.minReadySeconds")},
		},
		"a defaulted field inside the declared one": {
			cs:     Conflicts{c(env)},
			live:   withEnv(`{"apiVersion":"v1","fieldPath":"metadata.name"}`),
			forced: withEnv(`{"apiVersion":"v1","fieldPath":"metadata.name"}`),
			same:   Conflicts{c(env)},
		},
		"the declared value differs": {
			cs:     Conflicts{c(env)},
			live:   withEnv(`{"apiVersion":"v1","fieldPath":"metadata.name"}`),
			forced: withEnv(`{"apiVersion":"v1","fieldPath":"metadata.namespace"}`),
			differ: Conflicts{c(env)},
		},
		"a value the server stores where it stores none now": {
			cs:   Conflicts{c(".spec.minReadySeconds")},
			live: deployment(`{}`), forced: deployment(`{"minReadySeconds":5}`),
			differ: Conflicts{c(".spec.minReadySeconds")},
		},
		"the declared value removes a stored one": {
			cs:   Conflicts{c(".spec.minReadySeconds")},
			live: deployment(`{"minReadySeconds":5}`), forced: deployment(`{}`),
			differ: Conflicts{c(".spec.minReadySeconds")},
		},
		"one same and one different, order kept": {
			cs:     Conflicts{c(".spec.minReadySeconds"), c(".spec.replicas")},
			live:   deployment(`{"replicas":2}`),
			forced: deployment(`{"replicas":3}`),
			same:   Conflicts{c(".spec.minReadySeconds")},
			differ: Conflicts{c(".spec.replicas")},
		},
		"a path the field set does not know is left to the policy": {
			cs:   Conflicts{c(".spec.paused")},
			live: deployment(`{}`), forced: deployment(`{}`),
			differ: Conflicts{c(".spec.paused")},
		},
		"a Secret's stringData value differs (the server keeps it in data)": {
			cs:   Conflicts{c(".stringData.password")},
			live: secret("theirs"), forced: secret("ours"),
			differ: Conflicts{c(".stringData.password")},
		},
		"a Secret's stringData value is the same": {
			cs:   Conflicts{c(".stringData.password")},
			live: secret("same"), forced: secret("same"),
			same: Conflicts{c(".stringData.password")},
		},
		"none": {},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			same, differ := splitSameValue(tc.cs, fields, &unstructured.Unstructured{Object: tc.live}, &unstructured.Unstructured{Object: tc.forced})
			if diff := cmp.Diff(tc.same, same); diff != "" {
				t.Errorf("same (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.differ, differ); diff != "" {
				t.Errorf("differ (-want +got):\n%s", diff)
			}
		})
	}
}
