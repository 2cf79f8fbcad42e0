package redact_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/yaml"

	"syncd.dev/syncd/internal/alert"
	"syncd.dev/syncd/internal/applier"
	"syncd.dev/syncd/internal/config"
	"syncd.dev/syncd/internal/decrypt"
	_ "syncd.dev/syncd/internal/decrypt/sopsfile" // renders in process read SOPS files
	"syncd.dev/syncd/internal/decrypt/sopstest"
	"syncd.dev/syncd/internal/drift"
	"syncd.dev/syncd/internal/planner"
	"syncd.dev/syncd/internal/preview"
	"syncd.dev/syncd/internal/reconcile"
	"syncd.dev/syncd/internal/redact"
)

// Values that must never appear in any output. Git's and the cluster's
// versions differ, so drift and plan diffs have something to show.
var secretValues = []string{
	"aHVudGVyMi1naXQ=", "aHVudGVyMi1saXZl", // Secret data (Git, live)
	"tok-stringdata-git", "tok-stringdata-live", // Secret stringData
	"cm-password-git", "cm-password-live", // ConfigMap key the app marks sensitive
	"widget-token-git", "widget-token-live", // custom kind field the app marks sensitive
	"last-applied-value-live", // inside a last-applied annotation
}

const manifests = `
apiVersion: v1
kind: Secret
metadata: {name: db, namespace: web}
data: {password: aHVudGVyMi1naXQ=}
stringData: {token: tok-stringdata-git}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: settings, namespace: web}
data: {password: cm-password-git, color: blue}
---
apiVersion: example.com/v1
kind: Widget
metadata: {name: w, namespace: web}
spec: {token: widget-token-git, size: 3}
`

var liveValues = strings.NewReplacer("-git", "-live", "aHVudGVyMi1naXQ=", "aHVudGVyMi1saXZl")

var sensitiveApp = config.App{
	Name: "web", Namespace: "web",
	AppSpec: config.AppSpec{
		Sensitive: []config.SensitiveRule{
			{Kinds: []string{"ConfigMap"}, Paths: []string{".data.password"}},
			{Kinds: []string{"example.com/Widget"}, Paths: []string{".spec.token"}},
		},
	},
}

// TestNoValueInAnyOutput feeds the same Secret (data and stringData), a
// ConfigMap key and a custom kind's field the app marks sensitive, and an
// error echoing them, through every output path and checks no value
// appears in any.
func TestNoValueInAnyOutput(t *testing.T) {
	spec, err := reconcile.Compile(sensitiveApp)
	if err != nil {
		t.Fatal(err)
	}
	rules := spec.Sensitive
	plan := planOf(t, sensitiveApp, manifests)
	live := liveObjects(t, plan)
	report := drift.Detect(plan, live, drift.Options{Sensitive: rules})
	if len(report.Findings) == 0 {
		t.Fatal("no drift findings: the test would check nothing")
	}
	prev := previewOf(t, plan, live, rules)
	errWithValues := invalidError()

	outputs := map[string]func(w io.Writer) error{
		"render yaml":    func(w io.Writer) error { plan.Redact(rules); return plan.WriteYAML(w) },
		"render json":    func(w io.Writer) error { plan.Redact(rules); return plan.WriteJSON(w) },
		"plan text":      prev.WriteText,
		"plan markdown":  prev.WriteMarkdown,
		"plan json":      prev.WriteJSON,
		"drift text":     report.WriteText,
		"drift json":     report.WriteJSON,
		"drift markdown": report.WriteMarkdown,
		"alert payloads": func(w io.Writer) error {
			for _, ev := range alertEvents(report, errWithValues) {
				if err := json.NewEncoder(w).Encode(alert.Redact(ev)); err != nil {
					return err
				}
			}
			return nil
		},
		"event message": func(w io.Writer) error {
			_, err := fmt.Fprint(w, redact.Sprintf("revision %s: %v", "abc123", errWithValues))
			return err
		},
		"/status error": func(w io.Writer) error {
			_, err := fmt.Fprint(w, redact.Error(fmt.Errorf("apply: %w", errWithValues)))
			return err
		},
		"command error": func(w io.Writer) error {
			_, err := fmt.Fprintln(w, "error:", redact.Error(errWithValues))
			return err
		},
		"logs": func(w io.Writer) error {
			log := slog.New(redact.LogHandler(slog.NewJSONHandler(w, nil)))
			log.Error("apply failed", "error", errWithValues, "detail", errWithValues.Error())
			for _, f := range report.Findings {
				log.Warn("drift", "path", f.Path, "desired", f.Desired, "live", f.Live)
			}
			return nil
		},
	}
	for name, write := range outputs {
		t.Run(name, func(t *testing.T) {
			var buf bytes.Buffer
			if err := write(&buf); err != nil {
				t.Fatal(err)
			}
			out := buf.String()
			for _, v := range secretValues {
				if strings.Contains(out, v) {
					t.Errorf("output contains %q:\n%s", v, out)
				}
			}
			if !strings.Contains(out, "redacted") {
				t.Errorf("output does not say a value was redacted:\n%s", out)
			}
		})
	}
}

