package main

import (
	"bytes"
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
)

// TestVersion: the version line carries the client-go version read from the
// build, not a placeholder.
func TestVersion(t *testing.T) {
	var out, errOut bytes.Buffer
	if code := run(context.Background(), []string{"version"}, &out, &errOut); code != exitOK {
		t.Fatalf("code %d\n%s%s", code, out.String(), errOut.String())
	}
	for _, want := range []string{"syncd ", "commit ", "client-go v0.37.2", "go1.26"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("version output lacks %q: %q", want, out.String())
		}
	}
}

// TestVersionJSON: version -o json has the same facts under stable keys;
// another format is refused, exit 1.
func TestVersionJSON(t *testing.T) {
	var out, errOut bytes.Buffer
	if code := run(context.Background(), []string{"version", "-o", "json"}, &out, &errOut); code != exitOK {
		t.Fatalf("code %d\n%s%s", code, out.String(), errOut.String())
	}
	var got versionInfo
	if err := json.Unmarshal(out.Bytes(), &got); err != nil {
		t.Fatalf("version -o json: %v\n%s", err, out.String())
	}
	if got.ClientGo != "v0.37.2" || !strings.HasPrefix(got.GoVersion, "go1.26") || got.Version == "" || got.Platform == "" {
		t.Errorf("version -o json = %+v", got)
	}
	out.Reset()
	errOut.Reset()
	if code := run(context.Background(), []string{"version", "-o", "yaml"}, &out, &errOut); code != exitError || !strings.Contains(errOut.String(), `-o "yaml": use json`) {
		t.Errorf("version -o yaml: code %d\n%s%s", code, out.String(), errOut.String())
	}
}

// TestUnknownResource: a command grouping resources (get, suspend,
// resume, reconcile) given none or one it does not know exits 1 and says
// which it accepts, instead of printing its help with exit 0; diff is
// plan's other name.
func TestUnknownResource(t *testing.T) {
	tests := map[string]struct {
		args []string
		want string
	}{
		"get kustomizations":        {[]string{"get", "kustomizations"}, `error: syncd get: unknown resource "kustomizations": use apps (app) or gitsources (gitsource) or helmsources (helmsource) or ocisources (ocisource)`},
		"get alone":                 {[]string{"get"}, "error: syncd get needs a resource: apps (app) or gitsources (gitsource) or helmsources (helmsource) or ocisources (ocisource)"},
		"suspend kustomization foo": {[]string{"suspend", "kustomization", "foo"}, `error: syncd suspend: unknown resource "kustomization": use app`},
		"resume helmrelease x":      {[]string{"resume", "helmrelease", "x"}, `error: syncd resume: unknown resource "helmrelease": use app`},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			var out, errOut bytes.Buffer
			code := run(context.Background(), tc.args, &out, &errOut)
			if code != exitError || !strings.Contains(errOut.String(), tc.want) || out.Len() != 0 {
				t.Errorf("code %d, want %d with %q\n--- stdout\n%s--- stderr\n%s", code, exitError, tc.want, out.String(), errOut.String())
			}
		})
	}
	var out, errOut bytes.Buffer
	if code := run(context.Background(), []string{"diff", "--help"}, &out, &errOut); code != exitOK || !strings.Contains(out.String(), "plan renders the app") {
		t.Errorf("diff --help: code %d\n%s%s", code, out.String(), errOut.String())
	}
}

// TestApplyContextAndNamespace: --context picks a kubeconfig context other
// than the current one, and --namespace places an object that names none.
func TestApplyContextAndNamespace(t *testing.T) {
	ns := env.Namespace(t)
	cfg, err := clientcmd.LoadFromFile(env.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	real := cfg.CurrentContext
	// The current context points at a port nothing listens on, so only
	// --context reaches the API server.
	broken := cfg.Contexts[real].DeepCopy()
	broken.Cluster = "nowhere"
	cluster := cfg.Clusters[cfg.Contexts[real].Cluster].DeepCopy()
	cluster.Server = "https://127.0.0.1:1"
	cfg.Clusters["nowhere"] = cluster
	cfg.Contexts["broken"] = broken
	cfg.CurrentContext = "broken"
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, kubeconfig); err != nil {
		t.Fatal(err)
	}
	dir := writeFiles(t, map[string]string{"cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: nons\ndata:\n  k: v\n"})

	apply := func(extra ...string) (int, string) {
		var out, errOut bytes.Buffer
		args := append([]string{"apply", "--path", dir, "--manager", "ctx-test", "--namespace", ns, "--kubeconfig", kubeconfig}, extra...)
		code := run(context.Background(), args, &out, &errOut)
		return code, out.String() + errOut.String()
	}
	if code, out := apply(); code != exitError || !strings.Contains(out, "could not connect to the API server at 127.0.0.1:1") {
		t.Fatalf("apply through the broken current context: code %d, want %d and a hint naming the address\n%s", code, exitError, out)
	}
	code, out := apply("--context", real)
	if code != exitOK || !strings.Contains(out, "ConfigMap "+ns+"/nons created") {
		t.Fatalf("apply with --context %s: code %d\n%s", real, code, out)
	}
	cm, err := env.Clientset(t).CoreV1().ConfigMaps(ns).Get(context.Background(), "nons", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the object did not land in --namespace %s: %v", ns, err)
	}
	if cm.Data["k"] != "v" {
		t.Errorf("ConfigMap %s/nons data = %v, want k=v", ns, cm.Data)
	}
}

// TestApplyWaitUnhealthy: with wait: true, an object that is not Current
// when the timeout ends is printed with its kstatus and message, and the
// run exits 1 (the test control plane has no scheduler or kubelet, so a
// Deployment's pod never runs).
func TestApplyWaitUnhealthy(t *testing.T) {
	ns := env.Namespace(t)
	cfg := planConfig(t, ns, "  wait: true\n  timeout: 2s\n")
	dir := writeFiles(t, map[string]string{"web.yaml": deployYAML("  replicas: 1\n")})
	r := syncd(t, "apply", "--config", cfg, "--app", "web", "--path", dir)
	if r.code != exitError {
		t.Fatalf("code %d, want %d\n%s%s", r.code, exitError, r.stdout, r.stderr)
	}
	for _, want := range []string{"apps/Deployment " + ns + "/web created", "  health: InProgress: ", "not healthy when the wait ended"} {
		if !strings.Contains(r.stdout+r.stderr, want) {
			t.Errorf("output lacks %q:\n%s%s", want, r.stdout, r.stderr)
		}
	}
}
