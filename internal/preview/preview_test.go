package preview

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
	sigsyaml "sigs.k8s.io/yaml"

	"syncd.dev/syncd/internal/applier"
	"syncd.dev/syncd/internal/planner"
	"syncd.dev/syncd/internal/redact"
)

func configMap(data map[string]any, managed ...metav1.ManagedFieldsEntry) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{
			"name": "cm", "namespace": "ns", "resourceVersion": "7", "uid": "u-1",
			"creationTimestamp": "2026-01-01T00:00:00Z",
		},
		"data": data,
	}}
	if managed != nil {
		u.SetManagedFields(managed)
	}
	return u
}

func owns(manager string, paths ...string) metav1.ManagedFieldsEntry {
	set := fieldpath.NewSet()
	for _, p := range paths {
		set.Insert(fieldpath.MakePathOrDie("data", p))
	}
	raw, err := set.ToJSON()
	if err != nil {
		panic(err)
	}
	return metav1.ManagedFieldsEntry{Manager: manager, Operation: metav1.ManagedFieldsOperationApply, FieldsV1: &metav1.FieldsV1{Raw: raw}}
}

func object(slices map[string][]string) *planner.Object {
	o := &planner.Object{Ref: planner.ObjectRef{Version: "v1", Kind: "ConfigMap", Namespace: "ns", Name: "cm"}}
	for _, m := range []string{"syncd-web", "syncd-web-release"} {
		if keys, ok := slices[m]; ok {
			set := fieldpath.NewSet()
			for _, k := range keys {
				set.Insert(fieldpath.MakePathOrDie("data", k))
			}
			o.Slices = append(o.Slices, planner.Slice{Manager: planner.FieldManager(m), Fields: set})
		}
	}
	return o
}

