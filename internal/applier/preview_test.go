package applier

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// previewSummary is what a test compares of an ObjectPreview: the dry-run
// result's uid and timestamps change from one dry run to the next.
func previewSummary(p *ObjectPreview) string {
	var actions []string
	for _, c := range p.Changes {
		actions = append(actions, fmt.Sprintf("%s %s", c.Manager, c.Action))
	}
	replicas := int64(-1)
	if p.After != nil {
		replicas, _, _ = unstructured.NestedInt64(p.After.Object, "spec", "replicas")
	}
	return fmt.Sprintf("%s live=%v after.replicas=%d afterErr=%v [%s]", p.Object.Ref.Name, p.Live != nil, replicas, p.AfterErr, strings.Join(actions, ", "))
}

// TestPreviewEach: PreviewWith hands every object's finished preview to
// Each exactly once, the same the returned slice holds, and the previews
// are those of Preview.
func TestPreviewEach(t *testing.T) {
	c := newCluster(t, env.Config)
	ns := env.Namespace(t)
	c.apply(t, c.plan(t, webApp(ns, "syncd-web"), deployment("web", 3, "nginx:1.27")), ApplyOptions{RecordManagers: true})
	plan := c.plan(t, webApp(ns, "syncd-web", releaseImages), deployment("web", 4, "nginx:1.28"), deployment("api", 2, "nginx:1.27"))
	dry := c.applier(t, Options{DryRun: true, Concurrency: 2})

	var mu sync.Mutex
	each := map[int][]string{}
	got, err := dry.PreviewWith(context.Background(), plan, ApplyOptions{RecordManagers: true}, PreviewOptions{Each: func(i int, p *ObjectPreview) {
		mu.Lock()
		defer mu.Unlock()
		each[i] = append(each[i], previewSummary(p))
	}})
	if err != nil {
		t.Fatal(err)
	}
	want, err := dry.Preview(context.Background(), plan, ApplyOptions{RecordManagers: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(plan.Objects) || len(want) != len(plan.Objects) {
		t.Fatalf("%d and %d previews for %d objects", len(got), len(want), len(plan.Objects))
	}
	for i := range plan.Objects {
		if diff := cmp.Diff([]string{previewSummary(&got[i])}, each[i]); diff != "" {
			t.Errorf("object %d: Each (-returned +Each):\n%s", i, diff)
		}
		if diff := cmp.Diff(previewSummary(&want[i]), previewSummary(&got[i])); diff != "" {
			t.Errorf("object %d: PreviewWith (-Preview +PreviewWith):\n%s", i, diff)
		}
	}
	if len(each) != len(plan.Objects) {
		t.Errorf("Each called for %d objects, want %d", len(each), len(plan.Objects))
	}
}

// TestKeepHeldCopies: the dry-run result may be shared by the client, so
// keepHeld returns a copy with the held field's live value and leaves the
// result it was given alone.
func TestKeepHeldCopies(t *testing.T) {
	live := object(t, deployment("web", 5, "nginx:1.27"))
	live.SetManagedFields(nil)
	live.Object["metadata"].(map[string]any)["managedFields"] = []any{map[string]any{
		"manager": "syncd-web", "operation": "Apply", "apiVersion": "apps/v1", "fieldsType": "FieldsV1",
		"fieldsV1": map[string]any{"f:spec": map[string]any{"f:replicas": map[string]any{}}},
	}}
	after := object(t, deployment("web", 1, "nginx:1.27"))
	before := after.DeepCopy()

	kept := keepHeld(after, live, []string{".spec.replicas"})
	if r, _, _ := unstructured.NestedInt64(kept.Object, "spec", "replicas"); r != 5 {
		t.Errorf("held .spec.replicas = %d, want the live 5", r)
	}
	if diff := cmp.Diff(before.Object, after.Object); diff != "" {
		t.Errorf("keepHeld changed the result it was given (-before +after):\n%s", diff)
	}
	if keepHeld(after, live, nil) != after {
		t.Error("keepHeld copied a result with nothing held")
	}
}

// TestPreviewImmutableSaysWhatToDo: the preview of a change to an
// immutable field (a Deployment's selector) says what the apply would:
// which field, and to set recreate: true or revert it.
func TestPreviewImmutableSaysWhatToDo(t *testing.T) {
	c := newCluster(t, env.Config)
	ns := env.Namespace(t)
	c.apply(t, c.plan(t, webApp(ns, "syncd-web"), deployment("web", 1, "nginx:1.27")), ApplyOptions{})
	moved := strings.ReplaceAll(strings.Replace(deployment("web", 1, "nginx:1.27"), "matchLabels:\n      app: web", "matchLabels:\n      app: web2", 1), "labels:\n        app: web", "labels:\n        app: web2")
	dry := c.applier(t, Options{DryRun: true})
	got, err := dry.Preview(context.Background(), c.plan(t, webApp(ns, "syncd-web"), moved), ApplyOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].AfterErr == nil {
		t.Fatalf("preview of a selector change: %v, want a refusal", got)
	}
	for _, want := range []string{"immutable field(s) spec.selector changed", "set recreate: true on the app", "or revert the field"} {
		if !strings.Contains(got[0].AfterErr.Error(), want) {
			t.Errorf("preview refusal lacks %q: %v", want, got[0].AfterErr)
		}
	}
}
