package drift

import (
	"fmt"
	"reflect"
	"sync/atomic"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"syncd.dev/syncd/internal/config"
	"syncd.dev/syncd/internal/planner"
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

// TestSetPlanKeepsWhatAnUnchangedPlanWatches: the plan of a reconcile
// that changed nothing (a new Plan of the same objects) leaves the
// watcher's objects and index as they were, not built again beside them;
// a plan that changes one object, or drops one, is watched anew.
func TestSetPlanKeepsWhatAnUnchangedPlanWatches(t *testing.T) {
	c := newCluster(t)
	ns := env.Namespace(t)
	app := config.App{Name: "app", Namespace: ns}
	docs := func(value string, n int) []string {
		var out []string
		for i := range n {
			v := "v"
			if i == 0 {
				v = value
			}
			out = append(out, fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cm-%d}\ndata: {k: %s}\n", i, v))
		}
		return out
	}
	w, err := NewWatcher(c.dyn, c.mapper, WatcherOptions{OnChange: func(Delta) {}})
	if err != nil {
		t.Fatal(err)
	}
	set := func(plan *planner.Plan) (map[objKey]*watched, map[groupKey]map[string]objKey) {
		t.Helper()
		if err := w.SetPlan(plan, Options{}); err != nil {
			t.Fatal(err)
		}
		w.mu.Lock()
		defer w.mu.Unlock()
		return w.objects, w.index
	}
	objects, index := set(mustPlan(t, app, docs("v", 3)...))
	again, againIndex := set(mustPlan(t, app, docs("v", 3)...))
	if reflect.ValueOf(again).Pointer() != reflect.ValueOf(objects).Pointer() || reflect.ValueOf(againIndex).Pointer() != reflect.ValueOf(index).Pointer() {
		t.Error("an unchanged plan built the watcher's objects and index again")
	}
	changed, _ := set(mustPlan(t, app, docs("other", 3)...))
	if reflect.ValueOf(changed).Pointer() == reflect.ValueOf(objects).Pointer() {
		t.Fatal("a plan that changes cm-0 kept the previous objects")
	}
	if k := (objKey{Kind: "ConfigMap", Namespace: ns, Name: "cm-0"}); changed[k] == objects[k] || changed[k] == nil {
		t.Errorf("cm-0 changed and kept what was watched of it before: %v", changed[k])
	}
	if k := (objKey{Kind: "ConfigMap", Namespace: ns, Name: "cm-1"}); changed[k] == nil || changed[k].decl != objects[k].decl {
		t.Error("cm-1 is unchanged and its declaration was made again")
	}
	fewer, _ := set(mustPlan(t, app, docs("other", 2)...))
	if len(fewer) != 2 {
		t.Errorf("a plan of 2 objects after 3 watches %d", len(fewer))
	}
}
