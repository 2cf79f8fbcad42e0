package drift

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	"syncd.dev/syncd/internal/config"
	"syncd.dev/syncd/internal/planner"
)

// These tests build managedFields by hand for the cases a real API server
// cannot easily be driven into (a handoff manager, a yielded field, a
// manager that vanished); the server-backed tests in server_test.go cover
// the cases the API server produces on its own.
func TestDetectOffline(t *testing.T) {
	at := time.Date(2026, 11, 29, 14, 2, 5, 0, time.UTC)
	const cm = `
apiVersion: v1
kind: ConfigMap
metadata: {name: cm, namespace: ns}
data: {color: blue, size: "3"}
`
	cmRef := planner.ObjectRef{Version: "v1", Kind: "ConfigMap", Namespace: "ns", Name: "cm"}
	app := config.App{Name: "web"}
	live := func(data map[string]any, entries ...metav1.ManagedFieldsEntry) *unstructured.Unstructured {
		u := obj(t, `{apiVersion: v1, kind: ConfigMap, metadata: {name: cm, namespace: ns}}`)
		u.Object["data"] = data
		u.SetManagedFields(entries)
		return u
	}
	both := `{"f:data":{"f:color":{},"f:size":{}}}`
	type want struct {
		path, class, culprit string
		desired, live        any
	}
	tests := map[string]struct {
		live *unstructured.Unstructured
		opts Options
		want []want
	}{
		"in sync": {
			live: live(map[string]any{"color": "blue", "size": "3"}, mf("syncd-web", "Apply", "", both, at)),
		},
		"deleted": {
			want: []want{{class: "deleted"}},
		},
		"value drift under syncd's ownership": {
			live: live(map[string]any{"color": "teal", "size": "3"}, mf("syncd-web", "Apply", "", both, at)),
			want: []want{{path: ".data.color", class: "value-drift", desired: "blue", live: "teal"}},
		},
		"every syncd field taken is told field by field": {
			live: live(map[string]any{"color": "red", "size": "3"}, mf("kubectl-edit", "Update", "", both, at)),
			want: []want{
				{path: ".data.color", class: "taken-over", culprit: "kubectl-edit", desired: "blue", live: "red"},
				{path: ".data.size", class: "taken-over", culprit: "kubectl-edit", desired: "3", live: "3"},
			},
		},
		"unmanaged: managedFields wiped": {
			live: live(map[string]any{"color": "blue", "size": "3"}),
			want: []want{{class: "unmanaged"}},
		},
		"unmanaged: another manager took one field, nobody owns the other": {
			live: live(map[string]any{"color": "red", "size": "3"}, mf("before-first-apply", "Update", "", `{"f:data":{"f:color":{}}}`, at)),
			want: []want{
				{class: "unmanaged", culprit: "before-first-apply"},
				{path: ".data.color", class: "taken-over", culprit: "before-first-apply", desired: "blue", live: "red"},
			},
		},
		"removed out of band": {
			live: live(map[string]any{"size": "3"}, mf("syncd-web", "Apply", "", `{"f:data":{"f:size":{}}}`, at)),
			want: []want{{path: ".data.color", class: "taken-over", desired: "blue"}},
		},
		"handoff manager holds a field that left Git": {
			live: live(map[string]any{"color": "blue", "size": "3", "old": "x"},
				mf("syncd-web", "Apply", "", both, at),
				mf("syncd-web-handoff", "Apply", "", `{"f:data":{"f:old":{}}}`, at)),
			want: []want{{path: ".data.old", class: "handoff-pending", live: "x"}},
		},
		"yielded field": {
			live: live(map[string]any{"color": "green", "size": "3"},
				mf("syncd-web", "Apply", "", `{"f:data":{"f:size":{}}}`, at),
				mf("operator", "Apply", "", `{"f:data":{"f:color":{}}}`, at)),
			opts: Options{Yielded: []FieldRef{{Object: cmRef, Manager: "operator", Path: ".data.color"}}},
			want: []want{{path: ".data.color", class: "yielded", culprit: "operator", desired: "blue", live: "green"}},
		},
		"extra syncd manager counts as syncd": {
			live: live(map[string]any{"color": "blue", "size": "3"},
				mf("syncd-web", "Apply", "", `{"f:data":{"f:size":{}}}`, at),
				mf("syncd-web-images", "Apply", "", `{"f:data":{"f:color":{}}}`, at)),
			opts: Options{Managers: []planner.FieldManager{"syncd-web-images"}},
		},
		"another manager's own field is not drift": {
			live: live(map[string]any{"color": "blue", "size": "3", "owner": "team-a"},
				mf("syncd-web", "Apply", "", both, at),
				mf("other", "Apply", "", `{"f:data":{"f:owner":{}}}`, at)),
		},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			plan := mustPlan(t, app, cm)
			liveMap := map[planner.ObjectRef]*unstructured.Unstructured{}
			if tt.live != nil {
				liveMap[cmRef] = tt.live
			}
			r := Detect(plan, liveMap, tt.opts)
			var got []want
			for _, f := range r.Findings {
				got = append(got, want{path: f.Path, class: string(f.Class), culprit: f.Culprit, desired: f.Desired, live: f.Live})
			}
			if diff := cmp.Diff(tt.want, got, cmp.AllowUnexported(want{}), cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("findings (-want +got):\n%s", diff)
			}
			if len(r.Warnings) > 0 {
				t.Errorf("warnings: %v", r.Warnings)
			}
		})
	}
}

