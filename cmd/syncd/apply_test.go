package main

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sort"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	"syncd.dev/syncd/internal/ownership"
	"syncd.dev/syncd/internal/testenv"
)

func configMapYAML(ns string, data map[string]string) string {
	keys := make([]string, 0, len(data))
	for k := range data {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	fmt.Fprintf(&b, "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: seed\n  namespace: %s\ndata:\n", ns)
	for _, k := range keys {
		fmt.Fprintf(&b, "  %s: %q\n", k, data[k])
	}
	return b.String()
}

// leafOwners returns, per manager, the leaf fields it owns on the object.
func leafOwners(t *testing.T, managed []metav1.ManagedFieldsEntry) map[string][]string {
	t.Helper()
	own := ownership.DecodeEntries(managed)
	if len(own.Invalid) > 0 {
		t.Fatalf("decode managedFields: %v", own.Invalid)
	}
	out := map[string][]string{}
	for _, e := range own.Entries {
		e.Set.Leaves().Iterate(func(p fieldpath.Path) {
			out[e.Manager] = append(out[e.Manager], p.String())
		})
		sort.Strings(out[e.Manager])
	}
	return out
}

func getConfigMap(t *testing.T, ns string) *corev1.ConfigMap {
	t.Helper()
	cm, err := env.Clientset(t).CoreV1().ConfigMaps(ns).Get(context.Background(), "seed", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("get ConfigMap %s/seed: %v", ns, err)
	}
	return cm
}

// TestApplySeeds reproduces the SSA seed experiment through syncd apply's
// code path on the real API server: conflicts name the other manager and
// the field and change nothing; a manager's own keys coexist; omission
// removes only the manager's own key; equal values become shared.
func TestApplySeeds(t *testing.T) {
	ns := env.Namespace(t)
	apply := func(manager string, data map[string]string) result {
		t.Helper()
		dir := writeFiles(t, map[string]string{"cm.yaml": configMapYAML(ns, data)})
		return syncd(t, "apply", "--path", dir, "--manager", manager)
	}

	// A creates the ConfigMap with two keys.
	r := apply("team-a", map[string]string{"color": "blue", "size": "small"})
	if r.code != exitOK || !strings.Contains(r.stdout, "ConfigMap "+ns+"/seed created") {
		t.Fatalf("A's first apply: code %d\n%s%s", r.code, r.stdout, r.stderr)
	}

	// B changing one of A's keys is a conflict naming A and the field, and
	// changes nothing (syncd never forces).
	r = apply("team-b", map[string]string{"color": "green"})
	if r.code != exitConflict {
		t.Fatalf("B changing A's key: code %d, want %d\n%s%s", r.code, exitConflict, r.stdout, r.stderr)
	}
	if !strings.Contains(r.stdout, `.data.color is owned by "team-a"`) {
		t.Errorf("conflict output does not name the field and team-a:\n%s", r.stdout)
	}
	if got := getConfigMap(t, ns).Data["color"]; got != "blue" {
		t.Fatalf("after a refused conflicting apply, .data.color = %q, want blue (was it forced?)", got)
	}

	// B adding its own key succeeds.
	r = apply("team-b", map[string]string{"owner": "b"})
	if r.code != exitOK || !strings.Contains(r.stdout, "configured") {
		t.Fatalf("B adding its own key: code %d\n%s%s", r.code, r.stdout, r.stderr)
	}

	// A re-applying without "size" removes only that key; B's stays.
	r = apply("team-a", map[string]string{"color": "blue"})
	if r.code != exitOK {
		t.Fatalf("A dropping size: code %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	cm := getConfigMap(t, ns)
	if diff := cmp.Diff(map[string]string{"color": "blue", "owner": "b"}, cm.Data); diff != "" {
		t.Errorf("data after A dropped size (-want +got):\n%s", diff)
	}

	// B applying A's key with the equal value makes ownership shared.
	r = apply("team-b", map[string]string{"owner": "b", "color": "blue"})
	if r.code != exitOK {
		t.Fatalf("B sharing color: code %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	want := map[string][]string{
		"team-a": {".data.color"},
		"team-b": {".data.color", ".data.owner"},
	}
	if diff := cmp.Diff(want, leafOwners(t, getConfigMap(t, ns).ManagedFields)); diff != "" {
		t.Errorf("ownership after equal-value apply (-want +got):\n%s", diff)
	}

	// Re-applying the same content is reported as unchanged.
	r = apply("team-b", map[string]string{"owner": "b", "color": "blue"})
	if r.code != exitOK || !strings.Contains(r.stdout, "ConfigMap "+ns+"/seed unchanged") {
		t.Errorf("identical re-apply: code %d, want 'unchanged'\n%s%s", r.code, r.stdout, r.stderr)
	}
}

// TestApplyDryRun shows what would happen without persisting anything.
func TestApplyDryRun(t *testing.T) {
	ns := env.Namespace(t)
	dir := writeFiles(t, map[string]string{"cm.yaml": configMapYAML(ns, map[string]string{"k": "v"})})
	r := syncd(t, "apply", "--path", dir, "--manager", "dry", "--dry-run")
	if r.code != exitOK || !strings.Contains(r.stdout, "created (dry run)") {
		t.Fatalf("dry run: code %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	_, err := env.Clientset(t).CoreV1().ConfigMaps(ns).Get(context.Background(), "seed", metav1.GetOptions{})
	if !apierrors.IsNotFound(err) {
		t.Fatalf("dry run persisted the object (get error %v)", err)
	}
}

// TestApplyDryRunNewNamespace: a dry run of an app that brings its own
// Namespace cannot have the API server check the objects in it (the
// namespace is not created): they are reported created, not checked, and
// why, instead of failing with the namespace's NotFound. An object in a
// namespace that nobody creates still fails.
func TestApplyDryRunNewNamespace(t *testing.T) {
	const ns = "dry-run-new-namespace"
	nsYAML := "apiVersion: v1\nkind: Namespace\nmetadata: {name: " + ns + "}\n"
	dir := writeFiles(t, map[string]string{"ns.yaml": nsYAML, "cm.yaml": configMapYAML(ns, map[string]string{"k": "v"})})
	r := syncd(t, "apply", "--path", dir, "--manager", "dry", "--dry-run")
	if r.code != exitOK {
		t.Fatalf("dry run of a new namespace and an object in it: code %d, want %d\n%s%s", r.code, exitOK, r.stdout, r.stderr)
	}
	for _, want := range []string{"Namespace " + ns + " created (dry run)", "ConfigMap " + ns + "/seed created (dry run)", "not checked: its namespace " + ns + " is created by this apply"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("dry run: stdout lacks %q\n%s", want, r.stdout)
		}
	}
	if _, err := env.Clientset(t).CoreV1().Namespaces().Get(context.Background(), ns, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("dry run persisted the namespace (get error %v)", err)
	}

	alone := writeFiles(t, map[string]string{"cm.yaml": configMapYAML(ns, map[string]string{"k": "v"})})
	r = syncd(t, "apply", "--path", alone, "--manager", "dry", "--dry-run")
	if r.code != exitError || strings.Contains(r.stdout, "not checked") {
		t.Errorf("dry run of an object in a namespace nobody creates: code %d, want %d and no 'not checked'\n%s%s", r.code, exitError, r.stdout, r.stderr)
	}
}

// TestApplyBadDocuments: any bad document stops the whole directory, with
// the file, the document index and the reason, and nothing is applied.
func TestApplyBadDocuments(t *testing.T) {
	tests := map[string]struct {
		bad  string
		want []string
	}{
		"invalid YAML": {
			bad:  "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: [unclosed\n",
			want: []string{"b-bad.yaml: document 2", "invalid YAML"},
		},
		"missing kind": {
			bad:  "apiVersion: v1\nmetadata:\n  name: nokind\n",
			want: []string{"b-bad.yaml: document 2", "kind is missing"},
		},
		"unknown kind": {
			bad:  "apiVersion: example.com/v1\nkind: Widget\nmetadata:\n  name: w\n",
			want: []string{"b-bad.yaml: document 2", "Widget"},
		},
		"managedFields in Git": {
			bad:  "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: mf\n  managedFields:\n  - manager: someone\n",
			want: []string{"b-bad.yaml: document 2", "managedFields"},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			ns := env.Namespace(t)
			good := configMapYAML(ns, map[string]string{"k": "v"})
			dir := writeFiles(t, map[string]string{
				"a-good.yaml": good,
				// The bad document is the second of its file.
				"b-bad.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: fine\n  namespace: " + ns + "\n---\n" + tc.bad,
			})
			r := syncd(t, "apply", "--path", dir, "--manager", "bad-docs", "--namespace", ns)
			if r.code != exitError {
				t.Fatalf("code %d, want %d\n%s%s", r.code, exitError, r.stdout, r.stderr)
			}
			for _, w := range tc.want {
				if !strings.Contains(r.stderr, w) {
					t.Errorf("error output lacks %q:\n%s", w, r.stderr)
				}
			}
			for _, name := range []string{"seed", "fine"} {
				if _, err := env.Clientset(t).CoreV1().ConfigMaps(ns).Get(context.Background(), name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
					t.Errorf("ConfigMap %s was applied from a directory with a bad document (get error %v)", name, err)
				}
			}
		})
	}
}

// TestApplyManagedFieldsSendsNothing: a payload carrying
// metadata.managedFields is refused before any request reaches a server.
func TestApplyManagedFieldsSendsNothing(t *testing.T) {
	var requests atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		http.Error(w, "no", http.StatusInternalServerError)
	}))
	defer srv.Close()
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	if err := testenv.WriteKubeconfig(&rest.Config{Host: srv.URL, BearerToken: "x"}, kubeconfig); err != nil {
		t.Fatal(err)
	}
	dir := writeFiles(t, map[string]string{"cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: mf\n  managedFields:\n  - manager: someone\n    operation: Apply\n"})
	var out, errOut bytes.Buffer
	code := run(context.Background(), []string{"apply", "--path", dir, "--manager", "m", "--kubeconfig", kubeconfig}, &out, &errOut)
	if code != exitError {
		t.Fatalf("code %d, want %d\n%s%s", code, exitError, out.String(), errOut.String())
	}
	if !strings.Contains(errOut.String(), "cm.yaml: document 1") || !strings.Contains(errOut.String(), "managedFields") {
		t.Errorf("error does not name the file, document and field:\n%s", errOut.String())
	}
	if n := requests.Load(); n != 0 {
		t.Errorf("%d requests reached the server, want 0", n)
	}
}
