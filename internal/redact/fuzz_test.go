package redact

import (
	"encoding/json"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
)

// FuzzObject feeds arbitrary JSON objects to the redaction walker, with
// the built-in rules and with an app's rules. It must not panic or change
// its argument, and every value the rules name is hidden: each key of a
// Secret's data and stringData, the last-applied annotation, the app's
// ConfigMap key.
func FuzzObject(f *testing.F) {
	for _, seed := range []string{
		`{"apiVersion":"v1","kind":"Secret","metadata":{"name":"db"},"data":{"password":"aHVudGVyMg=="},"stringData":{"token":"t0k"}}`,
		`{"apiVersion":"v1","kind":"Secret","data":"not-a-map","stringData":{"a":{"nested":1}}}`,
		`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"annotations":{"kubectl.kubernetes.io/last-applied-configuration":"{}"}},"data":{"password":"p","color":"b"}}`,
		`{"apiVersion":"apps/v1","kind":"Deployment","spec":{"template":{"spec":{"containers":[{"name":"app","env":[{"name":"T","value":"x"}]}]}}}}`,
		`{"apiVersion":"example.com/v1","kind":"Secret","data":{"a":"b"}}`,
		`{"kind":"Secret","apiVersion":"v1","data":{"":null}}`,
	} {
		f.Add([]byte(seed))
	}
	app := mustRules(f,
		written{Kinds: []string{"ConfigMap"}, Paths: []string{".data.password"}},
		written{Kinds: []string{"apps/Deployment"}, Paths: []string{".spec.template.spec.containers[*].env"}},
	)
	f.Fuzz(func(t *testing.T, data []byte) {
		var obj map[string]any
		if json.Unmarshal(data, &obj) != nil || obj == nil {
			return
		}
		before := runtime.DeepCopyJSON(obj)
		for _, rules := range []*Rules{nil, app} {
			out := rules.Object(obj)
			if !equalJSON(before, obj) {
				t.Fatalf("Object changed its argument")
			}
			gk := GroupKindOf(obj)
			if IsSecret(gk) {
				for _, key := range []string{"data", "stringData"} {
					in, _ := obj[key].(map[string]any)
					got, _ := out[key].(map[string]any)
					for k := range in {
						if !IsMarker(got[k]) {
							t.Fatalf("Secret %s[%q] not hidden: %v", key, k, got[k])
						}
					}
				}
			}
			if v, ok := annotation(obj, LastApplied); ok && v != nil {
				if got, _ := annotation(out, LastApplied); !IsMarker(got) {
					t.Fatalf("last-applied annotation not hidden: %v", got)
				}
			}
			if rules == app && gk.Group == "" && gk.Kind == "ConfigMap" {
				in, _ := obj["data"].(map[string]any)
				got, _ := out["data"].(map[string]any)
				if _, ok := in["password"]; ok && !IsMarker(got["password"]) {
					t.Fatalf("the app's sensitive ConfigMap key not hidden: %v", got["password"])
				}
			}
		}
		_ = Text(string(data))
	})
}

func annotation(obj map[string]any, key string) (any, bool) {
	md, _ := obj["metadata"].(map[string]any)
	ann, _ := md["annotations"].(map[string]any)
	v, ok := ann[key]
	return v, ok
}

func equalJSON(a, b map[string]any) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return string(x) == string(y)
}
