package daemon_test

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"syncd.dev/syncd/internal/daemon"
	"syncd.dev/syncd/internal/reconcile"
	"syncd.dev/syncd/internal/reconcile/reconciletest"
)

// TestDaemonSubstituteDefaultsStrictDisabled: in `syncd run`, an inline
// variable and a default (${SIZE:=medium}) are substituted, an object
// annotated syncd.dev/substitute: disabled keeps ${COLOR} as written, and
// a commit using a variable set nowhere without a default fails the app
// (strict, the default) naming the variable, and applies nothing of it.
func TestDaemonSubstituteDefaultsStrictDisabled(t *testing.T) {
	ns := env.Namespace(t)
	repo := reconciletest.NewRepo(t)
	cm := func(name, ann, data string) string {
		return fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: %s\n  namespace: %s%s\ndata:\n%s", name, ns, ann, data)
	}
	repo.Commit("first", map[string]string{
		"app/settings.yaml": cm("settings", "", "  color: ${COLOR}\n  size: ${SIZE:=medium}\n"),
		"app/raw.yaml":      cm("raw", "\n  annotations: {syncd.dev/substitute: disabled}", "  color: ${COLOR}\n"),
	})
	cfgPath := filepath.Join(t.TempDir(), "syncd.yaml")
	writeConfig(t, cfgPath, repo.Dir, ns, "1s")
	appendFile(t, cfgPath, "  substitute:\n    COLOR: blue\n")
	d := launchDaemon(t, daemon.Options{ConfigPath: cfgPath, Cluster: cluster(t), Options: reconcile.Options{CacheDir: t.TempDir()}})
	reconciletest.Eventually(t, "first revision applied", func() (bool, string) { return converged(appStatus(d, "web"), repo.Head()) })

	ctx := context.Background()
	cms := env.Clientset(t).CoreV1().ConfigMaps(ns)
	data := func(name string) map[string]string {
		got, err := cms.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatalf("get %s: %v", name, err)
		}
		return got.Data
	}
	if got, want := data("settings"), map[string]string{"color": "blue", "size": "medium"}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("settings = %v, want %v", got, want)
	}
	if got := data("raw")["color"]; got != "${COLOR}" {
		t.Errorf("raw (substitution disabled) color = %q, want ${COLOR}", got)
	}

	repo.Commit("unset variable", map[string]string{
		"app/settings.yaml": cm("settings", "", "  color: ${COLOR}\n  size: large\n"),
		"app/extra.yaml":    cm("extra", "", "  region: ${REGION}\n"),
	})
	if err := d.Trigger("repo"); err != nil {
		t.Fatal(err)
	}
	reconciletest.Eventually(t, "the strict refusal", func() (bool, string) {
		st := appStatus(d, "web")
		return st.Result == reconcile.ResultFailed && strings.Contains(st.Error, "REGION") && strings.Contains(st.Error, "extra"), fmt.Sprintf("%+v", st)
	})
	if got := data("settings")["size"]; got != "medium" {
		t.Errorf("a refused revision changed settings: size = %q, want medium (nothing applied)", got)
	}
	if _, err := cms.Get(ctx, "extra", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("a refused revision created extra (get: %v)", err)
	}
}
