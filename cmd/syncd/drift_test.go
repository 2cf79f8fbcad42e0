package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
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

// TestDriftSeed: after another manager merge-patches .data.color, `syncd
// drift -o json` reports exactly that field, taken over by the operator
// (Update), with desired and live values, and nothing about another
// manager's own key.
func TestDriftSeed(t *testing.T) {
	ns := env.Namespace(t)
	cfg := writeConfig(t, fmt.Sprintf("- name: web\n  source: repo\n  namespace: %s\n", ns))
	dir := writeFiles(t, map[string]string{"cm.yaml": configMapYAML(ns, map[string]string{"color": "blue"})})
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
	r := syncd(t, "drift", "--config", cfg, "--path", dir, "-o", "json")
	if r.code != exitChanges {
		t.Fatalf("drift: code %d, want %d\n%s%s", r.code, exitChanges, r.stdout, r.stderr)
	}
	var report struct {
		Findings []struct {
			App           string            `json:"app"`
			Object        map[string]string `json:"object"`
			Path          string            `json:"path"`
			Class         string            `json:"class"`
			Desired, Live any
			Owners        []struct {
				Manager, Operation string
			} `json:"owners"`
		} `json:"findings"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &report); err != nil {
		t.Fatalf("drift -o json is not JSON: %v\n%s", err, r.stdout)
	}
	if len(report.Findings) != 1 {
		t.Fatalf("want exactly one finding, got %d:\n%s", len(report.Findings), r.stdout)
	}
	f := report.Findings[0]
	got := []any{f.App, f.Object["kind"], f.Object["name"], f.Path, f.Class, f.Desired, f.Live, len(f.Owners)}
	want := []any{"web", "ConfigMap", "seed", ".data.color", "taken-over", "blue", "green", 1}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("finding (-want +got):\n%s\n%s", diff, r.stdout)
	}
	if f.Owners[0].Manager != "operator" || f.Owners[0].Operation != "Update" {
		t.Errorf("owner = %+v, want operator/Update", f.Owners[0])
	}
}
