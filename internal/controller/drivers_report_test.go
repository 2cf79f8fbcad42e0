package controller

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/cli-utils/pkg/kstatus/status"

	"syncd.dev/syncd/internal/api/v1alpha1"
	"syncd.dev/syncd/internal/appmetrics"
	"syncd.dev/syncd/internal/daemon"
	"syncd.dev/syncd/internal/inventory"
	"syncd.dev/syncd/internal/reconcile"
)

// twins is one app run by both drivers from one repository: "twin" of
// a syncd.yaml in the file daemon, App "twin" in the controller.
type twins struct {
	t *testing.T
	r *rig
	d *daemon.Daemon
	// invNS holds the file app's inventory parent, where its Events are.
	invNS           string
	fileReg, appReg *prometheus.Registry
}

func newTwins(t *testing.T) *twins {
	t.Helper()
	appMetrics, appReg := appmetrics.New(), prometheus.NewRegistry()
	appMetrics.Register(appReg)
	r := newRigWith(t, "1h", Options{Metrics: appMetrics})
	fileNS := env.Namespace(t)
	fileReg := prometheus.NewRegistry()
	d, invNS := startFileDaemon(t, fileReg, fmt.Sprintf(`apiVersion: syncd/v1alpha1
kind: Config
sources:
- name: repo
  git: {url: %q, branch: main, interval: 1h}
apps:
- {name: twin, source: repo, path: web, namespace: %s}
`, r.repo.URL, fileNS))
	r.app("twin", "web", "")
	return &twins{t: t, r: r, d: d, invNS: invNS, fileReg: fileReg, appReg: appReg}
}

// file is the file app's /status.
func (tw *twins) file() daemon.AppStatus {
	for _, s := range tw.d.Status() {
		if s.App == "twin" {
			return s
		}
	}
	return daemon.AppStatus{}
}

