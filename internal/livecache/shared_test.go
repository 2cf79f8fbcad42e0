package livecache

import (
	"context"
	"fmt"
	"reflect"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"
)

// sameMap reports whether a and b are one map, not two equal ones.
func sameMap(a, b map[string]string) bool {
	return reflect.ValueOf(a).UnsafePointer() == reflect.ValueOf(b).UnsafePointer()
}

// TestObjectsShareEqualLabels: objects of one informer that carry equal
// labels (written in another order) share one labels map, and the same
// for annotations; an object with other labels keeps its own, and every
// object still reads its own values. The fake client only serves the
// list: what is under test is the informer's transform.
func TestObjectsShareEqualLabels(t *testing.T) {
	gvr := schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	client := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{gvr: "ConfigMapList"},
		mustObject(t, `{apiVersion: v1, kind: ConfigMap, metadata: {name: a, namespace: ns, labels: {app: x, tier: web}, annotations: {managers.syncd.dev/x: syncd-x}, `+
			`managedFields: [{manager: syncd-x, operation: Apply, apiVersion: v1, fieldsType: FieldsV1, fieldsV1: {"f:data": {"f:k": {}}}}]}}`),
		mustObject(t, `{apiVersion: v1, kind: ConfigMap, metadata: {name: b, namespace: ns, labels: {tier: web, app: x}, annotations: {managers.syncd.dev/x: syncd-x}, `+
			`managedFields: [{manager: syncd-x, operation: Apply, apiVersion: v1, fieldsType: FieldsV1, fieldsV1: {"f:data": {"f:k": {}}}}]}}`),
		mustObject(t, `{apiVersion: v1, kind: ConfigMap, metadata: {name: c, namespace: ns, labels: {app: x, tier: db}, annotations: {managers.syncd.dev/x: syncd-x, note: "c"}, `+
			`managedFields: [{manager: syncd-x, operation: Apply, apiVersion: v1, fieldsType: FieldsV1, fieldsV1: {"f:data": {"f:other": {}}}}]}}`),
	)
	c := New("local")
	defer c.Stop()
	inf, err := c.Acquire(Key{Cluster: "local", Resource: gvr, Namespace: "ns"}, client)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if !inf.WaitForSync(ctx) {
		t.Fatal("informer did not sync")
	}
	get := func(name string) *Object {
		t.Helper()
		o, ok := inf.Get("ns", name)
		if !ok {
			t.Fatalf("%s not cached", name)
		}
		return o
	}
	a, b, o := get("a"), get("b"), get("c")
	if !sameMap(a.Labels, b.Labels) || !sameMap(a.Annotations, b.Annotations) {
		t.Error("a and b carry equal labels and annotations but hold two copies")
	}
	if sameMap(a.Labels, o.Labels) || sameMap(a.Annotations, o.Annotations) {
		t.Error("c shares a's labels or annotations, which differ")
	}
	if b.Labels["tier"] != "web" || o.Labels["tier"] != "db" || o.Annotations["note"] != "c" || len(a.Annotations) != 1 {
		t.Errorf("values changed: b %v, c %v %v, a %v", b.Labels, o.Labels, o.Annotations, a.Annotations)
	}
	fa, fb, fc := fieldsOf(t, a), fieldsOf(t, b), fieldsOf(t, o)
	if fa != fb {
		t.Error("a and b's managers own the same fields but hold two copies of fieldsV1")
	}
	if fa == fc || string(fc.Raw) != `{"f:data":{"f:other":{}}}` {
		t.Errorf("c's fieldsV1 is %s, shared with a's: %v", fc.Raw, fa == fc)
	}
}

// fieldsOf returns the fieldsV1 of o's only managedFields entry.
func fieldsOf(t *testing.T, o *Object) *metav1.FieldsV1 {
	t.Helper()
	if len(o.ManagedFields) != 1 || o.ManagedFields[0].FieldsV1 == nil {
		t.Fatalf("%s: managedFields %v, want one entry with fieldsV1", o.Name, o.ManagedFields)
	}
	return o.ManagedFields[0].FieldsV1
}

// TestMapKeyTellsMapsApart: two maps have one key only when they are
// equal, whatever bytes their keys and values hold.
func TestMapKeyTellsMapsApart(t *testing.T) {
	distinct := []map[string]string{
		{"a": "b"},
		{"a": "b", "c": ""},
		{"a": "bc"},
		{"ab": "c"},
		{"a": "b\x00c"},
		{"a\x00b": "c"},
		{"a": "", "b": "c"},
		{"a": "\x01b"},
	}
	seen := map[string]int{}
	for i, m := range distinct {
		k := mapKey(m)
		if j, ok := seen[k]; ok {
			t.Errorf("maps %v and %v have one key", distinct[j], m)
		}
		seen[k] = i
	}
	if mapKey(map[string]string{"x": "1", "y": "2"}) != mapKey(map[string]string{"y": "2", "x": "1"}) {
		t.Error("equal maps have two keys")
	}
}

// TestSharedMetaStaysBounded: an informer whose objects all carry other
// labels, or other owned fields, holds at most maxShared of them to
// share.
func TestSharedMetaStaysBounded(t *testing.T) {
	s := &sharedMeta{}
	for i := range 3 * maxShared {
		m := map[string]string{"revision": fmt.Sprint(i)}
		if got := s.share(m); !sameMap(got, m) {
			t.Fatalf("a new map was answered with another")
		}
		f := &metav1.FieldsV1{Raw: fmt.Appendf(nil, `{"f:data":{"f:k%d":{}}}`, i)}
		if got := s.shareFields(f); got != f {
			t.Fatalf("a new fieldsV1 was answered with another")
		}
		if len(s.maps) > maxShared || len(s.fields) > maxShared {
			t.Fatalf("%d maps and %d fieldsV1 held, want at most %d each", len(s.maps), len(s.fields), maxShared)
		}
	}
}
