package livecache

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"sigs.k8s.io/yaml"
)

// mustObject decodes y as the informers' decoder decodes the API
// server's JSON (integers as int64).
func mustObject(t *testing.T, y string) *unstructured.Unstructured {
	t.Helper()
	j, err := yaml.YAMLToJSON([]byte(y))
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := utiljson.Unmarshal(j, &m); err != nil {
		t.Fatal(err)
	}
	return &unstructured.Unstructured{Object: m}
}

// TestObjectKeepsWhatConsumersRead: the cached form keeps the metadata
// (managedFields included) and every top-level field but status, and
// turns back into the same object without status.
func TestObjectKeepsWhatConsumersRead(t *testing.T) {
	tests := map[string]struct {
		in, want string
	}{
		"deployment with status": {
			in: `
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  namespace: ns
  resourceVersion: "7"
  labels: {applyset.kubernetes.io/part-of: applyset-x}
  managedFields:
  - manager: syncd
    operation: Apply
    apiVersion: apps/v1
    fieldsType: FieldsV1
    fieldsV1: {"f:spec": {"f:replicas": {}}}
spec: {replicas: 2}
status: {readyReplicas: 2}
`,
			want: `
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  namespace: ns
  resourceVersion: "7"
  labels: {applyset.kubernetes.io/part-of: applyset-x}
  managedFields:
  - manager: syncd
    operation: Apply
    apiVersion: apps/v1
    fieldsType: FieldsV1
    fieldsV1: {"f:spec": {"f:replicas": {}}}
spec: {replicas: 2}
`,
		},
		"configmap": {
			in:   `{apiVersion: v1, kind: ConfigMap, metadata: {name: a}, data: {k: v}}`,
			want: `{apiVersion: v1, kind: ConfigMap, metadata: {name: a}, data: {k: v}}`,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			item, err := toObject(mustObject(t, tc.in))
			if err != nil {
				t.Fatal(err)
			}
			o := item.(*Object)
			got, err := o.Unstructured()
			if err != nil {
				t.Fatal(err)
			}
			want := mustObject(t, tc.want)
			// ToUnstructured writes the zero creationTimestamp as null.
			unstructured.RemoveNestedField(got.Object, "metadata", "creationTimestamp")
			if diff := cmp.Diff(want.Object, got.Object); diff != "" {
				t.Errorf("Unstructured (-want +got):\n%s", diff)
			}
			lean, err := o.UnstructuredWithoutManagedFields()
			if err != nil {
				t.Fatal(err)
			}
			unstructured.RemoveNestedField(lean.Object, "metadata", "creationTimestamp")
			unstructured.RemoveNestedField(want.Object, "metadata", "managedFields")
			if diff := cmp.Diff(want.Object, lean.Object); diff != "" {
				t.Errorf("UnstructuredWithoutManagedFields (-want +got):\n%s", diff)
			}
			if len(o.Metadata().ManagedFields) != len(mustObject(t, tc.in).GetManagedFields()) {
				t.Error("UnstructuredWithoutManagedFields changed the cached managedFields")
			}
			// Content is the caller's: changing it changes no cached copy.
			content, err := o.Content()
			if err != nil {
				t.Fatal(err)
			}
			clear(content)
			if again, err := o.Content(); err != nil || len(again) == 0 {
				t.Errorf("Content after its last answer was cleared = %v, %v; want the cached fields", again, err)
			}
			if again, err := toObject(o); err != nil || again != o {
				t.Errorf("toObject of an Object = %v, %v; want it unchanged", again, err)
			}
			if diff := cmp.Diff(o.Metadata(), o.DeepCopyObject().(*Object).Metadata()); diff != "" {
				t.Errorf("DeepCopyObject metadata (-want +got):\n%s", diff)
			}
		})
	}
}
