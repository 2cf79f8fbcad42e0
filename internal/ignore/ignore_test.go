package ignore

import (
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	"syncd.dev/syncd/internal/paths"
	"syncd.dev/syncd/internal/planner"
)

func TestIgnores(t *testing.T) {
	deploy := planner.ObjectRef{Group: "apps", Version: "v1", Kind: "Deployment", Namespace: "shop", Name: "web"}
	cm := planner.ObjectRef{Version: "v1", Kind: "ConfigMap", Namespace: "shop", Name: "web-config"}
	image := fieldpath.MakePathOrDie("spec", "template", "spec", "containers", fieldpath.KeyByFields("name", "app"), "image")
	color := fieldpath.MakePathOrDie("data", "color")
	rules, err := New([]Rule{
		{Kinds: []schema.GroupKind{{Group: "apps", Kind: "Deployment"}}, Paths: []paths.Pattern{paths.MustParse(".spec.template.spec.containers[*].image")}, Managers: []string{"image-*"}},
		{Namespaces: []string{"sh*"}, Names: []string{"*-config"}, Paths: []paths.Pattern{paths.MustParse(".data")}},
	})
	if err != nil {
		t.Fatal(err)
	}
	tests := map[string]struct {
		ref    planner.ObjectRef
		path   fieldpath.Path
		others []string
		want   bool
	}{
		"kind, path and manager":                   {deploy, image, []string{"image-updater"}, true},
		"manager does not match":                   {deploy, image, []string{"kubectl-edit"}, false},
		"no manager (a webhook) with managers set": {deploy, image, nil, false},
		"below the path":                           {cm, color, nil, true},
		"name does not match":                      {planner.ObjectRef{Version: "v1", Kind: "ConfigMap", Namespace: "shop", Name: "other"}, color, nil, false},
		"namespace does not match":                 {planner.ObjectRef{Version: "v1", Kind: "ConfigMap", Namespace: "prod", Name: "web-config"}, color, nil, false},
		"another field":                            {deploy, fieldpath.MakePathOrDie("spec", "replicas"), []string{"image-updater"}, false},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if got := rules.Ignores(tc.ref, tc.path, tc.others); got != tc.want {
				t.Errorf("Ignores = %v, want %v", got, tc.want)
			}
		})
	}
	if !rules.Below(deploy, fieldpath.MakePathOrDie("spec", "template")) {
		t.Error("Below(.spec.template) = false, want true: a rule names a field below it")
	}
	var none *Rules
	if none.Ignores(cm, color, nil) || none.Below(cm, color) {
		t.Error("nil Rules ignore something")
	}
}

func TestNewRefuses(t *testing.T) {
	if _, err := New([]Rule{{}}); err == nil || err.Error() != "[0].paths: at least one field path is required; an ignore rule never ignores whole objects" {
		t.Errorf("rule without paths: %v", err)
	}
	if _, err := New([]Rule{{Paths: []paths.Pattern{paths.MustParse(".data")}, Names: []string{"[a"}}}); err == nil {
		t.Error("a bad glob was accepted")
	}
	if rs, err := New(nil); rs != nil || err != nil {
		t.Errorf("New(nil) = %v, %v, want nil, nil", rs, err)
	}
}
