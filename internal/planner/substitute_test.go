package planner

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	sigsyaml "sigs.k8s.io/yaml"

	"syncd.dev/syncd/internal/config"
	"syncd.dev/syncd/internal/redact"
)

// secretValue is the value of the sensitive variable TOKEN; no output may
// hold it.
const secretValue = "s3cr3t-t0ken"

// substVars are the variables of the substitution tests.
var substVars = map[string]Variable{
	"CLUSTER":  {Value: "prod", Source: "apps[0].substitute"},
	"REPLICAS": {Value: "3", Source: "apps[0].substitute"},
	"ENABLED":  {Value: "true", Source: "apps[0].substitute"},
	"KEY":      {Value: "region", Source: "vars.yaml"},
	"EMPTY":    {Value: "", Source: "vars.yaml"},
	"QUOTE":    {Value: `"`, Source: "apps[0].substitute"},
	"TOKEN":    {Value: secretValue, Sensitive: true, Source: "Secret syncd/cluster-secrets"},
	"TOKEN64":  {Value: "czNjcjN0", Sensitive: true, Source: "Secret syncd/cluster-secrets"},
	"BROKEN":   {Value: "[" + secretValue, Sensitive: true, Source: "Secret syncd/cluster-secrets"},
	// Values YAML would read as something else when written unquoted.
	"PASSWORD":  {Value: "Tr0ub4dor #3 horse", Source: "apps[0].substitute"},
	"IMPORTANT": {Value: "!important", Source: "apps[0].substitute"},
	"COLON":     {Value: "a: b", Source: "apps[0].substitute"},
	"BRACES":    {Value: "{x}", Source: "apps[0].substitute"},
	"LEADING":   {Value: " leading", Source: "apps[0].substitute"},
	"MULTILINE": {Value: "line one\n  line two\n", Source: "apps[0].substitute"},
	"PSS":       {Value: "p@ss #1!", Source: "apps[0].substitute"},
	"VERSION":   {Value: "1.10", Source: "apps[0].substitute"},
	"PIN":       {Value: "0123", Source: "apps[0].substitute"},
	"YES":       {Value: "yes", Source: "apps[0].substitute"},
}

// intactValues are the variables whose values must land byte for byte.
var intactValues = []string{"PASSWORD", "IMPORTANT", "COLON", "BRACES", "LEADING", "MULTILINE", "PSS", "VERSION", "PIN", "YES"}

// TestSubstitutionKeepsValuesIntact substitutes values that YAML reads as
// comments, tags, mappings, flow collections, other numbers or other
// text, unquoted, quoted and inside longer strings: each lands byte for
// byte where the template put it.
func TestSubstitutionKeepsValuesIntact(t *testing.T) {
	for _, name := range intactValues {
		value := substVars[name].Value
		t.Run(name, func(t *testing.T) {
			doc := substCM(fmt.Sprintf("  plain: ${%s}\n  quoted: \"${%s}\"\n  single: '${%s}'\n  inside: x-${%s}-y\n", name, name, name, name))
			got, err := substituteDoc(t, doc, UnsetRefused, nil)
			if err != nil {
				t.Fatal(err)
			}
			want := map[string]any{"plain": value, "quoted": value, "single": value, "inside": "x-" + value + "-y"}
			if diff := cmp.Diff(want, got["data"]); diff != "" {
				t.Errorf("data (-want +got):\n%s", diff)
			}
		})
	}
}

func substCM(data string) string {
	return "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm\ndata:\n" + data
}