// TestDetectUndecodableEntries pins the warning for a managedFields entry
// whose fields cannot be decoded: the entry is named, its fields are not
// checked, and the other entries still are.
func TestDetectUndecodableEntries(t *testing.T) {
	at := time.Date(2026, 11, 29, 14, 2, 5, 0, time.UTC)
	cmRef := planner.ObjectRef{Version: "v1", Kind: "ConfigMap", Namespace: "ns", Name: "cm"}
	plan := mustPlan(t, config.App{Name: "web"}, `{apiVersion: v1, kind: ConfigMap, metadata: {name: cm, namespace: ns}, data: {color: blue}}`)
	const badFields = `{"data":{}}` // no "f:" prefix
	badErr := (&fieldpath.Set{}).FromJSON(stringReader(badFields))
	if badErr == nil {
		t.Fatalf("%s decodes", badFields)
	}
	otherType := mf("old-tool", "Update", "", `{"f:data":{"f:color":{}}}`, at)
	otherType.FieldsType = "FieldsV2"
	live := obj(t, `{apiVersion: v1, kind: ConfigMap, metadata: {name: cm, namespace: ns}, data: {color: teal}}`)
	live.SetManagedFields([]metav1.ManagedFieldsEntry{
		mf("broken", "Update", "", badFields, at),
		otherType,
		mf("syncd-web", "Apply", "", `{"f:data":{"f:color":{}}}`, at),
	})
	r := Detect(plan, map[planner.ObjectRef]*unstructured.Unstructured{cmRef: live}, Options{})
	wantWarnings := []string{
		cmRef.String() + `: managedFields entry of "broken" (Update): ` + badErr.Error() + "; its fields are not checked",
		cmRef.String() + `: managedFields entry of "old-tool" (Update): fieldsType "FieldsV2" is not FieldsV1; its fields are not checked`,
	}
	if diff := cmp.Diff(wantWarnings, r.Warnings); diff != "" {
		t.Errorf("warnings (-want +got):\n%s", diff)
	}
	var classes []string
	for _, f := range r.Findings {
		classes = append(classes, f.Path+" "+string(f.Class))
	}
	if diff := cmp.Diff([]string{".data.color value-drift"}, classes); diff != "" {
		t.Errorf("findings (-want +got):\n%s", diff)
	}
}