func planOf(t *testing.T, app config.App, docs string) *planner.Plan {
	t.Helper()
	spec, err := reconcile.Compile(app)
	if err != nil {
		t.Fatal(err)
	}
	p, err := planner.New(spec.Planner, planner.Options{Revision: "test"})
	if err != nil {
		t.Fatal(err)
	}
	var ms []planner.Manifest
	for i, d := range strings.Split(docs, "\n---\n") {
		var m map[string]any
		if err := yaml.Unmarshal([]byte(d), &m); err != nil {
			t.Fatal(err)
		}
		ms = append(ms, planner.Manifest{File: "app.yaml", Index: i + 1, Object: &unstructured.Unstructured{Object: m}})
	}
	plan, err := p.Plan(context.Background(), ms)
	if err != nil {
		t.Fatal(err)
	}
	return plan
}

// liveObjects returns each planned object as the cluster holds it: Git's
// fields owned by syncd's manager, with other values, and a last-applied
// annotation copying them.
func liveObjects(t *testing.T, plan *planner.Plan) map[planner.ObjectRef]*unstructured.Unstructured {
	t.Helper()
	out := map[planner.ObjectRef]*unstructured.Unstructured{}
	for _, o := range plan.Objects {
		js, err := json.Marshal(o.Desired.Object)
		if err != nil {
			t.Fatal(err)
		}
		u := &unstructured.Unstructured{}
		if err := u.UnmarshalJSON([]byte(liveValues.Replace(string(js)))); err != nil {
			t.Fatal(err)
		}
		u.SetAnnotations(map[string]string{redact.LastApplied: `{"data":{"password":"last-applied-value-live"}}`})
		var entries []metav1.ManagedFieldsEntry
		for _, s := range o.Slices {
			fields, err := s.Fields.ToJSON()
			if err != nil {
				t.Fatal(err)
			}
			entries = append(entries, metav1.ManagedFieldsEntry{Manager: string(s.Manager), Operation: metav1.ManagedFieldsOperationApply,
				APIVersion: u.GetAPIVersion(), FieldsType: "FieldsV1", FieldsV1: &metav1.FieldsV1{Raw: fields}})
		}
		u.SetManagedFields(entries)
		out[o.Ref] = u
	}
	return out
}

