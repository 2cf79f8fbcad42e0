package controller

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/record"

	"syncd.dev/syncd/internal/api/v1alpha1"
	"syncd.dev/syncd/internal/appmetrics"
	"syncd.dev/syncd/internal/daemon"
	"syncd.dev/syncd/internal/reconcile"
)

// outcome is what both drivers show of a reconcile: how it ended, at
// which revision, and the apply's counts.
type outcome struct {
	OK                         bool
	Revision                   string
	Objects, Changed, Conflict int
	Error                      string
}

// TestDriversShareOneReconcile: one app reconciled through each driver,
// the file daemon (syncd.yaml) and the App controller (an App object),
// from the same repository. Both run reconcile.Reconciler, so their
// outcomes agree: a clean apply (revision, counts, the fields syncd's
// manager owns) and a broken render (the same error, the app's name
// aside, and the applied object kept).
func TestDriversShareOneReconcile(t *testing.T) {
	appMetrics, appReg := appmetrics.New(), prometheus.NewRegistry()
	appMetrics.Register(appReg)
	r := newRigWith(t, "1h", Options{Metrics: appMetrics})
	fileNS := env.Namespace(t)
	fileReg := prometheus.NewRegistry()
	d, _ := startFileDaemon(t, fileReg, fmt.Sprintf(`apiVersion: syncd/v1alpha1
kind: Config
sources:
- name: repo
  git: {url: %q, branch: main, interval: 1h}
apps:
- {name: twin, source: repo, path: web, namespace: %s}
`, r.repo.URL, fileNS))
	r.app("twin", "web", "")
	appName := AppName(r.ns, "twin")

	fileOutcome := func() outcome {
		for _, s := range d.Status() {
			if s.App == "twin" {
				return outcome{OK: s.Result == reconcile.ResultOK, Revision: s.Revision, Objects: s.Objects, Changed: s.Changed, Conflict: s.Conflicts, Error: s.Error}
			}
		}
		return outcome{}
	}
	appOutcome := func() outcome {
		app, _, err := r.get("twin")
		if err != nil {
			return outcome{Error: err.Error()}
		}
		out := outcome{Revision: app.Status.LastAttemptedRevision}
		if c := ready(app); c != nil {
			out.OK = c.Status == metav1.ConditionTrue
			if !out.OK {
				out.Error = c.Message
			}
		}
		if o := app.Status.Objects; o != nil {
			out.Objects, out.Changed, out.Conflict = o.Total, o.Changed, o.Conflicts
		}
		return out
	}
	agree := func(what string, done func(outcome) bool) {
		t.Helper()
		var file, app outcome
		eventually(t, what, func() (bool, string) {
			file, app = fileOutcome(), appOutcome()
			return done(file) && done(app), fmt.Sprintf("file %+v, App %+v", file, app)
		})
		// The error names the app: each driver names it its way.
		file.Error = strings.ReplaceAll(file.Error, "app twin", "app <name>")
		app.Error = strings.ReplaceAll(app.Error, "app "+appName, "app <name>")
		if diff := cmp.Diff(file, app); diff != "" {
			t.Errorf("%s: the drivers' outcomes differ (-file +App):\n%s", what, diff)
		}
		fileSeries, appSeries := appSeries(t, fileReg, "twin"), appSeries(t, appReg, appName)
		if diff := cmp.Diff(fileSeries, appSeries); diff != "" || len(fileSeries) == 0 {
			t.Errorf("%s: the drivers' per-app series differ (-file +App):\n%s", what, diff)
		}
	}

	agree("both applied the first commit", func(o outcome) bool { return o.OK && o.Revision == r.sha })
	if got := fileOutcome(); got.Objects != 1 || got.Changed != 1 {
		t.Errorf("first apply counts = %+v, want 1 object written", got)
	}
	t.Run("syncd's manager owns the same fields", func(t *testing.T) {
		file := syncdFields(t, fileNS, "twin")
		app := syncdFields(t, r.ns, appName)
		if file == "" || file != app {
			t.Errorf("fields of syncd-twin = %s\nfields of syncd-%s = %s", file, appName, app)
		}
	})

	broken, err := r.repo.Commit("broken", map[string][]byte{"web/cm.yaml": []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: [name\n")})
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Trigger("repo"); err != nil {
		t.Fatal(err)
	}
	patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}}}`, v1alpha1.RequestedAtAnnotation, time.Now().Format(time.RFC3339Nano))
	if _, err := r.dyn.Resource(v1alpha1.AppResource).Namespace(r.ns).Patch(context.Background(), "twin", types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	agree("both refused the broken commit", func(o outcome) bool { return !o.OK && o.Revision == broken && o.Error != "" })
	for _, ns := range []string{fileNS, r.ns} {
		if _, err := env.Clientset(t).CoreV1().ConfigMaps(ns).Get(context.Background(), "web", metav1.GetOptions{}); err != nil {
			t.Errorf("ConfigMap %s/web after the broken render: %v (a broken render must delete nothing)", ns, err)
		}
	}
}

// syncdFields is the fieldsV1 that app's manager applied to ConfigMap
// ns/web, the app's name in its managers annotation written <app>.
func syncdFields(t *testing.T, ns, app string) string {
	t.Helper()
	cm, err := env.Clientset(t).CoreV1().ConfigMaps(ns).Get(context.Background(), "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range cm.ManagedFields {
		if e.Manager == "syncd-"+app && e.Operation == metav1.ManagedFieldsOperationApply && e.FieldsV1 != nil {
			return strings.ReplaceAll(string(e.FieldsV1.Raw), "managers.syncd.dev/"+app+`"`, `managers.syncd.dev/<app>"`)
		}
	}
	return ""
}

// appSeries are the per-app series of app in reg that say how its
// reconciles ended (result, errors by stage, objects by action), by
// metric name and their other labels, for the drivers to agree on.
func appSeries(t *testing.T, reg *prometheus.Registry, app string) map[string]float64 {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, f := range families {
		switch f.GetName() {
		case "syncd_app_result", "syncd_reconcile_errors_total", "syncd_objects":
		default:
			continue
		}
		for _, m := range f.GetMetric() {
			var labels []string
			mine := false
			for _, l := range m.GetLabel() {
				if l.GetName() == "app" {
					mine = l.GetValue() == app
					continue
				}
				labels = append(labels, l.GetName()+"="+l.GetValue())
			}
			if mine {
				out[f.GetName()+"{"+strings.Join(labels, ",")+"}"] = m.GetGauge().GetValue() + m.GetCounter().GetValue()
			}
		}
	}
	return out
}

// startFileDaemon runs a file daemon on cfg against the test cluster,
// with an inventory, its metrics on reg and Events recorded, until the
// test ends. It returns the inventory's namespace too, where the apps'
// Events are (on their inventory parent Secrets).
func startFileDaemon(t *testing.T, reg prometheus.Registerer, cfg string) (*daemon.Daemon, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "syncd.yaml")
	if err := os.WriteFile(path, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	invNS := env.Namespace(t)
	cl, _, inv := clusterWithInventory(t, installCRDs(t), invNS)
	broadcaster := record.NewBroadcaster()
	broadcaster.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: env.Clientset(t).CoreV1().Events("")})
	t.Cleanup(broadcaster.Shutdown)
	d, err := daemon.New(daemon.Options{ConfigPath: path, Cluster: cl, Options: reconcile.Options{CacheDir: t.TempDir(), Inventory: inv}, Metrics: daemon.NewMetrics(reg),
		Events: broadcaster.NewRecorder(scheme.Scheme, corev1.EventSource{Component: "syncd"}), Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- d.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("daemon: %v", err)
		}
		inv.Stop()
	})
	return d, invNS
}