func TestReportOutputs(t *testing.T) {
	at := time.Date(2026, 11, 29, 14, 2, 5, 0, time.UTC)
	r := &Report{Findings: []Finding{
		{
			App: "web", Object: Object{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "prod", Name: "web"},
			Path: `.spec.template.spec.containers[name="app"].image`, Class: TakenOver, DeclaredBy: "syncd-web",
			Desired: "v1.4", Live: "v1.5-hotfix", Differs: true, Culprit: "kubectl-edit",
			Owners: []Owner{{Manager: "kubectl-edit", Operation: "Update", Time: ptime(at)}},
		},
		{
			App: "web", Object: Object{APIVersion: "v1", Kind: "ConfigMap", Namespace: "prod", Name: "cfg|x"},
			Path: ".data.mode", Class: Yielded, DeclaredBy: "syncd-web", Desired: "a", Live: "b", Culprit: "operator",
			Owners: []Owner{{Manager: "operator", Operation: "Apply", Time: ptime(at)}},
		},
	}}
	var text, md, js bytes.Buffer
	if err := r.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	if err := r.WriteMarkdown(&md); err != nil {
		t.Fatal(err)
	}
	if err := r.WriteJSON(&js); err != nil {
		t.Fatal(err)
	}
	wantText := `Deployment prod/web: .spec.template.spec.containers[name="app"].image was changed from v1.4 to v1.5-hotfix by kubectl-edit (Update) at 2026-11-29 14:02:05 UTC; Git says v1.4
ConfigMap prod/cfg|x: .data.mode was yielded to operator (information)
`
	if diff := cmp.Diff(wantText, text.String()); diff != "" {
		t.Errorf("text (-want +got):\n%s", diff)
	}
	wantMD := "| Object | Field | Class | Git | Live | Owners |\n" +
		"|---|---|---|---|---|---|\n" +
		"| `Deployment prod/web` | `.spec.template.spec.containers[name=\"app\"].image` | taken-over | `v1.4` | `v1.5-hotfix` | kubectl-edit (Update) at 2026-11-29 14:02:05 UTC |\n" +
		"| `ConfigMap prod/cfg\\|x` | `.data.mode` | yielded | `a` | `b` | operator (Apply) at 2026-11-29 14:02:05 UTC |\n"
	if diff := cmp.Diff(wantMD, md.String()); diff != "" {
		t.Errorf("markdown (-want +got):\n%s", diff)
	}
	if !strings.Contains(js.String(), `"time": "2026-11-29T14:02:05Z"`) {
		t.Errorf("json has no RFC 3339 time:\n%s", js.String())
	}
	if !r.HasDrift() {
		t.Error("HasDrift = false with a taken-over finding")
	}
	info := &Report{Findings: r.Findings[1:]}
	if info.HasDrift() {
		t.Error("HasDrift = true with only a yielded finding")
	}
	var empty bytes.Buffer
	if err := (&Report{}).WriteJSON(&empty); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff("{\n  \"findings\": []\n}\n", empty.String()); diff != "" {
		t.Errorf("empty json (-want +got):\n%s", diff)
	}
}