// reconcileBoth makes both drivers poll and reconcile now.
func (tw *twins) reconcileBoth() {
	tw.t.Helper()
	if err := tw.d.Trigger("repo"); err != nil {
		tw.t.Fatal(err)
	}
	patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}}}`, v1alpha1.RequestedAtAnnotation, time.Now().Format(time.RFC3339Nano))
	if _, err := tw.r.dyn.Resource(v1alpha1.AppResource).Namespace(tw.r.ns).Patch(context.Background(), "twin", types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		tw.t.Fatal(err)
	}
}

// waitOK waits until both drivers applied revision in full.
func (tw *twins) waitOK(what, revision string) {
	tw.t.Helper()
	eventually(tw.t, what, func() (bool, string) {
		f := tw.file()
		app, _, err := tw.r.get("twin")
		if err != nil {
			return false, err.Error()
		}
		c := ready(app)
		return f.Result == reconcile.ResultOK && f.Revision == revision && f.Error == "" &&
				c != nil && c.Status == metav1.ConditionTrue && app.Status.LastAppliedRevision == revision,
			fmt.Sprintf("file %+v, App %+v", f, app.Status)
	})
}

// warnings returns the reasons of the Warning Events of each driver
// whose message contains text: the file app's (on its inventory parent)
// and the App's, once both recorded one.
func (tw *twins) warnings(what, text string) (file, app []string) {
	tw.t.Helper()
	eventually(tw.t, what, func() (bool, string) {
		file = warningReasons(tw.t, tw.invNS, inventory.ParentPrefix+"twin", text)
		app = warningReasons(tw.t, tw.r.ns, "twin", text)
		return len(file) > 0 && len(app) > 0, fmt.Sprintf("file %v, App %v", file, app)
	})
	return file, app
}

// warningReasons are the sorted reasons of the Warning Events on object
// name in ns whose message contains text.
func warningReasons(t *testing.T, ns, name, text string) []string {
	t.Helper()
	evs, err := env.Clientset(t).CoreV1().Events(ns).List(context.Background(), metav1.ListOptions{FieldSelector: "type=Warning,involvedObject.name=" + name})
	if err != nil {
		t.Fatal(err)
	}
	var reasons []string
	for _, ev := range evs.Items {
		// Drift is no reconcile's outcome: an App records it as an
		// Event, the file daemon alerts it.
		if ev.Type == corev1.EventTypeWarning && ev.Reason != "DriftDetected" && strings.Contains(ev.Message, text) && !slices.Contains(reasons, ev.Reason) {
			reasons = append(reasons, ev.Reason)
		}
	}
	slices.Sort(reasons)
	return reasons
}

// TestDriversReportFailuresAlike: the file daemon and the App controller
// report one failure alike (reconcile.ReasonOf): a render failure is a
// RenderFailed Warning Event from both, an object the API server refuses
// ApplyFailed from both (the file daemon said ReconcileFailed for both).
func TestDriversReportFailuresAlike(t *testing.T) {
	tw := newTwins(t)
	r := tw.r
	tw.waitOK("both applied the first commit", r.sha)

	broken, err := r.repo.Commit("broken", map[string][]byte{"web/cm.yaml": []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: [name\n")})
	if err != nil {
		t.Fatal(err)
	}
	tw.reconcileBoth()
	file, app := tw.warnings("a Warning Event of the broken render from both", "revision "+broken[:12])
	if diff := cmp.Diff([]string{string(v1alpha1.ReasonRenderFailed)}, file); diff != "" {
		t.Errorf("file daemon's Event reasons for a broken render (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(file, app); diff != "" {
		t.Errorf("Event reasons for a broken render differ (-file +App):\n%s", diff)
	}

	// Valid YAML, planned, refused by the API server: a data key may not
	// hold a space.
	refused, err := r.repo.Commit("refused", map[string][]byte{"web/cm.yaml": []byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: web\ndata:\n  \"bad key\": x\n")})
	if err != nil {
		t.Fatal(err)
	}
	tw.reconcileBoth()
	file, app = tw.warnings("a Warning Event of the refused object from both", "revision "+refused[:12])
	if diff := cmp.Diff([]string{string(v1alpha1.ReasonApplyFailed)}, file); diff != "" {
		t.Errorf("file daemon's Event reasons for a refused object (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(file, app); diff != "" {
		t.Errorf("Event reasons for a refused object differ (-file +App):\n%s", diff)
	}
}

// results are the syncd_app_result series of app in reg.
func results(t *testing.T, reg *prometheus.Registry, app string) []string {
	t.Helper()
	var out []string
	for k, v := range appSeries(t, reg, app) {
		if strings.HasPrefix(k, "syncd_app_result{") && v == 1 {
			out = append(out, k)
		}
	}
	return out
}

// TestDriversReportSourceOutageAlike: while the Git server is down after
// a revision was applied, both drivers say the app is not in sync and
// why, and neither says it needs a person: the file daemon's /status is
// result failed with the error at the revision in force (not ok), the App
// Ready=False with reason SourceFailed at lastAppliedRevision, not
// Stalled (kstatus InProgress, not Failed), syncd_app_result is failed for both, and both
// record a SourceFailed Warning Event. When the server is back both are
// ok again.
func TestDriversReportSourceOutageAlike(t *testing.T) {
	tw := newTwins(t)
	r := tw.r
	tw.waitOK("both applied the first commit", r.sha)

	r.srv.SetDown(true)
	tw.reconcileBoth()
	var f daemon.AppStatus
	var app *v1alpha1.App
	eventually(t, "both report the outage", func() (bool, string) {
		f = tw.file()
		got, _, err := r.get("twin")
		if err != nil {
			return false, err.Error()
		}
		app = got
		c := ready(app)
		return strings.Contains(f.Error, "Unreachable") && c != nil && c.Reason == string(v1alpha1.ReasonSourceFailed),
			fmt.Sprintf("file %+v, App %+v", f, app.Status)
	})
	if f.Result != reconcile.ResultFailed || f.Revision != r.sha {
		t.Errorf("file /status during the outage: result %q at %s; want %q at the revision in force %s", f.Result, f.Revision, reconcile.ResultFailed, r.sha)
	}
	conds := map[string]metav1.ConditionStatus{}
	for _, c := range app.Status.Conditions {
		conds[c.Type] = c.Status
	}
	wantConds := map[string]metav1.ConditionStatus{"Ready": metav1.ConditionFalse, "Reconciling": metav1.ConditionFalse, "Stalled": metav1.ConditionFalse}
	if diff := cmp.Diff(wantConds, conds); diff != "" {
		t.Errorf("App conditions during the outage (-want +got):\n%s", diff)
	}
	if app.Status.LastAppliedRevision != r.sha {
		t.Errorf("App lastAppliedRevision during the outage = %q, want the revision in force %s", app.Status.LastAppliedRevision, r.sha)
	}
	if !strings.Contains(ready(app).Message, "Unreachable") {
		t.Errorf("App Ready message %q does not say what failed", ready(app).Message)
	}
	_, u, _ := r.get("twin")
	if res, err := status.Compute(u); err != nil || res.Status != status.InProgressStatus {
		t.Errorf("kstatus of the App during the outage = %+v, %v; want InProgress (retried; not Failed)", res, err)
	}
	fileRes, appRes := results(t, tw.fileReg, "twin"), results(t, tw.appReg, AppName(r.ns, "twin"))
	if diff := cmp.Diff([]string{`syncd_app_result{cluster=local,result=failed}`}, fileRes); diff != "" {
		t.Errorf("file syncd_app_result during the outage (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(fileRes, appRes); diff != "" {
		t.Errorf("syncd_app_result differs (-file +App):\n%s", diff)
	}
	file, appReasons := tw.warnings("a Warning Event of the outage from both", "Unreachable")
	if diff := cmp.Diff([]string{string(v1alpha1.ReasonSourceFailed)}, file); diff != "" {
		t.Errorf("file daemon's Event reasons for the outage (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(file, appReasons); diff != "" {
		t.Errorf("Event reasons for the outage differ (-file +App):\n%s", diff)
	}

	r.srv.SetDown(false)
	tw.reconcileBoth()
	tw.waitOK("both in sync again once the server answers", r.sha)
}