func TestBuild(t *testing.T) {
	one := object(map[string][]string{"syncd-web": {"a"}})
	tests := map[string]struct {
		preview applier.ObjectPreview
		want    Object
	}{
		"create": {
			preview: applier.ObjectPreview{Object: one, After: configMap(map[string]any{"a": "1"}),
				Changes: []applier.Change{{Manager: "syncd-web", Action: applier.Created}}},
			want: Object{Action: Create, Diff: "--- /dev/null\n+++ dry-run\n@@ -0,0 +1,7 @@\n+apiVersion: v1\n+data:\n+  a: \"1\"\n+kind: ConfigMap\n+metadata:\n+  name: cm\n+  namespace: ns\n"},
		},
		"unchanged": {
			preview: applier.ObjectPreview{Object: one, Live: configMap(map[string]any{"a": "1"}, owns("syncd-web", "a")), After: configMap(map[string]any{"a": "1"}),
				Changes: []applier.Change{{Manager: "syncd-web", Action: applier.Unchanged}}},
			want: Object{Action: Unchanged},
		},
		"update": {
			preview: applier.ObjectPreview{Object: one, Live: configMap(map[string]any{"a": "1"}, owns("syncd-web", "a")), After: configMap(map[string]any{"a": "2"}),
				Changes: []applier.Change{{Manager: "syncd-web", Action: applier.Configured}}},
			want: Object{Action: Update, Diff: "--- live\n+++ dry-run\n@@ -1,6 +1,6 @@\n apiVersion: v1\n data:\n-  a: \"1\"\n+  a: \"2\"\n kind: ConfigMap\n metadata:\n   name: cm\n"},
		},
		"conflicts with each outcome": {
			preview: applier.ObjectPreview{Object: one, Live: configMap(map[string]any{"a": "1"}), AfterErr: errors.New("conflict"),
				Changes: []applier.Change{{Manager: "syncd-web", Action: applier.Conflicted,
					Conflicts: applier.Conflicts{{Manager: "kubectl-edit", Path: ".data.a"}},
					Resolved: &applier.Resolution{
						Forced:  applier.Conflicts{{Manager: "ops", Path: ".data.b"}},
						Yielded: applier.Conflicts{{Manager: "hpa", Path: ".data.c"}}}}}},
			want: Object{Action: Update,
				Conflicts: []Conflict{{".data.a", "kubectl-edit", OutcomeFail}, {".data.b", "ops", OutcomeForce}, {".data.c", "hpa", OutcomeYield}},
				Ownership: []Move{{".data.b", "ops", "syncd-web"}}},
		},
		"same value taken from another manager: an ownership move, no conflict": {
			preview: applier.ObjectPreview{Object: one, Live: configMap(map[string]any{"a": "1"}, owns("kustomize-controller", "a")), After: configMap(map[string]any{"a": "1"}),
				Changes: []applier.Change{{Manager: "syncd-web", Action: applier.Configured,
					Resolved: &applier.Resolution{SameValue: applier.Conflicts{{Manager: "kustomize-controller", Path: ".data.a"}}}}}},
			want: Object{Action: Update, Ownership: []Move{{".data.a", "kustomize-controller", "syncd-web"}}},
		},
		"handoff": {
			preview: applier.ObjectPreview{Object: one, Live: configMap(map[string]any{"a": "1"}, owns("syncd-web", "a")), After: configMap(map[string]any{"a": "1"}),
				Changes: []applier.Change{{Manager: "syncd-web", Action: applier.HandoffPending, Resolved: &applier.Resolution{Held: []string{".spec.replicas"}}}}},
			want: Object{Action: Update, Handoffs: []Handoff{{".spec.replicas"}}, Ownership: []Move{{".spec.replicas", "syncd-web", "syncd-web-handoff"}}},
		},
		"field moves between the app's managers": {
			preview: applier.ObjectPreview{
				Object:  object(map[string][]string{"syncd-web": {"a"}, "syncd-web-release": {"b"}}),
				Live:    configMap(map[string]any{"a": "1", "b": "2"}, owns("syncd-web", "a", "b"), owns("someone", "a")),
				After:   configMap(map[string]any{"a": "1", "b": "2"}),
				Changes: []applier.Change{{Manager: "syncd-web", Action: applier.Configured}, {Manager: "syncd-web-release", Action: applier.Configured}}},
			want: Object{Action: Update, Ownership: []Move{{".data.b", "syncd-web", "syncd-web-release"}}},
		},
		"refused": {
			preview: applier.ObjectPreview{Object: one, Live: configMap(map[string]any{"a": "1"}), AfterErr: errors.New("field is immutable"),
				Changes: []applier.Change{{Manager: "syncd-web", Action: applier.Failed, Err: errors.New("field is immutable")}}},
			want: Object{Action: Error, Error: "field is immutable"},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			r, err := Build("web", "main@abc", []applier.ObjectPreview{tc.preview}, Options{})
			if err != nil {
				t.Fatal(err)
			}
			want := tc.want
			want.Object = Ref{APIVersion: "v1", Kind: "ConfigMap", Namespace: "ns", Name: "cm"}
			for _, s := range []*[]Conflict{&want.Conflicts} {
				if *s == nil {
					*s = []Conflict{}
				}
			}
			if want.Handoffs == nil {
				want.Handoffs = []Handoff{}
			}
			if want.Ownership == nil {
				want.Ownership = []Move{}
			}
			if diff := cmp.Diff(want, r.Objects[0]); diff != "" {
				t.Errorf("object (-want +got):\n%s", diff)
			}
		})
	}
}

func secret(data map[string]any) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "Secret",
		"metadata": map[string]any{"name": "s", "namespace": "ns", "annotations": map[string]any{
			redact.LastApplied: `{"data":{"password":"` + base64.StdEncoding.EncodeToString([]byte("hunter2")) + `"}}`,
		}},
		"data": data,
	}}
}

