package planner

import (
	"errors"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"syncd.dev/syncd/internal/config"
)

// roleList is shaped like the RBAC files upstream manifests ship: one
// RoleList document holding a Role per namespace, after a plain document.
const roleList = `apiVersion: v1
kind: ServiceAccount
metadata: {name: agent}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleList
items:
- apiVersion: rbac.authorization.k8s.io/v1
  kind: Role
  metadata: {name: agent-config, namespace: default}
  rules:
  - {apiGroups: [""], resources: [configmaps], verbs: [get, list, watch]}
- apiVersion: rbac.authorization.k8s.io/v1
  kind: Role
  metadata: {name: agent-secrets, namespace: kube-system}
  rules:
  - {apiGroups: [""], resources: [secrets], verbs: [get]}
`

// dashboards is a generic List of ConfigMaps, the shape monitoring stacks
// use for their dashboard bundles, followed by a document after the list.
const dashboards = `apiVersion: v1
kind: List
items:
- apiVersion: v1
  kind: ConfigMap
  metadata: {name: dashboard-a}
  data: {a.json: "{}"}
- apiVersion: v1
  kind: ConfigMap
  metadata: {name: dashboard-b}
  data: {b.json: "{}"}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: after}
`

func TestListsExpand(t *testing.T) {
	app := config.App{Name: "web", Namespace: "default"}
	tests := map[string]struct {
		files map[string]string
		want  []string // Origin and ref of every object, sorted
	}{
		"RoleList after a plain document": {
			files: map[string]string{"rbac.yaml": roleList},
			want: []string{
				"rbac.yaml#1 ServiceAccount default/agent",
				"rbac.yaml#2 item 1 rbac.authorization.k8s.io/Role default/agent-config",
				"rbac.yaml#2 item 2 rbac.authorization.k8s.io/Role kube-system/agent-secrets",
			},
		},
		"List of ConfigMaps keeps document order": {
			files: map[string]string{"dashboards.yaml": dashboards},
			want: []string{
				"dashboards.yaml#1 item 1 ConfigMap default/dashboard-a",
				"dashboards.yaml#1 item 2 ConfigMap default/dashboard-b",
				"dashboards.yaml#2 ConfigMap default/after",
			},
		},
		"empty list yields nothing": {
			files: map[string]string{
				"empty.yaml": "apiVersion: v1\nkind: List\nitems: []\n---\napiVersion: v1\nkind: ConfigMapList\nitems:\n",
				"cm.yaml":    configMap,
			},
			want: []string{"cm.yaml#1 ConfigMap default/cm"},
		},
		"JSON list": {
			files: map[string]string{"list.json": `{"apiVersion":"v1","kind":"List","items":[{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"j"}}]}`},
			want:  []string{"list.json#1 item 1 ConfigMap default/j"},
		},
		"kustomize resource that is a list": {
			files: map[string]string{
				"kustomization.yaml": "resources: [rbac.yaml]\nnamespace: apps\n",
				"rbac.yaml":          roleList,
			},
			want: []string{
				"rbac.yaml ServiceAccount apps/agent",
				"rbac.yaml rbac.authorization.k8s.io/Role apps/agent-config",
				"rbac.yaml rbac.authorization.k8s.io/Role apps/agent-secrets",
			},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			plan, err := renderAndPlan(writeTree(t, tc.files), app, Options{})
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, o := range plan.Objects {
				got = append(got, o.Origin+" "+o.Ref.String())
			}
			sort.Strings(got)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("objects (-want +got):\n%s", diff)
			}
		})
	}
}

// TestListOrder checks that a list's items take its place in the file, in
// order, as kubectl apply -f reads them.
func TestListOrder(t *testing.T) {
	ms, err := ReadDir(writeTree(t, map[string]string{"dashboards.yaml": dashboards}))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, m := range ms {
		got = append(got, m.Origin()+" "+m.Object.GetName())
	}
	want := []string{"dashboards.yaml#1 item 1 dashboard-a", "dashboards.yaml#1 item 2 dashboard-b", "dashboards.yaml#2 after"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("manifests (-want +got):\n%s", diff)
	}
}

func TestListErrors(t *testing.T) {
	app := config.App{Name: "web", Namespace: "default"}
	tests := map[string]struct {
		doc  string
		want []string // substrings of the error
	}{
		"item without a name": {
			doc:  "apiVersion: v1\nkind: List\nitems:\n- {apiVersion: v1, kind: ConfigMap, metadata: {name: ok}}\n- {apiVersion: v1, kind: ConfigMap, metadata: {}}\n",
			want: []string{"list.yaml: document 1, item 2 (v1 ConfigMap)", "metadata.name is missing"},
		},
		"item without a kind": {
			doc:  "apiVersion: v1\nkind: RoleList\nitems:\n- {apiVersion: v1, metadata: {name: x}}\n",
			want: []string{"list.yaml: document 1, item 1", "kind is missing"},
		},
		"item that is not an object": {
			doc:  "apiVersion: v1\nkind: List\nitems: [just-a-string]\n",
			want: []string{"list.yaml: document 1 (v1 List)", "items[0] is not an object"},
		},
		"items that are not a list": {
			doc:  "apiVersion: v1\nkind: List\nitems: {a: b}\n",
			want: []string{"list.yaml: document 1 (v1 List)", "items must be a list"},
		},
		"list inside a list": {
			doc:  "apiVersion: v1\nkind: List\nitems:\n- {apiVersion: v1, kind: List, items: []}\n",
			want: []string{"list.yaml: document 1, item 1", "a list inside a list"},
		},
		"item with managedFields": {
			doc:  "---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: first}\n---\napiVersion: v1\nkind: List\nitems:\n- {apiVersion: v1, kind: ConfigMap, metadata: {name: x, managedFields: []}}\n",
			want: []string{"list.yaml: document 2, item 1 (v1 ConfigMap x)", "managedFields must not be in Git"},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			plan, err := renderAndPlan(writeTree(t, map[string]string{"list.yaml": tc.doc}), app, Options{})
			if err == nil {
				t.Fatalf("no error; plan has %d objects", len(plan.Objects))
			}
			var me ManifestErrors
			if !errors.As(err, &me) {
				t.Errorf("error is %T, want ManifestErrors", err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error does not mention %q:\n%v", w, err)
				}
			}
		})
	}
}
