package ui

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/metadata"

	"syncd.dev/syncd/internal/api/v1alpha1"
	"syncd.dev/syncd/internal/inventory"
	"syncd.dev/syncd/internal/planner"
	"syncd.dev/syncd/internal/reconcile/reconciletest"
	"syncd.dev/syncd/internal/redact"
)

// TestObjectPageSensitive checks that the Object page hides what the
// app's sensitive rules hide and every value the process knows to be
// secret, not only a Secret's data: a ConfigMap key declared sensitive
// in syncd.yaml or in an App's spec, and a decrypted value that ended up
// in another key.
func TestObjectPageSensitive(t *testing.T) {
	const (
		password  = "cm-password-never-shown"
		decrypted = "sops-decrypted-never-shown"
	)
	ns := env.Namespace(t)
	cl := reconciletest.Cluster(t, env.Config)
	cm := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": "settings", "namespace": ns},
		"data":     map[string]any{"color": "blue", "password": password, "dsn": "db://user:" + decrypted + "@db"},
	}}
	gvr := schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	if _, err := cl.Dynamic.Resource(gvr).Namespace(ns).Create(context.Background(), cm, metav1.CreateOptions{FieldManager: "syncd-web"}); err != nil {
		t.Fatal(err)
	}
	md, err := metadata.NewForConfig(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	invNS := env.Namespace(t)
	inv, err := inventory.New(cl.Dynamic, md, cl.Mapper, inventory.Options{Namespace: invNS, NoWatch: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(inv.Stop)
	sens, err := redact.ParseSensitive([]string{"ConfigMap"}, []string{".data.password"})
	if err != nil {
		t.Fatal(err)
	}
	rules := redact.New(redact.Options{Sensitive: []redact.Sensitive{sens}})
	redact.Remember(t.Name(), redact.NewSecrets([]string{decrypted}))
	t.Cleanup(func() { redact.Remember(t.Name(), nil) })

	app := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": v1alpha1.GroupVersion.String(), "kind": v1alpha1.KindApp,
		"metadata": map[string]any{"name": "web", "namespace": ns},
		"spec": map[string]any{
			"sourceRef": map[string]any{"kind": "GitSource", "name": "repo"},
			"sensitive": []any{map[string]any{"kinds": []any{"ConfigMap"}, "paths": []any{".data.password"}}},
		},
	}}
	out, err := exec.Command(filepath.Join(env.BinDir, "kubectl"), "--kubeconfig", env.Kubeconfig, "apply", "--server-side", "-k", "../../manifests/crds").CombinedOutput()
	if err != nil {
		t.Fatalf("kubectl apply -k manifests/crds: %v\n%s", err, out)
	}
	reconciletest.Eventually(t, "the App CRD served", func() (bool, string) {
		_, err := cl.Dynamic.Resource(v1alpha1.AppResource).Namespace(ns).Create(context.Background(), app, metav1.CreateOptions{})
		return err == nil, fmt.Sprint(err)
	})

	ref := planner.ObjectRef{Version: "v1", Kind: "ConfigMap", Namespace: ns, Name: "settings"}
	tests := map[string]struct {
		app       AppRef
		sensitive func(AppRef) *redact.Rules
		hidden    []string
	}{
		"App object": {app: AppRef{Namespace: ns, Name: "web"}, hidden: []string{password, decrypted}},
		"app rules": {
			app: AppRef{Name: "web"},
			sensitive: func(app AppRef) *redact.Rules {
				if app.Name == "web" {
					return rules
				}
				return nil
			},
			hidden: []string{password, decrypted},
		},
		"no app rules": {app: AppRef{Name: "web"}, hidden: []string{decrypted}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			s, err := New(Options{Dynamic: cl.Dynamic, Mapper: cl.Mapper, Inventory: inv, InventoryNamespace: invNS, Sensitive: tc.sensitive})
			if err != nil {
				t.Fatal(err)
			}
			srv := httptest.NewServer(s.Handler())
			t.Cleanup(srv.Close)
			path := "/object?" + objectQuery(tc.app, ref)
			code, body, _ := httpGet(t, srv.Client(), srv.URL+path)
			if code != http.StatusOK {
				t.Fatalf("GET %s: %d\n%s", path, code, body)
			}
			for _, v := range tc.hidden {
				if strings.Contains(body, v) {
					t.Errorf("the Object page shows %q", v)
				}
			}
			lines := ownerMapLines(t, body)
			if l := lines[".data.color"]; !strings.Contains(l.Text, "blue") {
				t.Errorf("the color line reads %q, want the value shown", l.Text)
			}
			if l := lines[".data.dsn"]; !strings.Contains(l.Text, "db://user:"+redact.Marker+"@db") {
				t.Errorf("the dsn line reads %q, want the decrypted value masked inside it", l.Text)
			}
			if len(tc.hidden) > 1 {
				if l := lines[".data.password"]; !strings.Contains(l.Text, redact.Marker) {
					t.Errorf("the password line reads %q, want %s", l.Text, redact.Marker)
				}
			}
		})
	}
}