func TestDiffRedactsSecrets(t *testing.T) {
	old := base64.StdEncoding.EncodeToString([]byte("hunter2"))
	changed := base64.StdEncoding.EncodeToString([]byte("correct-horse"))
	got, err := Diff(secret(map[string]any{"password": old, "user": "YWRtaW4="}), secret(map[string]any{"password": changed, "user": "YWRtaW4=", "token": "dG9r"}))
	if err != nil {
		t.Fatal(err)
	}
	for _, leak := range []string{old, changed, "hunter2", "correct-horse", "YWRtaW4=", "dG9r"} {
		if strings.Contains(got, leak) {
			t.Errorf("diff leaks %q:\n%s", leak, got)
		}
	}
	for _, want := range []string{"-  password: <redacted>\n", "+  password: <redacted, changed>\n", "+  token: <redacted>\n", "   user: <redacted>\n"} {
		if !strings.Contains(got, want) {
			t.Errorf("diff lacks %q:\n%s", want, got)
		}
	}
}

func TestDiffStripsServerFields(t *testing.T) {
	live := configMap(map[string]any{"a": "1"}, owns("m", "a"))
	after := configMap(map[string]any{"a": "1"}, owns("m", "a"), owns("other", "a"))
	after.SetResourceVersion("8")
	after.SetGeneration(3)
	after.Object["status"] = map[string]any{"x": "y"}
	got, err := Diff(live, after)
	if err != nil {
		t.Fatal(err)
	}
	if got != "" {
		t.Errorf("diff of objects differing only in server fields is not empty:\n%s", got)
	}
}

// manyObjects makes a report of n updated objects with a large diff each.
func manyObjects(n int) *Report {
	r := &Report{App: "big", Revision: "main@abc"}
	body := strings.Repeat("+  line: padding padding padding padding padding\n", 40)
	for i := range n {
		r.Objects = append(r.Objects, Object{Object: Ref{APIVersion: "v1", Kind: "ConfigMap", Namespace: "ns", Name: fmt.Sprintf("cm-%03d", i)},
			Action: Update, Diff: "--- live\n+++ dry-run\n" + body})
		r.Summary.Update++
	}
	return r
}

func TestMarkdownTruncates(t *testing.T) {
	tests := map[string]struct {
		objects   int
		truncated bool
	}{
		"few objects fit":       {objects: 3, truncated: false},
		"many objects are left": {objects: 200, truncated: true},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			var b bytes.Buffer
			if err := manyObjects(tc.objects).WriteMarkdown(&b); err != nil {
				t.Fatal(err)
			}
			md := b.String()
			if n := len([]rune(md)); n > MarkdownBudget {
				t.Fatalf("markdown is %d characters, over %d", n, MarkdownBudget)
			}
			if got := strings.Contains(md, "more changed object(s) not shown"); got != tc.truncated {
				t.Errorf("truncation note present = %v, want %v", got, tc.truncated)
			}
			shown := strings.Count(md, "<details>")
			if !tc.truncated && shown != tc.objects {
				t.Errorf("%d <details> blocks, want %d", shown, tc.objects)
			}
			if tc.truncated && !strings.Contains(md, fmt.Sprintf("> %d more changed object(s)", tc.objects-shown)) {
				t.Errorf("note does not count the %d objects left out", tc.objects-shown)
			}
			if strings.Count(md, "```diff") != shown || strings.Count(md, "</details>") != shown {
				t.Errorf("unbalanced blocks: %d ```diff, %d </details>, %d <details>", strings.Count(md, "```diff"), strings.Count(md, "</details>"), shown)
			}
		})
	}
}

func TestMarkdownCapsLists(t *testing.T) {
	r := &Report{App: "web", Revision: "r"}
	for i := range 3000 {
		r.Objects = append(r.Objects, Object{Object: Ref{APIVersion: "v1", Kind: "ConfigMap", Namespace: "ns", Name: fmt.Sprintf("cm-%04d", i)}, Action: Update,
			Conflicts: []Conflict{{".data.color", "kubectl-edit", OutcomeFail}}})
	}
	var b bytes.Buffer
	if err := r.WriteMarkdown(&b); err != nil {
		t.Fatal(err)
	}
	if b.Len() > MarkdownBudget {
		t.Errorf("markdown of 3000 conflicts is %d bytes, over %d", b.Len(), MarkdownBudget)
	}
	if !strings.Contains(b.String(), "more (see `syncd plan -o json`)") {
		t.Errorf("the conflict list is not capped with a note")
	}
}

