package drift

import (
	"fmt"
	"sync/atomic"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"syncd.dev/syncd/internal/config"
)

// countingMapper counts the RESTMapping calls that reach the discovery
// mapper it wraps.
type countingMapper struct {
	meta.RESTMapper
	calls atomic.Int64
}

func (m *countingMapper) RESTMapping(gk schema.GroupKind, versions ...string) (*meta.RESTMapping, error) {
	m.calls.Add(1)
	return m.RESTMapper.RESTMapping(gk, versions...)
}

// TestSetPlanMapsEachKindOnce: a plan of many objects of two kinds asks
// the REST mapper twice, not once per object (the discovery mapper builds
// a new mapping on every call, about 6 KB: 60 MB of garbage per SetPlan
// of 10,000 objects), and every object is still watched in its kind's
// resource and namespace.
func TestSetPlanMapsEachKindOnce(t *testing.T) {
	c := newCluster(t)
	ns := env.Namespace(t)
	var docs []string
	for i := range 20 {
		docs = append(docs, fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cm-%d}\ndata: {k: v}\n", i))
	}
	for i := range 5 {
		docs = append(docs, fmt.Sprintf("apiVersion: v1\nkind: Secret\nmetadata: {name: s-%d}\nstringData: {k: v}\n", i))
	}
	plan := mustPlan(t, config.App{Name: "app", Namespace: ns}, docs...)
	mapper := &countingMapper{RESTMapper: c.mapper}
	w, err := NewWatcher(c.dyn, mapper, WatcherOptions{OnChange: func(Delta) {}})
	if err != nil {
		t.Fatal(err)
	}
	objects, names, err := w.watchedOf(plan, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := mapper.calls.Load(); got != 2 {
		t.Errorf("RESTMapping called %d times for a plan of 25 objects of 2 kinds, want 2", got)
	}
	if len(objects) != 25 {
		t.Fatalf("watched %d objects, want 25", len(objects))
	}
	for _, want := range []struct {
		resource string
		n        int
	}{{"configmaps", 20}, {"secrets", 5}} {
		g := groupKey{gvr: schema.GroupVersionResource{Version: "v1", Resource: want.resource}, namespace: ns}
		if got := len(names[g]); got != want.n {
			t.Errorf("%s in %s: %d objects watched, want %d", want.resource, ns, got, want.n)
		}
	}
}