// TestDetectZeroValues: zero values Git spells out, which the API server
// does not store, and an empty map whose keys a controller fills in, are
// not drift; a real change of such a field still is.
func TestDetectZeroValues(t *testing.T) {
	at := time.Date(2026, 12, 1, 17, 0, 0, 0, time.UTC)
	plan := mustPlan(t, config.App{Name: "web", Namespace: "ns"}, `
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, annotations: {}}
spec:
  minReadySeconds: 0
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      hostNetwork: false
      containers:
      - name: app
        image: example.com/web:v1
        volumeMounts: [{name: config, mountPath: /etc/web, readOnly: false}]
`)
	ref := plan.Objects[0].Ref
	// managedFields as the API server writes them after syncd's apply: it
	// records every field applied, zero values included, but stores none.
	const spec = `"f:spec":{"f:minReadySeconds":{},"f:selector":{},
"f:template":{"f:metadata":{"f:labels":{"f:app":{}}},"f:spec":{"f:hostNetwork":{},"f:containers":{"k:{\"name\":\"app\"}":{".":{},"f:name":{},"f:image":{},
"f:volumeMounts":{"k:{\"mountPath\":\"/etc/web\"}":{".":{},"f:name":{},"f:mountPath":{},"f:readOnly":{}}}}}}}}`
	syncd := mf("syncd-web", "Apply", "", `{"f:metadata":{"f:annotations":{}},`+spec+`}`, at)
	controller := mf("kube-controller-manager", "Update", "", `{"f:metadata":{"f:annotations":{"f:deployment.kubernetes.io/revision":{}}}}`, at)
	live := func(minReady any, annotations map[string]any, entries ...metav1.ManagedFieldsEntry) *unstructured.Unstructured {
		u := obj(t, `
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: ns}
spec:
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
      - name: app
        image: example.com/web:v1
        volumeMounts: [{name: config, mountPath: /etc/web}]
`)
		if minReady != nil {
			_ = unstructured.SetNestedField(u.Object, minReady, "spec", "minReadySeconds")
		}
		if annotations != nil {
			u.Object["metadata"].(map[string]any)["annotations"] = annotations
		}
		u.SetManagedFields(entries)
		return u
	}
	tests := map[string]struct {
		live *unstructured.Unstructured
		want []string
	}{
		"zero values absent live": {live: live(nil, nil, syncd)},
		"a controller's annotation in the empty map": {
			live: live(nil, map[string]any{"deployment.kubernetes.io/revision": "1"}, syncd, controller),
		},
		// The applier's own annotation: the server then records the
		// key, not the map, for syncd.
		"nobody owns the empty map itself": {
			live: live(nil, map[string]any{"deployment.kubernetes.io/revision": "1"}, controller,
				mf("syncd-web", "Apply", "", `{"f:metadata":{"f:annotations":{"f:managers.syncd.dev/web":{}}},`+spec+`}`, at)),
		},
		"a zero value changed under syncd's name": {
			live: live(int64(5), nil, syncd),
			want: []string{".spec.minReadySeconds value-drift 0 5"},
		},
		"another manager owns the zero value too, with another value": {
			live: live(int64(5), nil, syncd, mf("kubectl-edit", "Update", "", `{"f:spec":{"f:minReadySeconds":{}}}`, at.Add(time.Minute))),
			want: []string{".spec.minReadySeconds shared 0 5"},
		},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			r := Detect(plan, map[planner.ObjectRef]*unstructured.Unstructured{ref: tt.live}, Options{})
			if diff := cmp.Diff(tt.want, findingLines(r)); diff != "" {
				t.Errorf("findings (-want +got):\n%s", diff)
			}
		})
	}
}

// TestDetectNullDeclared: a chart that renders replicas: null (kyverno's
// Deployments) declares no value there; the API server stores its
// default, which Git's text (the comparison when the server cannot be
// asked, a webhook being down) must not call drift. Another manager
// taking the field is still found.
func TestDetectNullDeclared(t *testing.T) {
	at := time.Date(2026, 12, 1, 17, 0, 0, 0, time.UTC)
	plan := mustPlan(t, config.App{Name: "web", Namespace: "ns"}, `
apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: null
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers: [{name: app, image: example.com/web:v1}]
`)
	ref := plan.Objects[0].Ref
	const fields = `{"f:spec":{"f:replicas":{},"f:selector":{},"f:template":{"f:metadata":{"f:labels":{"f:app":{}}},"f:spec":{"f:containers":{"k:{\"name\":\"app\"}":{".":{},"f:name":{},"f:image":{}}}}}}}`
	live := func(entries ...metav1.ManagedFieldsEntry) *unstructured.Unstructured {
		u := obj(t, `
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: ns}
spec:
  replicas: 1
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers: [{name: app, image: example.com/web:v1}]
`)
		u.SetManagedFields(entries)
		return u
	}
	tests := map[string]struct {
		live *unstructured.Unstructured
		want []string
	}{
		"the server's default under syncd's name": {live: live(mf("syncd-web", "Apply", "", fields, at))},
		"taken by a scaler": {
			live: live(mf("syncd-web", "Apply", "", strings.Replace(fields, `"f:replicas":{},`, "", 1), at),
				mf("kube-controller-manager", "Update", "scale", `{"f:spec":{"f:replicas":{}}}`, at.Add(time.Minute))),
			want: []string{".spec.replicas taken-over <nil> 1"},
		},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			r := Detect(plan, map[planner.ObjectRef]*unstructured.Unstructured{ref: tt.live}, Options{})
			if diff := cmp.Diff(tt.want, findingLines(r)); diff != "" {
				t.Errorf("findings (-want +got):\n%s", diff)
			}
		})
	}
}

// findingLines is each finding of r as "path class desired live".
func findingLines(r *Report) []string {
	var out []string
	for _, f := range r.Findings {
		out = append(out, fmt.Sprintf("%s %s %v %v", f.Path, f.Class, f.Desired, f.Live))
	}
	return out
}
