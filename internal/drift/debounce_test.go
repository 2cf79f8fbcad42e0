package drift

import (
	"context"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	testclock "k8s.io/utils/clock/testing"

	"syncd.dev/syncd/internal/config"
)

// TestWatcherDebounce checks the debounce with a fake clock: events on an
// object are folded until the debounce elapses, then published once. A
// fake dynamic client is enough here: the managedFields are written by
// hand, and only the event plumbing is under test.
func TestWatcherDebounce(t *testing.T) {
	t0 := time.Date(2026, 11, 29, 14, 0, 0, 0, time.UTC)
	clk := testclock.NewFakeClock(t0)
	plan := mustPlan(t, config.App{Name: "app", Namespace: "ns"}, `{apiVersion: v1, kind: ConfigMap, metadata: {name: seed}, data: {color: blue}}`)
	cm := obj(t, `{apiVersion: v1, kind: ConfigMap, metadata: {name: seed, namespace: ns}, data: {color: blue}}`)
	cm.SetManagedFields([]metav1.ManagedFieldsEntry{mf("syncd-app", "Apply", "", `{"f:data":{"f:color":{}}}`, t0)})
	gvr := schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	client := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{gvr: "ConfigMapList"}, cm)
	mapper := meta.NewDefaultRESTMapper(nil)
	mapper.Add(schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}, meta.RESTScopeNamespace)

	rec := newRecorder()
	w, err := NewWatcher(client, mapper, WatcherOptions{OnChange: rec.record, Clock: clk, Debounce: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.SetPlan(plan, Options{}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = w.Run(ctx) }()
	defer func() { cancel(); <-done }()

	waitWaiters := func() {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for !clk.HasWaiters() {
			if time.Now().After(deadline) {
				t.Fatal("no debounce timer armed")
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	waitWaiters() // the informer's initial add
	clk.Step(200 * time.Millisecond)
	// The sync marks every object for recomputation outside the debounce
	// (HasSynced is polled): wait for it, so it cannot fold in the writes.
	waitState(t, w, "the initial sync computed", func() bool { return settled(w) })

	// Two out-of-band writes in a row: one timer, one change.
	res := client.Resource(gvr).Namespace("ns")
	for i, color := range []string{"green", "red"} {
		u := cm.DeepCopy()
		u.Object["data"] = map[string]any{"color": color}
		u.SetResourceVersion("")
		u.SetManagedFields([]metav1.ManagedFieldsEntry{mf("operator", "Update", "", `{"f:data":{"f:color":{}}}`, t0.Add(time.Duration(i+1)*time.Second))})
		if _, err := res.Update(ctx, u, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	waitWaiters()
	// Both writes must have reached the watcher before the clock moves.
	deadline := time.Now().Add(30 * time.Second)
	for liveColor(w) != "red" {
		if time.Now().After(deadline) {
			t.Fatal("the watcher never saw the second write")
		}
		time.Sleep(5 * time.Millisecond)
	}
	if n := rec.len(); n != 0 {
		t.Fatalf("%d changes published before the debounce elapsed", n)
	}
	clk.Step(200 * time.Millisecond)
	rec.waitFor(t, 0, 30*time.Second, "the take-over", func(ch Delta) bool {
		return hasFinding(ch.New, ".data.color", TakenOver, "operator")
	})
	if got := w.Report(); len(got.Findings) != 1 || got.Findings[0].Live != "red" {
		t.Errorf("Report: %+v", got.Findings)
	}
	if n := rec.len(); n != 1 {
		t.Errorf("%d changes, want 1", n)
	}
}

// liveColor reads .data.color of the seed from the watcher's informer.
func liveColor(w *Watcher) string {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, g := range w.groups {
		if o, ok := g.informer.Get("ns", "seed"); ok {
			u, err := o.Unstructured()
			if err != nil {
				return ""
			}
			c, _, _ := unstructured.NestedString(u.Object, "data", "color")
			return c
		}
	}
	return ""
}
