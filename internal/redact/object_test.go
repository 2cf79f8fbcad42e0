package redact

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
)

func decode(t *testing.T, s string) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(s), &m); err != nil {
		t.Fatal(err)
	}
	return m
}

func TestObject(t *testing.T) {
	app := mustRules(t,
		written{Kinds: []string{"ConfigMap"}, Paths: []string{".data.password"}},
		written{Kinds: []string{"apps/Deployment"}, Paths: []string{`.spec.template.spec.containers[name="app"].env`}},
	)
	deployFields := &fieldpath.Set{}
	deployFields.Insert(p("spec", "template", "spec", "containers", fieldpath.KeyByFields("name", "app"), "env"))
	tests := map[string]struct {
		rules  *Rules
		in     string
		fields *fieldpath.Set
		want   string
	}{
		"secret values, keys kept": {
			in:   `{"apiVersion":"v1","kind":"Secret","metadata":{"name":"db","labels":{"a":"b"}},"type":"Opaque","data":{"password":"aHVudGVyMg=="},"stringData":{"token":"t0k"}}`,
			want: `{"apiVersion":"v1","kind":"Secret","metadata":{"name":"db","labels":{"a":"b"}},"type":"Opaque","data":{"password":"<redacted>"},"stringData":{"token":"<redacted>"}}`,
		},
		"last-applied on any kind": {
			in:   `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c","annotations":{"kubectl.kubernetes.io/last-applied-configuration":"{\"data\":{}}","team":"a"}}}`,
			want: `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c","annotations":{"kubectl.kubernetes.io/last-applied-configuration":"<redacted>","team":"a"}}}`,
		},
		"configmap without rules": {
			in:   `{"apiVersion":"v1","kind":"ConfigMap","data":{"password":"p"}}`,
			want: `{"apiVersion":"v1","kind":"ConfigMap","data":{"password":"p"}}`,
		},
		"the app's configmap key": {
			rules: app,
			in:    `{"apiVersion":"v1","kind":"ConfigMap","data":{"password":"p","color":"blue"}}`,
			want:  `{"apiVersion":"v1","kind":"ConfigMap","data":{"password":"<redacted>","color":"blue"}}`,
		},
		"a keyed list item through the field set": {
			rules:  app,
			fields: deployFields,
			in:     `{"apiVersion":"apps/v1","kind":"Deployment","spec":{"template":{"spec":{"containers":[{"name":"side","env":[{"name":"A","value":"1"}]},{"name":"app","env":[{"name":"T","value":"tok"}]}]}}}}`,
			want:   `{"apiVersion":"apps/v1","kind":"Deployment","spec":{"template":{"spec":{"containers":[{"name":"side","env":[{"name":"A","value":"1"}]},{"name":"app","env":"<redacted>"}]}}}}`,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			in := decode(t, tc.in)
			got := tc.rules.Object(in, tc.fields)
			if diff := cmp.Diff(decode(t, tc.want), got); diff != "" {
				t.Errorf("Object (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(decode(t, tc.in), in); diff != "" {
				t.Errorf("Object changed its argument (-before +after):\n%s", diff)
			}
		})
	}
}

func TestPair(t *testing.T) {
	live := decode(t, `{"apiVersion":"v1","kind":"Secret","data":{"same":"YQ==","changed":"Yg==","gone":"Yw=="}}`)
	after := decode(t, `{"apiVersion":"v1","kind":"Secret","data":{"same":"YQ==","changed":"ZA==","added":"ZQ=="}}`)
	a, b := (*Rules)(nil).Pair(live, after)
	wantA := decode(t, `{"apiVersion":"v1","kind":"Secret","data":{"same":"<redacted>","changed":"<redacted>","gone":"<redacted>"}}`)
	wantB := decode(t, `{"apiVersion":"v1","kind":"Secret","data":{"same":"<redacted>","changed":"<redacted, changed>","added":"<redacted>"}}`)
	if diff := cmp.Diff(wantA, a); diff != "" {
		t.Errorf("before (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(wantB, b); diff != "" {
		t.Errorf("after (-want +got):\n%s", diff)
	}
}
