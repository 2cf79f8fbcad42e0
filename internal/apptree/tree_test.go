package apptree

import (
	"context"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"syncd.dev/syncd/internal/inventory"
	"syncd.dev/syncd/internal/planner"
)

// TestBuild: members are grouped by stage then kind in apply order, each
// with its outcome from the inventory and its health and managers from
// the live object; a member the cluster no longer has is NotFound; a
// read that fails otherwise fails the build naming the object.
func TestBuild(t *testing.T) {
	inv := &inventory.Inventory{App: "web", Revision: "abc", Members: []*inventory.Member{
		{Version: "v1", Kind: "ConfigMap", Namespace: "web", Name: "b", Stage: planner.StageNamespaced, ResourceVersion: "7"},
		{Version: "v1", Kind: "ConfigMap", Namespace: "web", Name: "c", Stage: planner.StageNamespaced, ResourceVersion: "8", Slices: []inventory.SliceHash{
			{Manager: "syncd-web", Hash: "h1", Owned: "o1", Yield: &inventory.Yield{Policy: "p", To: []inventory.Holder{{Manager: "operator", Fields: "f1"}, {Manager: "kubectl-edit", Fields: "f2"}}}},
			{Manager: "syncd-web-limits", Hash: "h2", Owned: "o2", Yield: &inventory.Yield{Policy: "p", To: []inventory.Holder{{Manager: "operator", Fields: "f3"}}}},
		}},
		{Version: "v1", Kind: "Namespace", Name: "web", Stage: planner.StageNamespaces, ResourceVersion: "3"},
		{Version: "v1", Kind: "ConfigMap", Namespace: "web", Name: "a", Stage: planner.StageNamespaced},
		{Group: "apps", Version: "v1", Kind: "Deployment", Namespace: "web", Name: "old", Stage: planner.StageNamespaced, ResourceVersion: "9", Blocked: "budget"},
	}}
	live := map[string]*unstructured.Unstructured{
		"web": object("v1", "Namespace", "", "web", metav1.ManagedFieldsEntry{Manager: "syncd-web", Operation: metav1.ManagedFieldsOperationApply}),
		"b": object("v1", "ConfigMap", "web", "b",
			metav1.ManagedFieldsEntry{Manager: "syncd-web", Operation: metav1.ManagedFieldsOperationApply},
			metav1.ManagedFieldsEntry{Manager: "kubectl-label", Operation: metav1.ManagedFieldsOperationUpdate}),
		"c":   object("v1", "ConfigMap", "web", "c", metav1.ManagedFieldsEntry{Manager: "operator", Operation: metav1.ManagedFieldsOperationUpdate}),
		"old": object("apps/v1", "Deployment", "web", "old", metav1.ManagedFieldsEntry{Manager: "kube-controller-manager", Operation: metav1.ManagedFieldsOperationUpdate, Subresource: "status"}),
	}
	get := func(_ context.Context, ref planner.ObjectRef) (*unstructured.Unstructured, error) {
		if o, ok := live[ref.Name]; ok {
			return o, nil
		}
		return nil, apierrors.NewNotFound(schema.GroupResource{Resource: "configmaps"}, ref.Name)
	}
	tree, err := Build(context.Background(), inv, get)
	if err != nil {
		t.Fatal(err)
	}
	for i := range tree.Stages {
		for j := range tree.Stages[i].Kinds {
			for k := range tree.Stages[i].Kinds[j].Objects {
				tree.Stages[i].Kinds[j].Objects[k].Message = "" // kstatus's wording
			}
		}
	}
	want := &Tree{App: "web", Revision: "abc", Stages: []Stage{
		{Name: "namespaces", Kinds: []Kind{{Kind: "Namespace", Objects: []Object{
			{Name: "web", Health: "Current", Outcome: Applied, Managers: []Manager{{Name: "syncd-web", Operation: "Apply"}}}}}}},
		{Name: "namespaced", Kinds: []Kind{
			{Kind: "ConfigMap", Objects: []Object{
				{Namespace: "web", Name: "a", Health: "NotFound", Outcome: Pending},
				{Namespace: "web", Name: "b", Health: "Current", Outcome: Applied, Managers: []Manager{{Name: "syncd-web", Operation: "Apply"}, {Name: "kubectl-label", Operation: "Update"}}},
				{Namespace: "web", Name: "c", Health: "Current", Outcome: Applied, YieldedTo: []string{"kubectl-edit", "operator"}, Managers: []Manager{{Name: "operator", Operation: "Update"}}}}},
			{Group: "apps", Kind: "Deployment", Objects: []Object{
				{Namespace: "web", Name: "old", Health: "InProgress", Outcome: PruneRefused, Reason: "budget", Managers: []Manager{{Name: "kube-controller-manager", Operation: "Update", Subresource: "status"}}}}},
		}},
	}}
	if diff := cmp.Diff(want, tree); diff != "" {
		t.Errorf("Build (-want +got):\n%s", diff)
	}

	if got, want := tree.Stages[1].Kinds[0].Objects[2].Action(), "applied, fields yielded to kubectl-edit, operator"; got != want {
		t.Errorf("Action of an object whose apply yielded fields = %q, want %q", got, want)
	}

	failing := func(context.Context, planner.ObjectRef) (*unstructured.Unstructured, error) {
		return nil, errors.New("connection refused")
	}
	if _, err := Build(context.Background(), inv, failing); err == nil || err.Error() != "read Namespace web: connection refused" {
		t.Errorf("Build with a failing read: %v", err)
	}
}

func object(apiVersion, kind, namespace, name string, managers ...metav1.ManagedFieldsEntry) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion(apiVersion)
	u.SetKind(kind)
	u.SetNamespace(namespace)
	u.SetName(name)
	u.SetManagedFields(managers)
	return u
}