func TestSubstitution(t *testing.T) {
	tests := map[string]struct {
		doc       string
		unset     UnsetVariables
		sensitive []config.SensitiveRule
		want      string // the object after substitution, as YAML; empty when err is set
		err       string // a part of the error
	}{
		"a value": {
			doc:  substCM("  a: ${CLUSTER}\n  b: cluster-${CLUSTER}-eu\n"),
			want: substCM("  a: prod\n  b: cluster-prod-eu\n"),
		},
		"defaults": {
			doc:  substCM("  a: ${MISSING:=fallback}\n  b: ${CLUSTER:=fallback}\n  c: ${EMPTY:=fallback}\n  d: ${MISSING:-x}\n"),
			want: substCM("  a: fallback\n  b: prod\n  c: fallback\n  d: x\n"),
		},
		"strict refuses an unset variable, naming it and the field": {
			doc: substCM("  a: ok\n  b: ${MISSING}\n"),
			err: "app.yaml: document 1 (v1 ConfigMap cm): variable MISSING at .data.b is not set: set it in the app's substitute or substituteFrom, give it a default (${MISSING:=value}), or write $${MISSING} for a literal ${MISSING}",
		},
		"strict refuses an unset variable in a key": {
			doc: substCM("  ${MISSING}: v\n"),
			err: "variable MISSING at .data (a key) is not set",
		},
		"not strict: an unset variable is empty": {
			doc:   substCM("  a: x${MISSING}y\n"),
			unset: UnsetEmpty,
			want:  substCM("  a: xy\n"),
		},
		"escape": {
			doc:  substCM("  a: $${CLUSTER}\n  b: $${MISSING}\n"),
			want: substCM("  a: ${CLUSTER}\n  b: ${MISSING}\n"),
		},
		"bare $NAME is not a variable": {
			doc:  substCM("  a: $CLUSTER\n"),
			want: substCM("  a: $CLUSTER\n"),
		},
		"syncd annotation disables": {
			doc:  "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm\n  annotations: {syncd.dev/substitute: disabled}\ndata:\n  a: ${MISSING}\n",
			want: "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm\n  annotations: {syncd.dev/substitute: disabled}\ndata:\n  a: ${MISSING}\n",
		},
		"Flux annotation disables": {
			doc:  "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm\n  annotations: {kustomize.toolkit.fluxcd.io/substitute: disabled}\ndata:\n  a: ${CLUSTER}\n",
			want: "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm\n  annotations: {kustomize.toolkit.fluxcd.io/substitute: disabled}\ndata:\n  a: ${CLUSTER}\n",
		},
		"Flux label disables": {
			doc:  "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm\n  labels: {kustomize.toolkit.fluxcd.io/substitute: disabled}\ndata:\n  a: ${CLUSTER}\n",
			want: "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm\n  labels: {kustomize.toolkit.fluxcd.io/substitute: disabled}\ndata:\n  a: ${CLUSTER}\n",
		},
		"another value of the annotation does not disable": {
			doc:  "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm\n  annotations: {syncd.dev/substitute: enabled}\ndata:\n  a: ${CLUSTER}\n",
			want: "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm\n  annotations: {syncd.dev/substitute: enabled}\ndata:\n  a: prod\n",
		},
		"a key and a name": {
			doc:  "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm-${CLUSTER}\ndata:\n  ${KEY}: eu\n",
			want: "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm-prod\ndata:\n  region: eu\n",
		},
		"a number or a boolean, quoted or not, as in Flux": {
			doc:  "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\nspec:\n  replicas: \"${REPLICAS}\"\n  paused: ${ENABLED}\n",
			want: "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\nspec:\n  replicas: 3\n  paused: true\n",
		},
		"${QUOTE} keeps a number a string (Flux's documented way)": {
			doc:  "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\nspec:\n  template:\n    spec:\n      containers:\n      - name: web\n        env:\n        - name: NUM\n          value: ${QUOTE}${REPLICAS}${QUOTE}\n",
			want: "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\nspec:\n  template:\n    spec:\n      containers:\n      - name: web\n        env: [{name: NUM, value: \"3\"}]\n",
		},
		"JSON is substituted the same way": {
			doc:  `{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cm"}, "data": {"n": "${QUOTE}${REPLICAS}${QUOTE}", "c": "${CLUSTER}"}}`,
			want: substCM("  \"n\": \"3\"\n  c: prod\n"),
		},
		"comments are not substituted": {
			doc:  substCM("  # uses ${MISSING} in a comment\n  a: ${CLUSTER} # and ${MISSING} here\n"),
			want: substCM("  a: prod\n"),
		},
		"a sensitive value in a Secret's stringData and data": {
			doc:  "apiVersion: v1\nkind: Secret\nmetadata: {name: s}\nstringData:\n  token: ${TOKEN}\ndata:\n  b: ${TOKEN64}\n",
			want: "apiVersion: v1\nkind: Secret\nmetadata: {name: s}\nstringData:\n  token: " + secretValue + "\ndata:\n  b: czNjcjN0\n",
		},
		"a sensitive value in a field syncd prints is refused": {
			doc: substCM("  token: ${TOKEN}\n"),
			err: "the sensitive variables TOKEN (from Secret syncd/cluster-secrets) land in .data.token, which syncd prints",
		},
		"a sensitive value in a field a sensitive rule covers": {
			doc:       substCM("  token: Bearer ${TOKEN}\n"),
			sensitive: []config.SensitiveRule{{Kinds: []string{"ConfigMap"}, Paths: []string{".data.token"}}},
			want:      substCM("  token: Bearer " + secretValue + "\n"),
		},
		"a sensitive value in a list item a [*] rule covers": {
			doc:       "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\nspec:\n  template:\n    spec:\n      containers:\n      - name: web\n        env: [{name: T, value: \"${TOKEN}\"}]\n",
			sensitive: []config.SensitiveRule{{Paths: []string{".spec.template.spec.containers[*].env"}}},
			want:      "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\nspec:\n  template:\n    spec:\n      containers:\n      - name: web\n        env: [{name: T, value: \"" + secretValue + "\"}]\n",
		},
		"a sensitive value in a name is refused": {
			doc:       "apiVersion: v1\nkind: Secret\nmetadata: {name: \"s-${TOKEN}\"}\n",
			sensitive: []config.SensitiveRule{{Paths: []string{".metadata"}}},
			err:       "land in .metadata.name (the object's identity)",
		},
		"a sensitive value in a Secret's data key is refused": {
			doc: "apiVersion: v1\nkind: Secret\nmetadata: {name: s}\nstringData:\n  ${TOKEN}: x\n",
			err: "land in .stringData (its keys)",
		},
		"text derived from a sensitive value is found (its first letter is the first stand-in's)": {
			doc: substCM("  first: ${TOKEN:0:1}\n  length: \"${#TOKEN}\"\n"),
			err: "land in .data.first, .data.length, which syncd prints",
		},
		"a sensitive number is refused where it would be printed": {
			doc: "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\nspec:\n  replicas: ${TOKEN}\n",
			err: "land in .spec.replicas, which syncd prints",
		},
		"a sensitive value that reads as YAML lands as it is": {
			doc:  "apiVersion: v1\nkind: Secret\nmetadata: {name: s}\nstringData:\n  a: ${BROKEN}\n",
			want: "apiVersion: v1\nkind: Secret\nmetadata: {name: s}\nstringData:\n  a: \"[" + secretValue + "\"\n",
		},
		"a key that becomes another key is refused, naming the variable": {
			doc: substCM("  ${KEY}: a\n  region: b\n"),
			err: "app.yaml: document 1 (v1 ConfigMap cm): the variable KEY (from vars.yaml) changes the object's structure: the key ${KEY} of .data becomes region, which .data already has",
		},
		"not strict: an unset variable alone is an empty string": {
			doc:   substCM("  a: ${MISSING}\n"),
			unset: UnsetEmpty,
			want:  substCM("  a: \"\"\n"),
		},
		"a bad expression names its field": {
			doc: substCM("  a: ok\n  b: ${CLUSTER\n"),
			err: "variable substitution at .data.b: missing closing brace",
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got, err := substituteDoc(t, tc.doc, tc.unset, tc.sensitive)
			if err != nil {
				if strings.Contains(err.Error(), secretValue) {
					t.Fatalf("the error holds the sensitive value: %v", err)
				}
				if tc.err == "" || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("Plan error = %v, want one containing %q", err, tc.err)
				}
				return
			}
			if tc.err != "" {
				t.Fatalf("Plan succeeded, want an error containing %q", tc.err)
			}
			var want map[string]any
			if err := sigsyaml.Unmarshal([]byte(tc.want), &want); err != nil {
				t.Fatal(err)
			}
			want = roundTrip(t, want)
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("substituted object (-want +got):\n%s", diff)
			}
		})
	}
}