func TestMarkdownPutsBlockersFirst(t *testing.T) {
	r := &Report{App: "web", Revision: "r", Objects: []Object{
		{Object: Ref{APIVersion: "v1", Kind: "ConfigMap", Namespace: "ns", Name: "a"}, Action: Update, Diff: "-x\n+y\n",
			Conflicts: []Conflict{{".data.color", "kubectl-edit", OutcomeFail}}},
		{Object: Ref{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "ns", Name: "web"}, Action: Update,
			Handoffs: []Handoff{{".spec.replicas"}}},
	}}
	var b bytes.Buffer
	if err := r.WriteMarkdown(&b); err != nil {
		t.Fatal(err)
	}
	md := b.String()
	table := strings.Index(md, "| Create |")
	blocked := strings.Index(md, "Blocked by field conflicts")
	handoff := strings.Index(md, "`.spec.replicas` is no longer set from Git")
	details := strings.Index(md, "<details>")
	if table < 0 || blocked < table || handoff < blocked || details < handoff {
		t.Errorf("order is not table < conflicts < handoffs < details (%d %d %d %d):\n%s", table, blocked, handoff, details, md)
	}
	if !strings.Contains(md, "`.data.color` is owned by `kubectl-edit`: **fail**") {
		t.Errorf("conflict line missing:\n%s", md)
	}
}

