package redact

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
)

var (
	secretGK = schema.GroupKind{Kind: "Secret"}
	cmGK     = schema.GroupKind{Kind: "ConfigMap"}
	deployGK = schema.GroupKind{Group: "apps", Kind: "Deployment"}
	widgetGK = schema.GroupKind{Group: "example.com", Kind: "Widget"}
)

func p(parts ...any) fieldpath.Path { return fieldpath.MakePathOrDie(parts...) }

// written is a sensitive rule as a config writes it.
type written struct{ Kinds, Paths []string }

func mustRules(t testing.TB, rules ...written) *Rules {
	t.Helper()
	var opts Options
	for i, w := range rules {
		r, err := ParseSensitive(w.Kinds, w.Paths)
		if err != nil {
			t.Fatalf("sensitive[%d]: %v", i, err)
		}
		opts.Sensitive = append(opts.Sensitive, r)
	}
	return New(opts)
}

func TestPath(t *testing.T) {
	app := mustRules(t,
		written{Kinds: []string{"ConfigMap"}, Paths: []string{".data.password"}},
		written{Kinds: []string{"apps/Deployment"}, Paths: []string{`.spec.template.spec.containers[*].env`}},
		written{Kinds: []string{"example.com/Widget"}, Paths: []string{".spec.token"}},
	)
	env := p("spec", "template", "spec", "containers", fieldpath.KeyByFields("name", "app"), "env", fieldpath.KeyByFields("name", "TOKEN"), "value")
	tests := map[string]struct {
		rules *Rules
		gk    schema.GroupKind
		path  fieldpath.Path
		want  bool
	}{
		"secret data key":                  {nil, secretGK, p("data", "password"), true},
		"secret stringData key":            {nil, secretGK, p("stringData", "token"), true},
		"secret data itself":               {nil, secretGK, p("data"), true},
		"secret type":                      {nil, secretGK, p("type"), false},
		"secret labels":                    {nil, secretGK, p("metadata", "labels", "team"), false},
		"a Secret of another group":        {nil, schema.GroupKind{Group: "example.com", Kind: "Secret"}, p("data", "x"), false},
		"configmap data without rules":     {nil, cmGK, p("data", "password"), false},
		"last-applied on a ConfigMap":      {nil, cmGK, p("metadata", "annotations", LastApplied), true},
		"another annotation":               {nil, cmGK, p("metadata", "annotations", "team"), false},
		"the app's key":                    {app, cmGK, p("data", "password"), true},
		"another key":                      {app, cmGK, p("data", "color"), false},
		"the app's key on another kind":    {app, schema.GroupKind{Kind: "Service"}, p("data", "password"), false},
		"below a matched list":             {app, deployGK, env, true},
		"the list on another group":        {app, schema.GroupKind{Group: "extensions", Kind: "Deployment"}, env, false},
		"a parent of a matched path":       {app, cmGK, p("data"), false},
		"a custom kind's field":            {app, widgetGK, p("spec", "token"), true},
		"a custom kind's other field":      {app, widgetGK, p("spec", "size"), false},
		"the built-in rules stay with app": {app, secretGK, p("data", "x"), true},
		"the empty path":                   {app, secretGK, nil, false},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if got := tc.rules.Path(tc.gk, tc.path); got != tc.want {
				t.Errorf("Path(%v, %s) = %v, want %v", tc.gk, tc.path, got, tc.want)
			}
		})
	}
}

// TestParseSensitive: the app and rule prefix (app "web": sensitive[0].)
// is reconcile's compile step's, tested there.
func TestParseSensitive(t *testing.T) {
	if got := New(Options{}); got != nil {
		t.Errorf("New of an app without rules = %v; want nil", got)
	}
	tests := map[string]struct {
		rule written
		want string
	}{
		"bad path": {written{Paths: []string{".data["}}, `paths[0]`},
		"no paths": {written{Kinds: []string{"ConfigMap"}}, `paths: paths is required`},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			_, err := ParseSensitive(tc.rule.Kinds, tc.rule.Paths)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want one containing %q", err, tc.want)
			}
		})
	}
}