// substituteDoc plans one document of app.yaml with substVars and returns
// the planned object (its namespace left out).
func substituteDoc(t *testing.T, doc string, unset UnsetVariables, sensitive []config.SensitiveRule) (map[string]any, error) {
	t.Helper()
	ms, errs := decodeStream(strings.NewReader(doc), "app.yaml")
	if len(errs) > 0 {
		t.Fatalf("decode: %v", errs)
	}
	app := config.App{Name: "web", Namespace: "default", AppSpec: config.AppSpec{Sensitive: sensitive}}
	var ropts redact.Options
	for i, sr := range sensitive {
		r, err := redact.ParseSensitive(sr.Kinds, sr.Paths)
		if err != nil {
			t.Fatalf("sensitive[%d]: %v", i, err)
		}
		ropts.Sensitive = append(ropts.Sensitive, r)
	}
	rules := redact.New(ropts)
	p, err := newFromConfig(app, Options{Substitution: &Substitution{Variables: substVars, Unset: unset, Sensitive: rules}})
	if err != nil {
		t.Fatal(err)
	}
	plan, err := p.Plan(context.Background(), ms)
	if err != nil {
		return nil, err
	}
	return roundTrip(t, plan.Objects[0].Desired.Object), nil
}

// roundTrip turns o into what decoding its JSON gives, so that numbers
// compare equal whatever their Go type.
func roundTrip(t *testing.T, o map[string]any) map[string]any {
	t.Helper()
	b, err := sigsyaml.Marshal(o)
	if err != nil {
		t.Fatal(err)
	}
	obj, err := parseDocument(b)
	if err != nil {
		t.Fatal(err)
	}
	delete(obj.Object, "status")
	if md, ok := obj.Object["metadata"].(map[string]any); ok {
		delete(md, "namespace")
	}
	return obj.Object
}

