package config

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
)

func TestGitSourceRef(t *testing.T) {
	tests := map[string]struct {
		git  GitSource
		want [2]string
	}{
		"branch": {GitSource{Branch: "main"}, [2]string{RefBranch, "main"}},
		"tag":    {GitSource{Tag: "v1"}, [2]string{RefTag, "v1"}},
		"semver": {GitSource{Semver: "~1.2"}, [2]string{RefSemver, "~1.2"}},
		"commit": {GitSource{Commit: "abc"}, [2]string{RefCommit, "abc"}},
		"none":   {GitSource{}, [2]string{}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			kind, value := tc.git.Ref()
			if diff := cmp.Diff(tc.want, [2]string{kind, value}); diff != "" {
				t.Errorf("Ref() (-want +got):\n%s", diff)
			}
		})
	}
}

func TestHelpers(t *testing.T) {
	c := &Config{Sources: []Source{{Name: "a"}, {Name: "b", Git: GitSource{Branch: "dev"}}}}
	src, ok := c.Source("b")
	_, missing := c.Source("c")
	alert := Alert{Events: []string{EventDrift}}
	no := false
	app := App{Name: "web", Path: "deploy", Prune: &no, Manager: "m", Split: []SplitRule{{Manager: "m-images"}},
		Conflicts: ConflictPolicy{Default: ActionYield}}
	got := []any{
		src.Git.Branch, ok, missing,
		GitAuth{}.BasicUsername(), GitAuth{Username: "bot"}.BasicUsername(),
		alert.Wants(EventDrift), alert.Wants(EventSync), Alert{}.Wants(EventSync),
		app.TreePath(), app.PruneEnabled(), app.Managers(), app.Conflicts.DefaultAction(),
	}
	want := []any{
		"dev", true, false,
		"git", "bot",
		true, false, true,
		"deploy", false, []string{"m", "m-images"}, ActionYield,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("helpers (-want +got):\n%s", diff)
	}
}

func TestDriftMode(t *testing.T) {
	tests := map[string]struct {
		mode   string
		want   string
		detect bool
	}{
		"default": {"", DriftCorrect, false},
		"correct": {DriftCorrect, DriftCorrect, false},
		"detect":  {DriftDetect, DriftDetect, true},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			a := App{Drift: DriftPolicy{Mode: tc.mode}}
			if got := a.DriftMode(); got != tc.want {
				t.Errorf("DriftMode() = %q, want %q", got, tc.want)
			}
			if got := a.DetectOnly(); got != tc.detect {
				t.Errorf("DetectOnly() = %v, want %v", got, tc.detect)
			}
		})
	}
}

func TestSensitiveFields(t *testing.T) {
	app := App{Name: "web", Sensitive: []SensitiveRule{
		{Kinds: []string{"ConfigMap"}, Paths: []string{".data.password"}},
		{Kinds: []string{"apps/Deployment"}, Paths: []string{`.spec.template.spec.containers[*].env`}},
	}}
	s, err := app.SensitiveFields()
	if err != nil {
		t.Fatal(err)
	}
	cm := schema.GroupKind{Kind: "ConfigMap"}
	deploy := schema.GroupKind{Group: "apps", Kind: "Deployment"}
	env := fieldpath.MakePathOrDie("spec", "template", "spec", "containers",
		fieldpath.KeyByFields("name", "app"), "env", fieldpath.KeyByFields("name", "TOKEN"), "value")
	tests := map[string]struct {
		gk   schema.GroupKind
		path fieldpath.Path
		want bool
	}{
		"the named key":              {cm, fieldpath.MakePathOrDie("data", "password"), true},
		"another key":                {cm, fieldpath.MakePathOrDie("data", "color"), false},
		"the key on another kind":    {schema.GroupKind{Kind: "Secret"}, fieldpath.MakePathOrDie("data", "password"), false},
		"below a matched list":       {deploy, env, true},
		"the list on another group":  {schema.GroupKind{Group: "extensions", Kind: "Deployment"}, env, false},
		"a parent of a matched path": {cm, fieldpath.MakePathOrDie("data"), false},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if got := s.Matches(tc.gk, tc.path); got != tc.want {
				t.Errorf("Matches(%v, %s) = %v, want %v", tc.gk, tc.path, got, tc.want)
			}
		})
	}
	if !s.Kind(cm) || s.Kind(schema.GroupKind{Kind: "Secret"}) {
		t.Errorf("Kind: ConfigMap %v (want true), Secret %v (want false)", s.Kind(cm), s.Kind(schema.GroupKind{Kind: "Secret"}))
	}
	var none *SensitiveFields
	if none.Matches(cm, fieldpath.MakePathOrDie("data", "password")) || none.Kind(cm) {
		t.Error("a nil SensitiveFields marks a field")
	}
	if got, err := (App{}).SensitiveFields(); got != nil || err != nil {
		t.Errorf("SensitiveFields of an app without rules = %v, %v; want nil, nil", got, err)
	}
	if _, err := (App{Name: "web", Sensitive: []SensitiveRule{{Paths: []string{".data["}}}}).SensitiveFields(); err == nil || !strings.Contains(err.Error(), `app "web": sensitive[0].paths[0]`) {
		t.Errorf("SensitiveFields of a bad path: error %v, want one naming sensitive[0].paths[0]", err)
	}
}