func TestJSONShape(t *testing.T) {
	r, err := Build("web", "main@abc", []applier.ObjectPreview{{
		Object: object(map[string][]string{"syncd-web": {"a"}}), After: configMap(map[string]any{"a": "1"}),
		Changes: []applier.Change{{Manager: "syncd-web", Action: applier.Created}},
	}}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := r.WriteJSON(&b); err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(b.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	obj := doc["objects"].([]any)[0].(map[string]any)
	got := map[string]any{
		"top":     sortedMapKeys(doc),
		"summary": sortedMapKeys(doc["summary"].(map[string]any)),
		"object":  sortedMapKeys(obj),
		"ref":     obj["object"],
	}
	want := map[string]any{
		"top":     []string{"app", "objects", "revision", "summary"},
		"summary": []string{"conflicts", "create", "handoffs", "unchanged", "update"},
		"object":  []string{"action", "conflicts", "diff", "handoffs", "object", "ownership"},
		"ref":     map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "namespace": "ns", "name": "cm"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("JSON shape (-want +got):\n%s", diff)
	}
}

func sortedMapKeys(m map[string]any) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// TestNotDryRun: objects syncd did not dry-run because the inventory shows
// them as last applied are unchanged without a diff, counted apart, and
// the report's notes are printed in every format.
func TestNotDryRun(t *testing.T) {
	skipped := object(map[string][]string{"syncd-web": {"a"}})
	skipped.Ref.Name = "same"
	changed := object(map[string][]string{"syncd-web": {"a"}})
	r, err := Build("web", "main@abc", []applier.ObjectPreview{
		{Object: skipped},
		{Object: changed, Live: configMap(map[string]any{"a": "1"}, owns("syncd-web", "a")), After: configMap(map[string]any{"a": "2"}),
			Changes: []applier.Change{{Manager: "syncd-web", Action: applier.Configured}}},
	}, Options{NotDryRun: func(o *planner.Object) bool { return o == skipped }, Notes: []string{"a note"}})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(Summary{Update: 1, Unchanged: 1, NotDryRun: 1}, r.Summary); diff != "" {
		t.Errorf("summary (-want +got):\n%s", diff)
	}
	want := Object{Object: Ref{APIVersion: "v1", Kind: "ConfigMap", Namespace: "ns", Name: "same"}, Action: Unchanged,
		Conflicts: []Conflict{}, Handoffs: []Handoff{}, Ownership: []Move{}, NotDryRun: true}
	if diff := cmp.Diff(want, r.Objects[0]); diff != "" {
		t.Errorf("object not dry-run (-want +got):\n%s", diff)
	}
	if r.Objects[1].NotDryRun || r.Objects[1].Action != Update {
		t.Errorf("dry-run object: %+v", r.Objects[1])
	}
	var text, md, js bytes.Buffer
	for _, err := range []error{r.WriteText(&text), r.WriteMarkdown(&md), r.WriteJSON(&js)} {
		if err != nil {
			t.Fatal(err)
		}
	}
	for format, out := range map[string]string{"text": text.String(), "markdown": md.String(), "json": js.String()} {
		if !strings.Contains(out, "a note") {
			t.Errorf("%s lacks the note:\n%s", format, out)
		}
	}
	for format, out := range map[string]string{"text": text.String(), "markdown": md.String()} {
		if !strings.Contains(out, "1 unchanged object(s) not dry-run") {
			t.Errorf("%s does not count the object not dry-run:\n%s", format, out)
		}
	}
	if !strings.Contains(js.String(), `"notDryRun": 1`) || !strings.Contains(js.String(), `"notDryRun": true`) {
		t.Errorf("json lacks notDryRun:\n%s", js.String())
	}
}

// TestToYAMLMatchesSigsYAML: diffs are encoded directly with go-yaml, and
// must read exactly as sigs.k8s.io/yaml (through JSON) wrote them, for
// values as JSON decodes them (typed nil slices and maps, which JSON
// never produces, would print as [] and {} instead of null).
func TestToYAMLMatchesSigsYAML(t *testing.T) {
	tests := map[string]map[string]any{
		"object":            configMap(map[string]any{"a": "1", "b": "true", "c": "yes", "d": "", "e": "multi\nline\n", "f": "0x1F", "g": "1e3", "h": "~", "i": "null", "j": ": colon", "k": "é ü"}).Object,
		"natural key order": {"key10": int64(1), "key9": int64(2), "Key1": true, "a-b": nil, "a_b": false, "1": "one", "": "empty"},
		"numbers":           {"i": int64(-7), "big": int64(1 << 62), "f": 1.5, "whole": float64(2), "huge": 1e21, "tiny": 1e-7, "neg": -0.25},
		"nesting":           {"list": []any{map[string]any{"name": "app", "ports": []any{int64(80)}}, "s", []any{}}, "empty": map[string]any{}, "null": nil},
		"deployment":        deploymentLike(),
	}
	for name, m := range tests {
		t.Run(name, func(t *testing.T) {
			got, err := toYAML(m)
			if err != nil {
				t.Fatal(err)
			}
			want, err := sigsyaml.Marshal(m)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(string(want), got); diff != "" {
				t.Errorf("toYAML (-sigs.k8s.io/yaml +got):\n%s", diff)
			}
		})
	}
}

func deploymentLike() map[string]any {
	return map[string]any{
		"apiVersion": "apps/v1", "kind": "Deployment",
		"metadata": map[string]any{"name": "web", "labels": map[string]any{"app.kubernetes.io/name": "web"}, "annotations": map[string]any{"deployment.kubernetes.io/revision": "3"}},
		"spec": map[string]any{
			"replicas": int64(3), "revisionHistoryLimit": int64(10), "progressDeadlineSeconds": int64(600),
			"strategy": map[string]any{"type": "RollingUpdate", "rollingUpdate": map[string]any{"maxSurge": "25%", "maxUnavailable": int64(0)}},
			"template": map[string]any{"spec": map[string]any{"containers": []any{map[string]any{
				"name": "app", "image": "example.com/web:1", "args": []any{"--port=8080", "-v", "2"},
				"resources": map[string]any{"limits": map[string]any{"cpu": "500m", "memory": "128Mi"}},
				"env":       []any{map[string]any{"name": "LOG_LEVEL", "value": "debug"}, map[string]any{"name": "N", "value": "010"}},
			}}}},
		},
	}
}
