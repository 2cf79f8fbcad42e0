package drift

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	"syncd.dev/syncd/internal/config"
	"syncd.dev/syncd/internal/livecache"
	"syncd.dev/syncd/internal/planner"
)

// normalizerNotCalled fails the test when the watcher asks it: the
// objects of these tests have no value drift.
type normalizerNotCalled struct{ t testing.TB }

func (n normalizerNotCalled) Normalize(context.Context, planner.ObjectRef, planner.Slice) (*unstructured.Unstructured, error) {
	n.t.Errorf("Normalize called")
	return nil, errors.New("not called")
}

// A managedFields entry the detector cannot decode is a warning: the
// watcher keeps it in Report, as Detect does, reports it to OnError once
// when it appears, and drops it when the entry is gone. The API server
// rejects such entries, so the informer's cache is filled by hand (the
// client points nowhere and is never used).
func TestWatcherKeepsDetectorWarnings(t *testing.T) {
	plan := mustPlan(t, config.App{Name: "app", Namespace: "ns"}, `{apiVersion: v1, kind: ConfigMap, metadata: {name: cm}, data: {color: blue}}`)
	manager := string(plan.Objects[0].Slices[0].Manager)
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	live := func(entries ...metav1.ManagedFieldsEntry) *unstructured.Unstructured {
		u := plan.Objects[0].Desired.DeepCopy()
		u.SetNamespace("ns")
		u.SetResourceVersion("7")
		u.SetManagedFields(entries)
		return u
	}
	good := mf(manager, "Apply", "", `{"f:data":{"f:color":{}}}`, at)
	bad := mf("other", "Update", "", `{"f:data":{}}`, at)
	bad.FieldsType = "FieldsV2"

	client, err := dynamic.NewForConfig(&rest.Config{Host: "http://127.0.0.1:1"})
	if err != nil {
		t.Fatal(err)
	}
	mapper := meta.NewDefaultRESTMapper(nil)
	mapper.Add(schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}, meta.RESTScopeNamespace)
	var reported []string
	w, err := NewWatcher(client, mapper, WatcherOptions{
		OnChange:   func(Delta) {},
		OnError:    func(err error) { reported = append(reported, err.Error()) },
		Normalizer: normalizerNotCalled{t},
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.SetPlan(plan, Options{}); err != nil {
		t.Fatal(err)
	}
	wo := w.objects[keyOf(plan.Objects[0].Ref)]
	inf := livecache.NewStatic(livecache.Key{})
	w.groups[wo.group] = &group{key: wo.group, informer: inf, synced: true}

	k := keyOf(plan.Objects[0].Ref)
	oneShot := func(u *unstructured.Unstructured) []string {
		return Detect(plan, map[planner.ObjectRef]*unstructured.Unstructured{plan.Objects[0].Ref: u}, Options{}).Warnings
	}
	warning := oneShot(live(good, bad))
	if len(warning) != 1 {
		t.Fatalf("Detect warnings = %q, want one", warning)
	}
	for _, step := range []struct {
		name         string
		live         *unstructured.Unstructured
		wantWarnings []string
		wantReported []string // OnError calls so far
	}{
		{"an entry that cannot be decoded", live(good, bad), warning, warning},
		{"the same again is not reported again", live(good, bad), warning, warning},
		{"the entry is gone", live(good), nil, warning},
		{"it comes back", live(good, bad), warning, append(append([]string{}, warning...), warning...)},
	} {
		// As an event would: the object is in the cache and dirty.
		if err := inf.Put(step.live); err != nil {
			t.Fatal(err)
		}
		w.dirty[k] = true
		w.process(context.Background())
		if w.dirty[k] {
			t.Fatalf("%s: the object was not recomputed", step.name)
		}
		if diff := cmp.Diff(step.wantWarnings, w.Report().Warnings); diff != "" {
			t.Errorf("%s: Report warnings (-want +got):\n%s", step.name, diff)
		}
		if diff := cmp.Diff(step.wantWarnings, oneShot(step.live)); diff != "" {
			t.Errorf("%s: Detect warnings (-want +got):\n%s", step.name, diff)
		}
		if diff := cmp.Diff(step.wantReported, reported); diff != "" {
			t.Errorf("%s: OnError (-want +got):\n%s", step.name, diff)
		}
	}
}
