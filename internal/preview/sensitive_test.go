package preview

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	"syncd.dev/syncd/internal/config"
	"syncd.dev/syncd/internal/redact"
)

func sensitive(t *testing.T, rules ...config.SensitiveRule) *redact.Rules {
	t.Helper()
	var opts redact.Options
	for i, sr := range rules {
		r, err := redact.ParseSensitive(sr.Kinds, sr.Paths)
		if err != nil {
			t.Fatalf("sensitive[%d]: %v", i, err)
		}
		opts.Sensitive = append(opts.Sensitive, r)
	}
	return redact.New(opts)
}

// deployment is a Deployment with one container "app" whose env holds a
// token, owned (by key) by manager m.
func deployment(token string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apps/v1", "kind": "Deployment",
		"metadata": map[string]any{"name": "web", "namespace": "ns"},
		"spec": map[string]any{"template": map[string]any{"spec": map[string]any{"containers": []any{
			map[string]any{"name": "sidecar", "image": "proxy:1"},
			map[string]any{"name": "app", "image": "web:1", "env": []any{map[string]any{"name": "TOKEN", "value": token}}},
		}}}},
	}}
	set := fieldpath.NewSet(fieldpath.MakePathOrDie("spec", "template", "spec", "containers", fieldpath.KeyByFields("name", "app"), "env"))
	raw, err := set.ToJSON()
	if err != nil {
		panic(err)
	}
	u.SetManagedFields([]metav1.ManagedFieldsEntry{{Manager: "m", Operation: metav1.ManagedFieldsOperationApply, FieldsV1: &metav1.FieldsV1{Raw: raw}}})
	return u
}

func TestDiffRedactsSensitive(t *testing.T) {
	tests := map[string]struct {
		live, after *unstructured.Unstructured
		sens        *redact.Rules
		leaks       []string
		want        []string
	}{
		"a config map key changed": {
			live:  configMap(map[string]any{"password": "old-hunter2", "color": "blue"}),
			after: configMap(map[string]any{"password": "new-s3cret", "color": "green"}),
			sens:  sensitive(t, config.SensitiveRule{Kinds: []string{"ConfigMap"}, Paths: []string{".data.password"}}),
			leaks: []string{"old-hunter2", "new-s3cret"},
			want:  []string{"-  password: <redacted>\n", "+  password: <redacted, changed>\n", "-  color: blue\n", "+  color: green\n"},
		},
		"a config map key created": {
			after: configMap(map[string]any{"password": "new-s3cret"}),
			sens:  sensitive(t, config.SensitiveRule{Paths: []string{".data.password"}}),
			leaks: []string{"new-s3cret"},
			want:  []string{"+  password: <redacted>\n"},
		},
		"a rule for another kind": {
			live:  configMap(map[string]any{"password": "old"}),
			after: configMap(map[string]any{"password": "new"}),
			sens:  sensitive(t, config.SensitiveRule{Kinds: []string{"Secret"}, Paths: []string{".data.password"}}),
			want:  []string{"-  password: old\n", "+  password: new\n"},
		},
		"a keyed list item, found through managedFields": {
			live:  deployment("tok-old-1"),
			after: deployment("tok-new-2"),
			sens:  sensitive(t, config.SensitiveRule{Kinds: []string{"apps/Deployment"}, Paths: []string{`.spec.template.spec.containers[name="app"].env`}}),
			leaks: []string{"tok-old-1", "tok-new-2"},
			want:  []string{"-      - env: <redacted>\n", "+      - env: <redacted, changed>\n"},
		},
		"every list item": {
			live:  deployment("tok-old-1"),
			after: deployment("tok-new-2"),
			sens:  sensitive(t, config.SensitiveRule{Paths: []string{".spec.template.spec.containers[*].env[*].value"}}),
			leaks: []string{"tok-old-1", "tok-new-2"},
			want:  []string{"-          value: <redacted>\n", "+          value: <redacted, changed>\n"},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			var live *unstructured.Unstructured
			if tc.live != nil {
				live = tc.live.DeepCopy()
			}
			after := tc.after.DeepCopy()
			got, err := DiffWith(tc.live, tc.after, DiffOptions{Sensitive: tc.sens})
			if err != nil {
				t.Fatal(err)
			}
			for _, leak := range tc.leaks {
				if strings.Contains(got, leak) {
					t.Errorf("diff leaks %q:\n%s", leak, got)
				}
			}
			for _, w := range tc.want {
				if !strings.Contains(got, w) {
					t.Errorf("diff lacks %q:\n%s", w, got)
				}
			}
			if tc.live != nil {
				if diff := cmp.Diff(live.Object, tc.live.Object); diff != "" {
					t.Errorf("DiffWith changed live (-before +after):\n%s", diff)
				}
			}
			if diff := cmp.Diff(after.Object, tc.after.Object); diff != "" {
				t.Errorf("DiffWith changed after (-before +after):\n%s", diff)
			}
		})
	}
}