// previewOf is syncd plan's report: every object's dry run returns Git's
// values over the live object.
func previewOf(t *testing.T, plan *planner.Plan, live map[planner.ObjectRef]*unstructured.Unstructured, rules *redact.Rules) *preview.Report {
	t.Helper()
	var ps []applier.ObjectPreview
	for i := range plan.Objects {
		o := &plan.Objects[i]
		after := live[o.Ref].DeepCopy()
		for k, v := range o.Desired.Object {
			if k != "metadata" {
				after.Object[k] = runtime.DeepCopyJSONValue(v)
			}
		}
		ps = append(ps, applier.ObjectPreview{Object: o, Live: live[o.Ref], After: after})
	}
	r, err := preview.Build(plan.App, plan.Revision, ps, preview.Options{Sensitive: rules})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// invalidError is the API server's Invalid error for the Secret, echoing
// values the way its validation does.
func invalidError() error {
	return apierrors.NewInvalid(schema.GroupKind{Kind: "Secret"}, "db", field.ErrorList{
		field.Invalid(field.NewPath("data").Key("password"), "aHVudGVyMi1naXQ=", "a valid value is required"),
		field.Invalid(field.NewPath("stringData"), map[string]string{"token": "tok-stringdata-git"}, "bad"),
		field.NotSupported(field.NewPath("data", "mode"), "cm-password-git", []string{"a", "b"}),
		field.Invalid(field.NewPath("spec", "token"), struct{ Token string }{"widget-token-git"}, "must be short"),
	})
}

// alertEvents are the daemon's alerts for the report's findings (as
// reconcile builds them) and for the error.
func alertEvents(r *drift.Report, err error) []alert.Event {
	var out []alert.Event
	for _, f := range r.Findings {
		out = append(out, alert.Event{Type: alert.EventDrift, App: f.App,
			Object:  alert.ObjectRef{APIVersion: f.Object.APIVersion, Kind: f.Object.Kind, Namespace: f.Object.Namespace, Name: f.Object.Name},
			Summary: fmt.Sprintf("%s drifted", f.Path),
			Fields: []alert.Field{{Path: f.Path, FieldPath: f.FieldPath, Class: string(f.Class),
				Desired: fmt.Sprint(f.Desired), Live: fmt.Sprint(f.Live), Sensitive: f.Redacted}}})
	}
	return append(out, alert.Event{Type: alert.EventError, App: "web", Summary: redact.Error(err)})
}

// embeddedPassword is a SOPS-encrypted Secret's password that a kustomize
// replacement embeds in a ConfigMap's URL.
const embeddedPassword = "Pw-embedded-9xQ2vL7k"

// embeddedApp is a kustomization whose ConfigMap's URL takes the
// encrypted Secret's password between two dashes (a replacement with a
// delimiter), and the keys that decrypt it.
func embeddedApp(t *testing.T) (planner.Tree, *decrypt.Keys) {
	t.Helper()
	id := sopstest.NewIdentity(t)
	keys, err := decrypt.ParseKeys(id.KeysFile)
	if err != nil {
		t.Fatal(err)
	}
	secret := "apiVersion: v1\nkind: Secret\nmetadata: {name: db, namespace: web}\nstringData:\n  password: " + embeddedPassword + "\n"
	dir := t.TempDir()
	files := map[string][]byte{
		"kustomization.yaml": []byte(`resources: [db.enc.yaml, settings.yaml]
replacements:
  - source: {kind: Secret, name: db, fieldPath: stringData.password}
    targets:
      - select: {kind: ConfigMap, name: settings}
        fieldPaths: [data.url]
        options: {delimiter: '|', index: 1}
`),
		"settings.yaml": []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: settings, namespace: web}\ndata:\n  url: jdbc://db|PASSWORD|eu\n  color: blue\n"),
		"db.enc.yaml":   sopstest.Encrypt(t, []byte(secret), sopstest.Options{Age: []string{id.Recipient}, EncryptedRegex: "^stringData$"}),
	}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return planner.Tree{Root: dir, Dir: dir, Decryption: keys}, keys
}

