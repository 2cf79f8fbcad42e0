package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/clientcmd"
)

// writeConfig writes a syncd.yaml with one (unused with --path) source and
// the given apps section.
func writeConfig(t *testing.T, apps string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "syncd.yaml")
	cfg := "apiVersion: syncd/v1alpha1\nkind: Config\nsources:\n- name: repo\n  git:\n    url: file:///nonexistent/repo\n    branch: main\n    interval: 1m\napps:\n" + apps
	if err := os.WriteFile(path, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// seedDrift applies a ConfigMap with .data.color blue as app web (the
// other team applies its own .data.owner), checks drift reports nothing,
// then has "operator" merge-patch .data.color to green. It returns the
// config, the app's directory (for --path) and the namespace.
func seedDrift(t *testing.T) (cfg, dir, ns string) {
	t.Helper()
	ns = env.Namespace(t)
	cfg = writeConfig(t, fmt.Sprintf("- name: web\n  source: repo\n  namespace: %s\n", ns))
	dir = writeFiles(t, map[string]string{"cm.yaml": configMapYAML(ns, map[string]string{"color": "blue"})})
	if r := syncd(t, "apply", "--config", cfg, "--path", dir); r.code != exitOK {
		t.Fatalf("apply: code %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	other := writeFiles(t, map[string]string{"cm.yaml": configMapYAML(ns, map[string]string{"owner": "b"})})
	if r := syncd(t, "apply", "--path", other, "--manager", "other-team"); r.code != exitOK {
		t.Fatalf("other team's apply: code %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if r := syncd(t, "drift", "--config", cfg, "--path", dir); r.code != exitOK {
		t.Fatalf("drift before any change: code %d, want 0\n%s%s", r.code, r.stdout, r.stderr)
	}
	_, err := env.Clientset(t).CoreV1().ConfigMaps(ns).Patch(context.Background(), "seed", types.MergePatchType,
		[]byte(`{"data":{"color":"green"}}`), metav1.PatchOptions{FieldManager: "operator"})
	if err != nil {
		t.Fatal(err)
	}
	return cfg, dir, ns
}

// driftReport is the JSON shape of `syncd drift -o json`, decoded
// strictly enough that a renamed key shows up as a zero value.
type driftReport struct {
	Findings []driftFinding `json:"findings"`
}

type driftFinding struct {
	App           string            `json:"app"`
	Object        map[string]string `json:"object"`
	Path          string            `json:"path"`
	Class         string            `json:"class"`
	DeclaredBy    string            `json:"declaredBy"`
	Desired, Live any
	Owners        []struct {
		Manager     string     `json:"manager"`
		Operation   string     `json:"operation"`
		Subresource *string    `json:"subresource"`
		Time        *time.Time `json:"time"`
	} `json:"owners"`
}

// driftJSON runs syncd drift -o json with args and decodes the report; it
// fails the test unless the exit code is want.
func driftJSON(t *testing.T, want int, args ...string) driftReport {
	t.Helper()
	r := syncd(t, append([]string{"drift", "-o", "json"}, args...)...)
	if r.code != want {
		t.Fatalf("drift %v: code %d, want %d\n%s%s", args, r.code, want, r.stdout, r.stderr)
	}
	var rep driftReport
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
		t.Fatalf("drift -o json is not JSON: %v\n%s", err, r.stdout)
	}
	return rep
}

// TestDriftSeed: after another manager merge-patches .data.color, `syncd
// drift -o json` reports exactly that field, taken over by the operator
// (Update), with desired and live values, and nothing about another
// manager's own key.
func TestDriftSeed(t *testing.T) {
	cfg, dir, _ := seedDrift(t)
	report := driftJSON(t, exitChanges, "--config", cfg, "--path", dir)
	if len(report.Findings) != 1 {
		t.Fatalf("want exactly one finding, got %+v", report.Findings)
	}
	f := report.Findings[0]
	got := []any{f.App, f.Object["kind"], f.Object["name"], f.Path, f.Class, f.Desired, f.Live, len(f.Owners)}
	want := []any{"web", "ConfigMap", "seed", ".data.color", "taken-over", "blue", "green", 1}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("finding (-want +got):\n%s\n%+v", diff, f)
	}
	if f.Owners[0].Manager != "operator" || f.Owners[0].Operation != "Update" {
		t.Errorf("owner = %+v, want operator/Update", f.Owners[0])
	}
}

// TestDriftSeedOutputs: the seed finding in every output format. JSON
// carries the declaring manager, the owner's subresource (present, empty
// for the main resource) and its time; text and Markdown name the path,
// the class (Markdown's column; text says "was changed ... by"), the
// culprit with its operation and time, and Git's and the live value.
func TestDriftSeedOutputs(t *testing.T) {
	start := time.Now().Add(-time.Minute)
	cfg, dir, ns := seedDrift(t)
	rep := driftJSON(t, exitChanges, "--config", cfg, "--path", dir)
	if len(rep.Findings) != 1 || len(rep.Findings[0].Owners) != 1 {
		t.Fatalf("want one finding with one owner, got %+v", rep.Findings)
	}
	f := rep.Findings[0]
	if f.DeclaredBy != "syncd-web" {
		t.Errorf("declaredBy = %q, want the app's default manager syncd-web", f.DeclaredBy)
	}
	o := f.Owners[0]
	if o.Subresource == nil || *o.Subresource != "" {
		t.Errorf("owner subresource = %v, want present and empty (the main resource)", o.Subresource)
	}
	// The API server records managedFields times in whole seconds.
	if o.Time == nil || o.Time.Before(start) || o.Time.After(time.Now().Add(time.Minute)) {
		t.Fatalf("owner time = %v, want the time of the operator's patch", o.Time)
	}
	at := o.Time.UTC().Format("2006-01-02 15:04:05 UTC")

	r := syncd(t, "drift", "--config", cfg, "--path", dir)
	if r.code != exitChanges {
		t.Fatalf("drift -o text: code %d, want %d\n%s%s", r.code, exitChanges, r.stdout, r.stderr)
	}
	wantText := fmt.Sprintf("ConfigMap %s/seed: .data.color was changed from blue to green by operator (Update) at %s; Git says blue\n", ns, at)
	if diff := cmp.Diff(wantText, r.stdout); diff != "" {
		t.Errorf("drift -o text (-want +got):\n%s", diff)
	}

	r = syncd(t, "drift", "--config", cfg, "--path", dir, "-o", "markdown")
	if r.code != exitChanges {
		t.Fatalf("drift -o markdown: code %d, want %d\n%s%s", r.code, exitChanges, r.stdout, r.stderr)
	}
	wantMD := "| Object | Field | Class | Git | Live | Owners |\n|---|---|---|---|---|---|\n" +
		fmt.Sprintf("| `ConfigMap %s/seed` | `.data.color` | taken-over | `blue` | `green` | operator (Update) at %s |\n", ns, at)
	if diff := cmp.Diff(wantMD, r.stdout); diff != "" {
		t.Errorf("drift -o markdown (-want +got):\n%s", diff)
	}
}

// TestDriftApp: two apps of one config, each drifted by a different
// manager; --app reports only the named app's finding, and no --app
// reports both.
func TestDriftApp(t *testing.T) {
	ns := env.Namespace(t)
	repo := servedRepo(t, "apps")
	cm := func(name string) []byte {
		return []byte(fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: %s\ndata:\n  color: blue\n", name))
	}
	if _, err := repo.Commit("two apps", map[string][]byte{"front/cm.yaml": cm("front"), "back/cm.yaml": cm("back")}); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(t.TempDir(), "syncd.yaml")
	text := fmt.Sprintf("apiVersion: syncd/v1alpha1\nkind: Config\nsources:\n- name: repo\n  git:\n    url: %s\n    branch: main\n    interval: 1m\napps:\n", repo.URL)
	for _, app := range []string{"front", "back"} {
		text += fmt.Sprintf("- name: %s\n  source: repo\n  path: %s\n  namespace: %s\n", app, app, ns)
	}
	if err := os.WriteFile(cfg, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	cache := t.TempDir()
	if r := syncd(t, "apply", "--config", cfg, "--cache-dir", cache); r.code != exitOK {
		t.Fatalf("apply: code %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	for name, manager := range map[string]string{"front": "front-operator", "back": "back-operator"} {
		_, err := env.Clientset(t).CoreV1().ConfigMaps(ns).Patch(context.Background(), name, types.MergePatchType,
			[]byte(`{"data":{"color":"green"}}`), metav1.PatchOptions{FieldManager: manager})
		if err != nil {
			t.Fatal(err)
		}
	}
	// app → object name, culprit of each finding reported.
	reported := func(rep driftReport) []string {
		var out []string
		for _, f := range rep.Findings {
			culprit := ""
			if len(f.Owners) > 0 {
				culprit = f.Owners[0].Manager
			}
			out = append(out, f.App+" "+f.Object["name"]+" "+f.Path+" "+culprit)
		}
		return out
	}
	tests := map[string]struct {
		args []string
		want []string
	}{
		"front only": {[]string{"--app", "front"}, []string{"front front .data.color front-operator"}},
		"back only":  {[]string{"--app", "back"}, []string{"back back .data.color back-operator"}},
		"every app": {nil, []string{
			"front front .data.color front-operator",
			"back back .data.color back-operator",
		}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			rep := driftJSON(t, exitChanges, append([]string{"--config", cfg, "--cache-dir", cache}, tc.args...)...)
			got := reported(rep)
			if diff := cmp.Diff(tc.want, got, cmpopts.SortSlices(func(a, b string) bool { return a < b })); diff != "" {
				t.Errorf("findings (-want +got):\n%s", diff)
			}
		})
	}
	r := syncd(t, "drift", "--config", cfg, "--cache-dir", cache, "--app", "middle")
	if r.code != exitError || !strings.Contains(r.stderr, "middle") {
		t.Errorf("drift --app middle (not in the config): code %d, want %d and an error naming the app\n%s%s", r.code, exitError, r.stdout, r.stderr)
	}
}

// TestDriftErrors: usage and cluster errors exit 1 with a message that
// says what is wrong and what to do, and print no report.
func TestDriftErrors(t *testing.T) {
	ns := env.Namespace(t)
	cfg := writeConfig(t, fmt.Sprintf("- name: web\n  source: repo\n  namespace: %s\n", ns))
	dir := writeFiles(t, map[string]string{"cm.yaml": configMapYAML(ns, map[string]string{"color": "blue"})})

	// A kubeconfig whose server is a loopback port nothing listens on.
	kc, err := clientcmd.LoadFromFile(env.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := l.Addr().String()
	l.Close()
	for _, c := range kc.Clusters {
		c.Server = "https://" + closed
	}
	down := filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*kc, down); err != nil {
		t.Fatal(err)
	}

	tests := map[string]struct {
		args []string
		want []string // in stderr
	}{
		"--path, no app":      {[]string{"drift", "--path", dir, "--kubeconfig", env.Kubeconfig}, []string{"--path renders one app: name it with --app"}},
		"-n with --config":    {[]string{"drift", "--config", cfg, "-n", "web", "--kubeconfig", env.Kubeconfig}, []string{"-n and -A choose App objects"}},
		"-A and --app":        {[]string{"drift", "-A", "--app", "web", "--kubeconfig", env.Kubeconfig}, []string{"--app names one App of -n; drop -A"}},
		"-A and -n":           {[]string{"drift", "-A", "-n", "web", "--kubeconfig", env.Kubeconfig}, []string{"-A and -n both given"}},
		"unknown output":      {[]string{"drift", "--config", cfg, "--path", dir, "-o", "yaml", "--kubeconfig", env.Kubeconfig}, []string{`-o "yaml"`, "use text, json or markdown"}},
		"unreachable cluster": {[]string{"drift", "--config", cfg, "--path", dir, "--kubeconfig", down}, []string{closed, "connection refused", "hint: syncd could not connect to the API server at " + closed}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			code, stdout, stderr := runCmd(t, tc.args...)
			t.Logf("stderr: %s", stderr)
			if code != exitError {
				t.Errorf("code %d, want %d\nstdout: %s\nstderr: %s", code, exitError, stdout, stderr)
			}
			if stdout != "" {
				t.Errorf("stdout = %q, want no report on an error", stdout)
			}
			for _, w := range tc.want {
				if !strings.Contains(stderr, w) {
					t.Errorf("stderr lacks %q:\n%s", w, stderr)
				}
			}
		})
	}
}
