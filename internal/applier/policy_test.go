package applier

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
	"sigs.k8s.io/structured-merge-diff/v6/value"

	"syncd.dev/syncd/internal/config"
	"syncd.dev/syncd/internal/paths"
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
	policy := PolicySpec{
		Default: ConflictFail,
		Rules: []PolicyRule{
			// 0: the HPA may keep replicas of any Deployment.
			{Kinds: kinds("apps/Deployment"), Paths: pats(".spec.replicas"), Action: ConflictYield},
			// 1: images of every workload go to the release pipeline...
			{Paths: pats(".spec.template.spec.containers[*].image"), Managers: []string{"release-*"}, Action: ConflictYield},
			// 2: ...and anybody else touching an image is overridden.
			{Paths: pats(".spec.template.spec.containers[*].image"), Action: ConflictForce},
			// 3: ConfigMaps named settings*: operators keep .data.color.
			{Kinds: kinds("ConfigMap"), Names: []string{"settings*"}, Paths: pats(".data.color"), Managers: []string{"operator"}, Action: ConflictYield},
			// 4: any annotation under metadata: force (wildcard field).
			{Paths: pats(".metadata.annotations.*"), Action: ConflictForce},
			// 5: Ingress objects: force whatever.
			{Kinds: kinds("networking.k8s.io/Ingress"), Action: ConflictForce},
			// 6: a later rule the first-match rule 0 hides.
			{Kinds: kinds("apps/Deployment"), Paths: pats(".spec.replicas"), Action: ConflictForce},
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
		want    ConflictAction
	}{
		"kind and path":                             {deploy, "hpa-sim", replicas, ConflictYield},
		"first match wins over a later rule":        {deploy, "kube-controller-manager", replicas, ConflictYield},
		"same path on another kind is the default":  {cm, "x", replicas, ConflictFail},
		"wildcard list item and manager glob":       {deploy, "release-bot", image, ConflictYield},
		"glob does not match: next rule":            {deploy, "kubectl-edit", image, ConflictForce},
		"name glob, path and manager":               {cm, "operator", color, ConflictYield},
		"name glob not matching":                    {cmOther, "operator", color, ConflictFail},
		"manager not matching":                      {cm, "someone", color, ConflictFail},
		"other path of the same object":             {cm, "operator", size, ConflictFail},
		"wildcard field name":                       {cm, "someone", annotation, ConflictForce},
		"kind with a dotted group":                  {ing, "someone", host, ConflictForce},
		"unknown path only matches path-less rules": {ing, "someone", nil, ConflictForce},
		"unknown path, no path-less rule: default":  {cm, "operator", nil, ConflictFail},
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
		p, err := NewPolicy(PolicySpec{})
		if err != nil {
			t.Fatal(err)
		}
		if got := p.Decide(cm, Conflict{Manager: "x"}, color); got != ConflictFail {
			t.Errorf("Decide = %s, want fail", got)
		}
	})
	t.Run("default yield", func(t *testing.T) {
		p, err := NewPolicy(PolicySpec{Default: ConflictYield})
		if err != nil {
			t.Fatal(err)
		}
		if got := p.Decide(cm, Conflict{Manager: "x"}, color); got != ConflictYield {
			t.Errorf("Decide = %s, want yield", got)
		}
	})
}

func TestNewPolicyErrors(t *testing.T) {
	tests := map[string]struct {
		policy PolicySpec
		want   []string // substrings of the error
	}{
		"bad default": {
			policy: PolicySpec{Default: "overwrite"},
			want:   []string{"default", `"overwrite"`, "fail, force or yield"},
		},
		"bad rule action": {
			policy: PolicySpec{Rules: []PolicyRule{{Action: ConflictForce}, {Action: "take"}}},
			want:   []string{"rules[1].action", `"take"`},
		},
		"bad manager glob": {
			policy: PolicySpec{Rules: []PolicyRule{{Managers: []string{"release-["}, Action: ConflictForce}}},
			want:   []string{"rules[0]", `"release-["`},
		},
		"bad name glob": {
			policy: PolicySpec{Rules: []PolicyRule{{Names: []string{"a[b"}, Action: ConflictForce}}},
			want:   []string{"rules[0]", `"a[b"`},
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

// kinds parses kinds as syncd.yaml writes them.
func kinds(ks ...string) []schema.GroupKind {
	var out []schema.GroupKind
	for _, k := range ks {
		out = append(out, config.GroupKind(k))
	}
	return out
}

// pats parses field path patterns.
func pats(ps ...string) []paths.Pattern {
	var out []paths.Pattern
	for _, p := range ps {
		out = append(out, paths.MustParse(p))
	}
	return out
}
