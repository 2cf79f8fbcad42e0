package drift

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"syncd.dev/syncd/internal/config"
	"syncd.dev/syncd/internal/planner"
)

// fakeNormalizer answers from a table and records what it was asked; it
// stands in for the API server only to count requests and inject errors
// (the server-backed tests use the applier's dry run).
type fakeNormalizer struct {
	mu      sync.Mutex
	answers map[planner.FieldManager]*unstructured.Unstructured
	err     error
	asked   []string
}

func (f *fakeNormalizer) Normalize(_ context.Context, ref planner.ObjectRef, s planner.Slice) (*unstructured.Unstructured, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.asked = append(f.asked, ref.Name+" "+string(s.Manager))
	if f.err != nil {
		return nil, f.err
	}
	return f.answers[s.Manager], nil
}

// TestNormalizedComparison: a declared leaf only syncd owns is not drift
// when its live value is what the server's dry run stores for it, even if
// it is not Git's text; the server's answer for another manager's slice
// does not count, and a real change is still value-drift.
func TestNormalizedComparison(t *testing.T) {
	at := time.Date(2026, 12, 1, 17, 0, 0, 0, time.UTC)
	plan := mustPlan(t, config.App{Name: "web", Namespace: "ns"}, `
apiVersion: v1
kind: ConfigMap
metadata: {name: cm}
data: {color: blue, size: "3"}
`)
	ref := plan.Objects[0].Ref
	cm := func(color string) *unstructured.Unstructured {
		u := obj(t, `{apiVersion: v1, kind: ConfigMap, metadata: {name: cm, namespace: ns}}`)
		u.Object["data"] = map[string]any{"color": color, "size": "3"}
		return u
	}
	live := cm("BLUE")
	live.SetManagedFields([]metav1.ManagedFieldsEntry{mf("syncd-web", "Apply", "", `{"f:data":{"f:color":{},"f:size":{}}}`, at)})
	tests := map[string]struct {
		normalized Normalized
		want       []string
	}{
		"no dry run: Git's text":             {want: []string{".data.color value-drift differs"}},
		"server stores the live value":       {normalized: Normalized{ref: {"syncd-web": cm("BLUE")}}},
		"server stores another value":        {normalized: Normalized{ref: {"syncd-web": cm("blue")}}, want: []string{".data.color value-drift differs"}},
		"answer for another manager's slice": {normalized: Normalized{ref: {"syncd-web-release": cm("BLUE")}}, want: []string{".data.color value-drift differs"}},
		"answer for another object":          {normalized: Normalized{planner.ObjectRef{Version: "v1", Kind: "ConfigMap", Namespace: "ns", Name: "other"}: {"syncd-web": cm("BLUE")}}, want: []string{".data.color value-drift differs"}},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			r := Detect(plan, map[planner.ObjectRef]*unstructured.Unstructured{ref: live}, Options{Normalized: tt.normalized})
			var got []string
			for _, f := range r.Findings {
				s := f.Path + " " + string(f.Class)
				if f.Differs {
					s += " differs"
				}
				got = append(got, s)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("findings (-want +got):\n%s", diff)
			}
		})
	}
}

// TestNormalizeAsks: Normalize asks the server only about slices with a
// value-drift finding (one request per slice), never about objects in
// sync, missing, or whose fields another manager took; a failed request
// is a warning and the field is compared with Git's text.
func TestNormalizeAsks(t *testing.T) {
	at := time.Date(2026, 12, 1, 17, 0, 0, 0, time.UTC)
	plan := mustPlan(t, config.App{Name: "web", Namespace: "ns"}, `
apiVersion: v1
kind: ConfigMap
metadata: {name: drifted}
data: {color: blue}
`, `
apiVersion: v1
kind: ConfigMap
metadata: {name: insync}
data: {color: blue}
`, `
apiVersion: v1
kind: ConfigMap
metadata: {name: taken}
data: {color: blue}
`, `
apiVersion: v1
kind: ConfigMap
metadata: {name: zero}
data: {color: ""}
`, `
apiVersion: v1
kind: ConfigMap
metadata: {name: gone}
data: {color: blue}
`)
	cm := func(name, color, manager, op string) *unstructured.Unstructured {
		u := obj(t, `{apiVersion: v1, kind: ConfigMap, metadata: {name: `+name+`, namespace: ns}}`)
		if color != "" {
			u.Object["data"] = map[string]any{"color": color}
		}
		u.SetManagedFields([]metav1.ManagedFieldsEntry{mf(manager, op, "", `{"f:data":{"f:color":{}}}`, at)})
		return u
	}
	live := map[planner.ObjectRef]*unstructured.Unstructured{}
	for _, o := range []*unstructured.Unstructured{
		cm("drifted", "BLUE", "syncd-web", "Apply"),
		cm("insync", "blue", "syncd-web", "Apply"),
		cm("taken", "red", "kubectl-edit", "Update"),
		cm("zero", "", "syncd-web", "Apply"),
	} {
		live[planner.RefOf(o)] = o
	}
	drifted := plan.Objects[0].Ref
	if drifted.Name != "drifted" {
		t.Fatalf("plan order: %v", drifted)
	}

	t.Run("answered", func(t *testing.T) {
		n := &fakeNormalizer{answers: map[planner.FieldManager]*unstructured.Unstructured{"syncd-web": cm("drifted", "BLUE", "syncd-web", "Apply")}}
		norm, warns := Normalize(context.Background(), n, plan, live, Options{})
		if diff := cmp.Diff([]string{"drifted syncd-web"}, n.asked); diff != "" {
			t.Errorf("requests (-want +got):\n%s", diff)
		}
		if len(warns) != 0 {
			t.Errorf("warnings: %q", warns)
		}
		if r := Detect(plan, live, Options{Normalized: norm}); len(r.Findings) != 2 || r.Findings[0].Class != Deleted || r.Findings[1].Class != TakenOver {
			t.Errorf("findings: %+v", r.Findings)
		}
	})
	t.Run("failed", func(t *testing.T) {
		n := &fakeNormalizer{err: errors.New("ConfigMap ns/drifted: apply as \"syncd-web\": forbidden")}
		norm, warns := Normalize(context.Background(), n, plan, live, Options{})
		if len(warns) != 1 || !strings.Contains(warns[0], "ConfigMap ns/drifted: could not ask the API server how it stores the fields of syncd-web (dry-run apply): ") || !strings.Contains(warns[0], "compared with Git's text") {
			t.Errorf("warnings: %q", warns)
		}
		r := Detect(plan, live, Options{Normalized: norm})
		if !hasFinding(r.Findings, ".data.color", ValueDrift, "") {
			t.Errorf("the field is no longer compared with Git's text: %+v", r.Findings)
		}
	})
}
