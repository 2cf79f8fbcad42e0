package drift

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"syncd.dev/syncd/internal/config"
	"syncd.dev/syncd/internal/livecache"
	"syncd.dev/syncd/internal/ownership"
)

// cacheOne stores u in a static informer of the live cache, as a watch event
// would, and returns the cached object.
func cacheOne(t testing.TB, u *unstructured.Unstructured) *livecache.Object {
	t.Helper()
	inf := livecache.NewStatic(livecache.Key{Cluster: config.LocalCluster, Resource: schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}, Namespace: u.GetNamespace()})
	if err := inf.Put(u); err != nil {
		t.Fatal(err)
	}
	o, ok := inf.Get(u.GetNamespace(), u.GetName())
	if !ok {
		t.Fatalf("%s not cached", u.GetName())
	}
	return o
}

// TestCachedCopyJudgesLikeTheObject pins that the watcher, which reads a
// cached object in place (its content, labels and annotations) instead of
// building it whole, finds what Detect finds on the same object read
// whole: the same findings with the same values, for fields of the content,
// of the metadata the cache answers in place and of the metadata it builds.
func TestCachedCopyJudgesLikeTheObject(t *testing.T) {
	at := time.Date(2026, 11, 29, 14, 2, 5, 0, time.UTC)
	const git = `
apiVersion: v1
kind: ConfigMap
metadata:
  name: cm
  namespace: ns
  labels: {team: a}
  annotations: {note: x}
  finalizers: [example.com/keep]
data: {color: blue}
`
	owned := `{"f:metadata":{"f:labels":{"f:team":{}},"f:annotations":{"f:note":{}},"f:finalizers":{"v:\"example.com/keep\"":{}}},"f:data":{"f:color":{}}}`
	live := func(doc string, entries ...metav1.ManagedFieldsEntry) *unstructured.Unstructured {
		u := obj(t, doc)
		u.SetManagedFields(entries)
		return u
	}
	tests := map[string]*unstructured.Unstructured{
		"in sync": live(`{apiVersion: v1, kind: ConfigMap, metadata: {name: cm, namespace: ns, labels: {team: a}, annotations: {note: x}, finalizers: [example.com/keep]}, data: {color: blue}}`,
			mf("syncd-web", "Apply", "", owned, at)),
		"every field changed by another manager": live(`{apiVersion: v1, kind: ConfigMap, metadata: {name: cm, namespace: ns, labels: {team: b}, annotations: {note: z}, finalizers: [example.com/other]}, data: {color: red}}`,
			mf("kubectl-edit", "Update", "", owned, at)),
		"fields removed": live(`{apiVersion: v1, kind: ConfigMap, metadata: {name: cm, namespace: ns}}`,
			mf("syncd-web", "Apply", "", `{"f:data":{}}`, at)),
		"unmanaged": live(`{apiVersion: v1, kind: ConfigMap, metadata: {name: cm, namespace: ns, labels: {team: a}}, data: {color: blue}}`),
		"left alone by a live directive": live(`{apiVersion: v1, kind: ConfigMap, metadata: {name: cm, namespace: ns, annotations: {syncd.dev/reconcile: disabled}}, data: {color: red}}`,
			mf("kubectl-edit", "Update", "", owned, at)),
	}
	plan := mustPlan(t, config.App{Name: "web"}, git)
	decl := declare(&plan.Objects[0])
	d := newDetector(plan, Options{})
	for name, u := range tests {
		t.Run(name, func(t *testing.T) {
			whole, whileWarns := d.object(decl, liveOf(u))
			got, gotWarns := d.object(decl, cachedCopy(cacheOne(t, u)))
			if diff := cmp.Diff(whole, got, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("findings of the cached object (-read whole +cached):\n%s", diff)
			}
			if diff := cmp.Diff(whileWarns, gotWarns, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("warnings (-read whole +cached):\n%s", diff)
			}
		})
	}
}

// TestCachedJudgementAllocations guards what the watcher's judgement of a
// cached object in sync allocates (it judges every object of the plan
// after each sync that changed them): beyond decoding its managedFields
// and its content's JSON (the cache holds it as JSON), a handful of
// allocations (10 here), never a copy of the object. Building the
// object whole, as it did, took 58 (92 in all, 34 of them the decode).
func TestCachedJudgementAllocations(t *testing.T) {
	at := time.Date(2026, 11, 29, 14, 2, 5, 0, time.UTC)
	plan := mustPlan(t, config.App{Name: "web"}, `{apiVersion: v1, kind: ConfigMap, metadata: {name: cm, namespace: ns, labels: {team: a}}, data: {color: blue, size: "3"}}`)
	u := obj(t, `{apiVersion: v1, kind: ConfigMap, metadata: {name: cm, namespace: ns, uid: 0f4a, resourceVersion: "12", labels: {team: a}, annotations: {managers.syncd.dev/web: syncd-web}}, data: {color: blue, size: "3"}}`)
	u.SetManagedFields([]metav1.ManagedFieldsEntry{mf("syncd-web", "Apply", "", `{"f:metadata":{"f:labels":{"f:team":{}}},"f:data":{"f:color":{},"f:size":{}}}`, at)})
	o := cacheOne(t, u)
	decl := declare(&plan.Objects[0])
	d := newDetector(plan, Options{})
	if fs, _ := d.object(decl, cachedCopy(o)); len(fs) > 0 {
		t.Fatalf("the object in sync has findings: %v", fs)
	}
	decode := testing.AllocsPerRun(20, func() { ownership.DecodeEntries(o.GetManagedFields()) })
	decode += testing.AllocsPerRun(20, func() { _, _ = o.Content() })
	judge := testing.AllocsPerRun(20, func() { d.object(decl, cachedCopy(o)) })
	const beyondDecode = 20
	if judge > decode+beyondDecode {
		t.Errorf("judging a cached object in sync allocates %.0f times, decoding its managedFields and content %.0f: more than %d beyond the decodes (is the object copied again?)", judge, decode, beyondDecode)
	}
}