// TestEmbeddedSecretInAnyOutput renders the embedded app (the password
// lands inside jdbc://db|…|eu, a field no rule hides), and feeds the plan,
// a preview against a stale live ConfigMap, its drift, and an error that
// quotes the URL in a shape error scrubbing does not know, through every
// output path: the password appears in none, the URL around it does.
func TestEmbeddedSecretInAnyOutput(t *testing.T) {
	tree, _ := embeddedApp(t)
	app := config.App{Name: "embedded-web", Namespace: "web"}
	spec, err := reconcile.Compile(app)
	if err != nil {
		t.Fatal(err)
	}
	ms, err := planner.Render(context.Background(), tree)
	if err != nil {
		t.Fatal(err)
	}
	pl, err := planner.New(spec.Planner, planner.Options{Revision: "test"})
	if err != nil {
		t.Fatal(err)
	}
	plan, err := pl.Plan(context.Background(), ms)
	if err != nil {
		t.Fatal(err)
	}
	rules := plan.Sensitive(spec.Sensitive)
	live := liveObjects(t, plan)
	for ref, u := range live {
		if ref.Kind == "ConfigMap" {
			if err := unstructured.SetNestedField(u.Object, "jdbc://db|stale|eu", "data", "url"); err != nil {
				t.Fatal(err)
			}
		}
	}
	report := drift.Detect(plan, live, drift.Options{Sensitive: rules})
	prev := previewOf(t, plan, live, rules)
	errWithURL := fmt.Errorf("ConfigMap web/settings: dial jdbc://db|%s|eu: connection refused", embeddedPassword)

	outputs := map[string]func(w io.Writer) error{
		"render yaml":    func(w io.Writer) error { plan.Redact(spec.Sensitive); return plan.WriteYAML(w) },
		"render json":    func(w io.Writer) error { plan.Redact(spec.Sensitive); return plan.WriteJSON(w) },
		"plan text":      prev.WriteText,
		"plan markdown":  prev.WriteMarkdown,
		"plan json":      prev.WriteJSON,
		"drift text":     report.WriteText,
		"drift json":     report.WriteJSON,
		"drift markdown": report.WriteMarkdown,
		"alert payloads": func(w io.Writer) error {
			for _, ev := range alertEvents(report, errWithURL) {
				ev.Fields = append(ev.Fields, alert.Field{Path: ".data.url", Desired: "jdbc://db|" + embeddedPassword + "|eu"})
				if err := json.NewEncoder(w).Encode(alert.Redact(ev)); err != nil {
					return err
				}
			}
			return nil
		},
		"event message": func(w io.Writer) error {
			_, err := fmt.Fprint(w, redact.Sprintf("revision %s: %v", "abc123", errWithURL))
			return err
		},
		"/status error": func(w io.Writer) error {
			_, err := fmt.Fprint(w, redact.Error(fmt.Errorf("apply: %w", errWithURL)))
			return err
		},
		"command error": func(w io.Writer) error {
			_, err := fmt.Fprintln(w, "error:", redact.Error(errWithURL))
			return err
		},
		"logs": func(w io.Writer) error {
			log := slog.New(redact.LogHandler(slog.NewJSONHandler(w, nil)))
			log.Error("apply failed", "error", errWithURL, "detail", errWithURL.Error())
			for _, f := range report.Findings {
				log.Warn("drift", "path", f.Path, "desired", f.Desired, "live", f.Live)
			}
			return nil
		},
	}
	for name, write := range outputs {
		t.Run(name, func(t *testing.T) {
			var buf bytes.Buffer
			if err := write(&buf); err != nil {
				t.Fatal(err)
			}
			out := buf.String()
			for _, frag := range []string{embeddedPassword, embeddedPassword[:MinFragmentForTest], embeddedPassword[len(embeddedPassword)-MinFragmentForTest:]} {
				if strings.Contains(out, frag) {
					t.Errorf("output contains %q:\n%s", frag, out)
				}
			}
			if !strings.Contains(out, "jdbc://db") || !strings.Contains(out, "redacted") {
				t.Errorf("output does not show the URL with the password masked:\n%s", out)
			}
		})
	}
}

// MinFragmentForTest is the length of the password's ends checked apart
// (redact.MinFragment).
const MinFragmentForTest = 8
