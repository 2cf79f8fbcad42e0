package drift

import (
	"context"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"syncd.dev/syncd/internal/config"
	"syncd.dev/syncd/internal/planner"
)

// obj decodes one YAML document.
func obj(t testing.TB, doc string) *unstructured.Unstructured {
	t.Helper()
	// Decoded like the planner's manifests: integers stay int64.
	js, err := yaml.YAMLToJSON([]byte(strings.TrimSpace(doc)))
	if err != nil {
		t.Fatalf("decode %q: %v", doc, err)
	}
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON(js); err != nil {
		t.Fatalf("decode %q: %v", doc, err)
	}
	return u
}

// mustPlan plans YAML documents for app with the planner, offline.
func mustPlan(t testing.TB, app config.App, docs ...string) *planner.Plan {
	t.Helper()
	p, err := planner.New(plannerApp(t, app), planner.Options{Revision: "test"})
	if err != nil {
		t.Fatal(err)
	}
	var ms []planner.Manifest
	for i, d := range docs {
		ms = append(ms, planner.Manifest{File: "test.yaml", Index: i + 1, Object: obj(t, d)})
	}
	plan, err := p.Plan(context.Background(), ms)
	if err != nil {
		t.Fatalf("plan: %v", err)
	}
	return plan
}

// mf is a managedFields entry for offline tests.
func mf(manager, op, sub, fieldsJSON string, at time.Time) metav1.ManagedFieldsEntry {
	t := metav1.NewTime(at)
	return metav1.ManagedFieldsEntry{
		Manager: manager, Operation: metav1.ManagedFieldsOperationType(op), Subresource: sub,
		APIVersion: "v1", Time: &t, FieldsType: "FieldsV1",
		FieldsV1: &metav1.FieldsV1{Raw: []byte(fieldsJSON)},
	}
}

func ptime(t time.Time) *time.Time { return &t }

func stringReader(s string) *strings.Reader { return strings.NewReader(s) }
