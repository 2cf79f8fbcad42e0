package inventory_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/restmapper"

	"syncd.dev/syncd/internal/config"
	"syncd.dev/syncd/internal/inventory"
	"syncd.dev/syncd/internal/reconcile"
)

// blockedCount reads syncd_prune_blocked_total{reason} from reg.
func blockedCount(t *testing.T, reg *prometheus.Registry, reason inventory.Reason) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "syncd_prune_blocked_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "reason" && l.GetValue() == string(reason) {
					return m.GetCounter().GetValue()
				}
			}
		}
	}
	return 0
}

// TestFailedRenderAndSourceNeverPrune runs the reconcile Runner: a render
// that fails and a source that fails leave the cluster untouched, count
// the guard and say why.
func TestFailedRenderAndSourceNeverPrune(t *testing.T) {
	env := inventory.SharedEnv()
	ns := env.Namespace(t)
	ctx := context.Background()
	dyn := dynamic.NewForConfigOrDie(env.Config)
	md := metadata.NewForConfigOrDie(env.Config)
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(discovery.NewDiscoveryClientForConfigOrDie(env.Config)))
	reg := prometheus.NewRegistry()
	m, err := inventory.New(dyn, md, mapper, inventory.Options{Namespace: env.Namespace(t), Registerer: reg})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Stop()
	app := config.App{Name: "web", Source: "git", Namespace: ns, AppSpec: config.AppSpec{PruneBudget: ptr(100)}}
	cfg := &config.Config{
		Sources: []config.Source{{Name: "git", Git: config.GitSource{URL: "file://" + filepath.Join(t.TempDir(), "missing.git"), GitRef: config.GitRef{Branch: "main", Interval: &metav1.Duration{Duration: time.Minute}}}}},
		Apps:    []config.App{app},
	}
	runner, err := reconcile.New(cfg, reconcile.Cluster{Dynamic: dyn, Mapper: mapper}, reconcile.Options{CacheDir: t.TempDir(), Inventory: m})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	write := func(name, content string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	for _, n := range []string{"a", "b", "c"} {
		write(n+".yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: "+n+"}\ndata: {k: v}\n")
	}
	rendered, cs, err := runner.Apply(ctx, app, dir, false)
	if err != nil || !cs.OK() {
		t.Fatalf("first apply: %v", err)
	}
	if rendered.Prune == nil || rendered.Prune.Refused != nil {
		t.Fatalf("first apply's prune report: %v", rendered.Prune)
	}
	present := func() []string {
		l, err := kubernetes.NewForConfigOrDie(env.Config).CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{LabelSelector: inventory.LabelPartOf + "=" + m.ID(app.Name)})
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, cm := range l.Items {
			out = append(out, cm.Name)
		}
		return out
	}
	want := []string{"a", "b", "c"}

	// b and c leave Git, and a file does not parse: the render fails.
	for _, n := range []string{"b", "c"} {
		if err := os.Remove(filepath.Join(dir, n+".yaml")); err != nil {
			t.Fatal(err)
		}
	}
	write("broken.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: [\n")
	if _, _, err := runner.Apply(ctx, app, dir, false); err == nil {
		t.Fatalf("apply of a broken render succeeded")
	}
	if diff := cmp.Diff(want, present()); diff != "" {
		t.Errorf("after a failed render (-want +got):\n%s", diff)
	}
	if n := blockedCount(t, reg, inventory.ReasonRenderFailed); n != 1 {
		t.Errorf("render-failed count %v, want 1", n)
	}
	report := m.Refuse(app.Name, inventory.ReasonRenderFailed, os.ErrInvalid)
	if !strings.Contains(report.Refused.Message, "did not render") {
		t.Errorf("render-failed message %q", report.Refused.Message)
	}

	// The source fails (no such repository).
	if _, _, err := runner.Apply(ctx, app, "", false); err == nil {
		t.Fatalf("apply from a missing repository succeeded")
	}
	if diff := cmp.Diff(want, present()); diff != "" {
		t.Errorf("after a failed source (-want +got):\n%s", diff)
	}
	if n := blockedCount(t, reg, inventory.ReasonSourceFailed); n != 1 {
		t.Errorf("source-failed count %v, want 1", n)
	}

	// Fixed: the next render prunes b and c.
	if err := os.Remove(filepath.Join(dir, "broken.yaml")); err != nil {
		t.Fatal(err)
	}
	rendered, _, err = runner.Apply(ctx, app, dir, false)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"a"}, present()); diff != "" {
		t.Errorf("after the fix (-want +got):\n%s\nreport: %s", diff, rendered.Prune)
	}
}

func ptr[T any](v T) *T { return &v }