func TestSubstitutionListItems(t *testing.T) {
	doc := `apiVersion: v1
kind: List
items:
- apiVersion: v1
  kind: ConfigMap
  metadata: {name: a}
  data: {cluster: "${CLUSTER}"}
- apiVersion: v1
  kind: ConfigMap
  metadata:
    name: b
    annotations: {syncd.dev/substitute: disabled}
  data: {cluster: "${CLUSTER}"}
`
	ms, errs := decodeStream(strings.NewReader(doc), "list.yaml")
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	p, err := newFromConfig(config.App{Name: "web", Namespace: "default"}, Options{Substitution: &Substitution{Variables: substVars}})
	if err != nil {
		t.Fatal(err)
	}
	plan, err := p.Plan(context.Background(), ms)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]any{}
	for _, o := range plan.Objects {
		got[o.Ref.Name] = o.Desired.Object["data"]
	}
	want := map[string]any{"a": map[string]any{"cluster": "prod"}, "b": map[string]any{"cluster": "${CLUSTER}"}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("items' data (-want +got):\n%s", diff)
	}
}

func TestSubstitutionRefusesBadNames(t *testing.T) {
	_, err := newFromConfig(config.App{Name: "web"}, Options{Substitution: &Substitution{Variables: map[string]Variable{"my-var": {Source: "vars.yaml"}}}})
	if want := `app "web": substitution: "my-var" (from vars.yaml) is not a variable name`; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("New = %v, want an error containing %q", err, want)
	}
}

// TestSubstitutionKeepsObjectsWithoutVariables renders the planner's
// fixtures with a substitution and without: objects that use no variable
// come out the same (marshalling anew loses nothing).
func TestSubstitutionKeepsObjectsWithoutVariables(t *testing.T) {
	for _, tree := range []Tree{
		{Dir: "testdata/plan/crds/manifests"},
		{Dir: "testdata/plan/kustomize/manifests"},
		{Dir: "testdata/plan/plain/manifests"},
		{Dir: "testdata/plan/split/manifests"},
		{Root: "testdata/repos/layered", Dir: "testdata/repos/layered/overlays/production"},
	} {
		t.Run(tree.Dir, func(t *testing.T) {
			plain, err := Render(context.Background(), tree)
			if err != nil {
				t.Fatal(err)
			}
			substituted, err := Render(context.Background(), tree)
			if err != nil {
				t.Fatal(err)
			}
			s := &Substitution{Variables: substVars, Unset: UnsetEmpty}
			for i := range substituted {
				// object, not the phase: the phase skips objects without a "$".
				obj, err := s.object(substituted[i])
				if err != nil {
					t.Fatalf("%s: %v", substituted[i].Origin(), err)
				}
				if diff := cmp.Diff(plain[i].Object.Object, obj.Object); diff != "" {
					t.Errorf("%s changed (-without +with):\n%s", plain[i].Origin(), diff)
				}
			}
		})
	}
}

// BenchmarkSubstituteObject measures one Deployment that uses variables:
// written as YAML, substituted and read again.
func BenchmarkSubstituteObject(b *testing.B) {
	doc := "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web, labels: {cluster: \"${CLUSTER}\"}}\nspec:\n  replicas: ${REPLICAS}\n  selector: {matchLabels: {app: web}}\n  template:\n    metadata: {labels: {app: web}}\n    spec:\n      containers:\n      - name: app\n        image: example.com/web:${TAG:=1.0}\n        env: [{name: A, value: \"1\"}, {name: B, value: \"2\"}]\n"
	ms, errs := decodeStream(strings.NewReader(doc), "web.yaml")
	if len(errs) > 0 {
		b.Fatal(errs)
	}
	s := &Substitution{Variables: substVars}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := s.object(ms[0]); err != nil {
			b.Fatal(err)
		}
	}
}
