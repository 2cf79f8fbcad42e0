package applier

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
	"sigs.k8s.io/structured-merge-diff/v6/value"

	"syncd.dev/syncd/internal/config"
	"syncd.dev/syncd/internal/planner"
)

func TestPolicyDecide(t *testing.T) {
	cm := planner.ObjectRef{Version: "v1", Kind: "ConfigMap", Namespace: "ns", Name: "settings"}
	cmOther := planner.ObjectRef{Version: "v1", Kind: "ConfigMap", Namespace: "ns", Name: "other"}
	deploy := planner.ObjectRef{Group: "apps", Version: "v1", Kind: "Deployment", Namespace: "ns", Name: "web"}
	ing := planner.ObjectRef{Group: "networking.k8s.io", Version: "v1", Kind: "Ingress", Namespace: "ns", Name: "web"}
	color := fieldpath.MakePathOrDie("data", "color")
	size := fieldpath.MakePathOrDie("data", "size")
	replicas := fieldpath.MakePathOrDie("spec", "replicas")
	image := fieldpath.MakePathOrDie("spec", "template", "spec", "containers",
		fieldpath.KeyByFields("name", "app"), "image")
	annotation := fieldpath.MakePathOrDie("metadata", "annotations", "example.com/owner")
	host := fieldpath.MakePathOrDie("spec", "rules", 0, "host")

	// The rules are tried in order; the comments say what each is for.
	policy := config.ConflictPolicy{
		Default: config.ActionFail,
		Rules: []config.ConflictRule{
			// 0: the HPA may keep replicas of any Deployment.
			{Kinds: []string{"apps/Deployment"}, Paths: []string{".spec.replicas"}, Action: config.ActionYield},
			// 1: images of every workload go to the release pipeline...
			{Paths: []string{".spec.template.spec.containers[*].image"}, Managers: []string{"release-*"}, Action: config.ActionYield},
			// 2: ...and anybody else touching an image is overridden.
			{Paths: []string{".spec.template.spec.containers[*].image"}, Action: config.ActionForce},
			// 3: ConfigMaps named settings*: operators keep .data.color.
			{Kinds: []string{"ConfigMap"}, Names: []string{"settings*"}, Paths: []string{".data.color"}, Managers: []string{"operator"}, Action: config.ActionYield},
			// 4: any annotation under metadata: force (wildcard field).
			{Paths: []string{".metadata.annotations.*"}, Action: config.ActionForce},
			// 5: Ingress objects: force whatever.
			{Kinds: []string{"networking.k8s.io/Ingress"}, Action: config.ActionForce},
			// 6: a later rule the first-match rule 0 hides.
			{Kinds: []string{"apps/Deployment"}, Paths: []string{".spec.replicas"}, Action: config.ActionForce},
		},
	}
	p, err := NewPolicy(policy)
	if err != nil {
		t.Fatal(err)
	}
	tests := map[string]struct {
		ref     planner.ObjectRef
		manager string
		path    fieldpath.Path
		want    config.Action
	}{
		"kind and path":                             {deploy, "hpa-sim", replicas, config.ActionYield},
		"first match wins over a later rule":        {deploy, "kube-controller-manager", replicas, config.ActionYield},
		"same path on another kind is the default":  {cm, "x", replicas, config.ActionFail},
		"wildcard list item and manager glob":       {deploy, "release-bot", image, config.ActionYield},
		"glob does not match: next rule":            {deploy, "kubectl-edit", image, config.ActionForce},
		"name glob, path and manager":               {cm, "operator", color, config.ActionYield},
		"name glob not matching":                    {cmOther, "operator", color, config.ActionFail},
		"manager not matching":                      {cm, "someone", color, config.ActionFail},
		"other path of the same object":             {cm, "operator", size, config.ActionFail},
		"wildcard field name":                       {cm, "someone", annotation, config.ActionForce},
		"kind with a dotted group":                  {ing, "someone", host, config.ActionForce},
		"unknown path only matches path-less rules": {ing, "someone", nil, config.ActionForce},
		"unknown path, no path-less rule: default":  {cm, "operator", nil, config.ActionFail},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			c := Conflict{Manager: tc.manager, Path: tc.path.String()}
			if got := p.Decide(tc.ref, c, tc.path); got != tc.want {
				t.Errorf("Decide(%s, %s, %s) = %s, want %s", tc.ref, tc.manager, tc.path, got, tc.want)
			}
		})
	}

	t.Run("default when nothing is configured is fail", func(t *testing.T) {
		p, err := NewPolicy(config.ConflictPolicy{})
		if err != nil {
			t.Fatal(err)
		}
		if got := p.Decide(cm, Conflict{Manager: "x"}, color); got != config.ActionFail {
			t.Errorf("Decide = %s, want fail", got)
		}
	})
	t.Run("default yield", func(t *testing.T) {
		p, err := NewPolicy(config.ConflictPolicy{Default: config.ActionYield})
		if err != nil {
			t.Fatal(err)
		}
		if got := p.Decide(cm, Conflict{Manager: "x"}, color); got != config.ActionYield {
			t.Errorf("Decide = %s, want yield", got)
		}
	})
}

func TestNewPolicyErrors(t *testing.T) {
	tests := map[string]struct {
		policy config.ConflictPolicy
		want   []string // substrings of the error
	}{
		"bad default": {
			policy: config.ConflictPolicy{Default: "overwrite"},
			want:   []string{"conflicts.default", `"overwrite"`, "fail, force or yield"},
		},
		"bad rule action": {
			policy: config.ConflictPolicy{Rules: []config.ConflictRule{{Action: config.ActionForce}, {Action: "take"}}},
			want:   []string{"conflicts.rules[1].action", `"take"`},
		},
		"bad path": {
			policy: config.ConflictPolicy{Rules: []config.ConflictRule{{Paths: []string{"spec.replicas"}, Action: config.ActionForce}}},
			want:   []string{"conflicts.rules[0].paths[0]", "spec.replicas"},
		},
		"bad manager glob": {
			policy: config.ConflictPolicy{Rules: []config.ConflictRule{{Managers: []string{"release-["}, Action: config.ActionForce}}},
			want:   []string{"conflicts.rules[0]", `"release-["`},
		},
		"bad name glob": {
			policy: config.ConflictPolicy{Rules: []config.ConflictRule{{Names: []string{"a[b"}, Action: config.ActionForce}}},
			want:   []string{"conflicts.rules[0]", `"a[b"`},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			_, err := NewPolicy(tc.policy)
			if err == nil {
				t.Fatal("NewPolicy: no error")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
		})
	}
}

func TestFindPath(t *testing.T) {
	image := fieldpath.MakePathOrDie("spec", "template", "spec", "containers",
		fieldpath.KeyByFields("name", "app"), "image")
	finalizer := fieldpath.MakePathOrDie("metadata", "finalizers", value.NewValueInterface("example.com/x"))
	set := fieldpath.NewSet(image, finalizer, fieldpath.MakePathOrDie("data", "color"))
	for _, p := range []fieldpath.Path{image, finalizer} {
		got := findPath(set, p.String())
		if diff := cmp.Diff(p.String(), got.String()); diff != "" {
			t.Errorf("findPath(%s) (-want +got):\n%s", p, diff)
		}
	}
	if got := findPath(set, ".data.size"); got != nil {
		t.Errorf("findPath(.data.size) = %s, want nil", got)
	}
}
