package drift

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"syncd.dev/syncd/internal/applier"
	"syncd.dev/syncd/internal/config"
	"syncd.dev/syncd/internal/planner"
)

// A monitoring stack written the way public manifests are: zero values
// spelled out (minReadySeconds: 0, readOnly: false, hostNetwork: false,
// annotations: {}, an empty env value), quantities in another unit than
// the server's (1000m, 1024Mi, "0.1"), ports without protocol, a Service
// targetPort by number and by name, an env fieldRef without apiVersion,
// and a Lease whose acquireTime has a UTC offset (the server stores it in
// UTC, which no comparison with Git's text can know).
const (
	grafanaDeployment = `
apiVersion: apps/v1
kind: Deployment
metadata: {name: grafana, labels: {app: grafana}, annotations: {}}
spec:
  replicas: 1
  minReadySeconds: 0
  selector: {matchLabels: {app: grafana}}
  template:
    metadata: {labels: {app: grafana}}
    spec:
      hostNetwork: false
      containers:
      - name: grafana
        image: grafana/grafana:11.0.0
        ports: [{name: http, containerPort: 3000}]
        env:
        - name: POD_NAME
          valueFrom: {fieldRef: {fieldPath: metadata.name}}
        - {name: GF_PATHS_EXTRA, value: ""}
        resources:
          limits: {cpu: 1000m, memory: 1024Mi}
          requests: {cpu: "0.1", memory: 128Mi}
        volumeMounts:
        - {name: config, mountPath: /etc/grafana, readOnly: false}
      volumes:
      - name: config
        configMap: {name: grafana}
`
	grafanaService = `
apiVersion: v1
kind: Service
metadata: {name: grafana}
spec:
  selector: {app: grafana}
  ports:
  - {name: http, port: 80, targetPort: http}
  - {name: metrics, port: 9090, targetPort: 3000}
`
	grafanaLease = `
apiVersion: coordination.k8s.io/v1
kind: Lease
metadata: {name: grafana-leader}
spec:
  holderIdentity: grafana-0
  leaseDurationSeconds: 15
  acquireTime: "2026-12-01T18:00:00.000000+01:00"
`
)

const (
	minReadySeconds = `.spec.minReadySeconds`
	readOnly        = `.spec.template.spec.containers[name="grafana"].volumeMounts[mountPath="/etc/grafana"].readOnly`
	acquireTime     = `.spec.acquireTime`
	holderIdentity  = `.spec.holderIdentity`
	targetPort      = `.spec.ports[port=9090,protocol="TCP"].targetPort`
)

// countingNormalizer counts the dry runs it forwards.
type countingNormalizer struct {
	Normalizer
	n atomic.Int32
}

func (c *countingNormalizer) Normalize(ctx context.Context, ref planner.ObjectRef, s planner.Slice) (*unstructured.Unstructured, error) {
	c.n.Add(1)
	return c.Normalizer.Normalize(ctx, ref, s)
}

func (c *cluster) normalizer(t testing.TB) *countingNormalizer {
	t.Helper()
	ap, err := applier.New(c.dyn, c.mapper, applier.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return &countingNormalizer{Normalizer: ap}
}

// detectNormalized is what `syncd drift` does: Normalize, then Detect.
func (c *cluster) detectNormalized(t testing.TB, n Normalizer, plan *planner.Plan) *Report {
	t.Helper()
	live := c.live(t, plan)
	norm, warns := Normalize(context.Background(), n, plan, live, Options{})
	if len(warns) > 0 {
		t.Errorf("Normalize warnings: %q", warns)
	}
	return Detect(plan, live, Options{Normalized: norm})
}

// sameManagerEdit applies o's first slice again, as its manager and with
// fields changed by set: a write under syncd's own manager name.
func (c *cluster) sameManagerEdit(t testing.TB, o *planner.Object, set func(u *unstructured.Unstructured)) {
	t.Helper()
	u := o.Slices[0].Object.DeepCopy()
	set(u)
	c.apply(t, u, string(o.Slices[0].Manager), true)
}

// TestNormalizedServer: right after syncd applied the stack, Detect with
// the server's dry run has no finding, and asked for one dry run only
// (the Lease: the zero-value rule and quantities settle the rest offline).
// Then an Update by another manager and writes under syncd's own manager
// are still found, with the culprit.
func TestNormalizedServer(t *testing.T) {
	c := newCluster(t)
	ns := env.Namespace(t)
	plan := mustPlan(t, config.App{Name: "monitoring", Namespace: ns}, grafanaDeployment, grafanaService, grafanaLease)
	c.applyPlan(t, plan, false)

	raw := Detect(plan, c.live(t, plan), Options{})
	wantRaw := []found{{Object: "Lease/grafana-leader", Path: acquireTime, Class: "value-drift",
		Desired: "2026-12-01T18:00:00.000000+01:00", Live: "2026-12-01T17:00:00.000000Z"}}
	if diff := cmp.Diff(wantRaw, summarize(raw)); diff != "" {
		t.Errorf("findings compared with Git's text only (-want +got):\n%s", diff)
	}
	n := c.normalizer(t)
	if r := c.detectNormalized(t, n, plan); len(r.Findings) > 0 || len(r.Warnings) > 0 {
		t.Errorf("findings after a clean sync: %+v", summarize(r))
		_ = r.WriteText(testWriter{t})
	}
	if got := n.n.Load(); got != 1 {
		t.Errorf("dry runs = %d, want 1 (the Lease's slice)", got)
	}

	deploy, lease := objectNamed(t, plan, "grafana", "Deployment"), objectNamed(t, plan, "grafana-leader", "Lease")
	c.mergePatch(t, deploy.Desired, "kubectl-edit", `{"spec":{"minReadySeconds":5}}`)
	c.sameManagerEdit(t, lease, func(u *unstructured.Unstructured) {
		_ = unstructured.SetNestedField(u.Object, "intruder", "spec", "holderIdentity")
		_ = unstructured.SetNestedField(u.Object, "2026-12-01T19:00:00.000000+01:00", "spec", "acquireTime")
	})
	_, err := c.resource(t, deploy.Desired).Patch(context.Background(), "grafana", types.StrategicMergePatchType,
		[]byte(`{"spec":{"template":{"spec":{"containers":[{"name":"grafana","volumeMounts":[{"mountPath":"/etc/grafana","readOnly":true}]}]}}}}`),
		metav1.PatchOptions{FieldManager: string(deploy.Slices[0].Manager)})
	if err != nil {
		t.Fatal(err)
	}
	want := []found{
		{Object: "Deployment/grafana", Path: minReadySeconds, Class: "taken-over", Culprit: "kubectl-edit", Operation: "Update", Desired: int64(0), Live: int64(5)},
		{Object: "Deployment/grafana", Path: readOnly, Class: "value-drift", Desired: false, Live: true},
		{Object: "Lease/grafana-leader", Path: acquireTime, Class: "value-drift", Desired: "2026-12-01T18:00:00.000000+01:00", Live: "2026-12-01T18:00:00.000000Z"},
		{Object: "Lease/grafana-leader", Path: holderIdentity, Class: "value-drift", Desired: "grafana-0", Live: "intruder"},
	}
	r := c.detectNormalized(t, n, plan)
	if diff := cmp.Diff(want, summarize(r)); diff != "" {
		t.Errorf("findings after out-of-band edits (-want +got):\n%s", diff)
		_ = r.WriteText(testWriter{t})
	}
	for _, f := range r.Findings {
		if !f.Differs {
			t.Errorf("%s %s: Differs = false", f.Object.Name, f.Path)
		}
	}
}

// objectNamed returns the plan's object of kind and name.
func objectNamed(t testing.TB, plan *planner.Plan, name, kind string) *planner.Object {
	t.Helper()
	for i := range plan.Objects {
		if o := &plan.Objects[i]; o.Ref.Name == name && o.Ref.Kind == kind {
			return o
		}
	}
	t.Fatalf("no %s %s in the plan", kind, name)
	return nil
}

// watcherWith runs a Watcher with normalizer n on plan until the test
// ends; it returns the errors reported to OnError.
func watcherWith(t testing.TB, c *cluster, plan *planner.Plan, n Normalizer) (*Watcher, *recorder, func() []error) {
	t.Helper()
	rec := newRecorder()
	var mu sync.Mutex
	var errs []error
	w := runWatcher(t, c, plan, Options{}, WatcherOptions{OnChange: rec.record, Normalizer: n, OnError: func(err error) {
		mu.Lock()
		errs = append(errs, err)
		mu.Unlock()
	}})
	return w, rec, func() []error {
		mu.Lock()
		defer mu.Unlock()
		return append([]error(nil), errs...)
	}
}

// TestWatcherNormalized: the watcher publishes nothing for the freshly
// synced stack, then exactly the out-of-band edits with their culprits,
// having asked the server once (the Lease's slice), not on every event.
func TestWatcherNormalized(t *testing.T) {
	c := newCluster(t)
	ns := env.Namespace(t)
	plan := mustPlan(t, config.App{Name: "monitoring", Namespace: ns}, grafanaDeployment, grafanaService, grafanaLease)
	c.applyPlan(t, plan, false)
	n := c.normalizer(t)
	w, rec, errs := watcherWith(t, c, plan, n)

	deploy, lease := objectNamed(t, plan, "grafana", "Deployment"), objectNamed(t, plan, "grafana-leader", "Lease")
	c.mergePatch(t, deploy.Desired, "kubectl-edit", `{"spec":{"minReadySeconds":5}}`)
	c.sameManagerEdit(t, lease, func(u *unstructured.Unstructured) {
		_ = unstructured.SetNestedField(u.Object, "intruder", "spec", "holderIdentity")
	})
	rec.waitFor(t, 0, 30*time.Second, "the taken-over minReadySeconds", func(ch Delta) bool {
		return hasFinding(ch.New, minReadySeconds, TakenOver, "kubectl-edit")
	})
	svc := objectNamed(t, plan, "grafana", "Service")
	_, err := c.resource(t, svc.Desired).Patch(context.Background(), "grafana", types.StrategicMergePatchType,
		[]byte(`{"spec":{"ports":[{"port":9090,"targetPort":3001}]}}`), metav1.PatchOptions{FieldManager: "kubectl-edit"})
	if err != nil {
		t.Fatal(err)
	}
	// Every object was edited and a recomputation publishes all its new
	// findings at once: when the three are in, a false one would be too.
	rec.waitFor(t, 0, 30*time.Second, "the value-drift of holderIdentity", func(ch Delta) bool {
		return hasFinding(ch.New, holderIdentity, ValueDrift, "")
	})
	rec.waitFor(t, 0, 30*time.Second, "the taken-over targetPort", func(ch Delta) bool {
		return hasFinding(ch.New, targetPort, TakenOver, "kubectl-edit")
	})
	var published []string
	rec.mu.Lock()
	for _, ch := range rec.changes {
		for _, f := range ch.New {
			published = append(published, fmt.Sprintf("new %s %s %s %s", f.Object.Name, f.Path, f.Class, f.Culprit))
		}
		for _, f := range ch.Resolved {
			published = append(published, fmt.Sprintf("resolved %s %s %s", f.Object.Name, f.Path, f.Class))
		}
	}
	rec.mu.Unlock()
	want := []string{
		"new grafana " + minReadySeconds + " taken-over kubectl-edit",
		"new grafana " + targetPort + " taken-over kubectl-edit",
		"new grafana-leader " + holderIdentity + " value-drift ",
	}
	if diff := cmp.Diff(want, published, cmpopts.SortSlices(func(a, b string) bool { return a < b })); diff != "" {
		t.Errorf("published changes (-want +got):\n%s", diff)
	}
	if got := w.Report(); len(got.Findings) != 3 {
		t.Errorf("Report holds %d findings, want 3: %+v", len(got.Findings), summarize(got))
	}
	if got := n.n.Load(); got != 1 {
		t.Errorf("dry runs = %d, want 1 (the Lease's slice, once)", got)
	}
	if e := errs(); len(e) > 0 {
		t.Errorf("OnError: %v", e)
	}
}

// TestWatcherNormalizeFails: when the server cannot be asked, the watcher
// reports the error, publishes the comparison with Git's text, and asks
// again after the next SetPlan.
func TestWatcherNormalizeFails(t *testing.T) {
	c := newCluster(t)
	ns := env.Namespace(t)
	plan := mustPlan(t, config.App{Name: "monitoring", Namespace: ns}, grafanaLease)
	c.applyPlan(t, plan, false)
	n := &fakeNormalizer{err: errors.New("Lease " + ns + "/grafana-leader: apply as \"syncd-monitoring\": forbidden")}
	w, rec, errs := watcherWith(t, c, plan, n)
	rec.waitFor(t, 0, 30*time.Second, "the acquireTime compared with Git's text", func(ch Delta) bool {
		return hasFinding(ch.New, acquireTime, ValueDrift, "")
	})
	if e := errs(); len(e) != 1 || !strings.Contains(e[0].Error(), "could not ask the API server how it stores the fields of syncd-monitoring") {
		t.Errorf("OnError: %v", e)
	}

	n.mu.Lock()
	n.err = nil
	n.answers = map[planner.FieldManager]*unstructured.Unstructured{"syncd-monitoring": c.live(t, plan)[plan.Objects[0].Ref]}
	n.mu.Unlock()
	if err := w.SetPlan(plan, Options{}); err != nil {
		t.Fatal(err)
	}
	rec.waitFor(t, 0, 30*time.Second, "the acquireTime resolved", func(ch Delta) bool {
		return hasFinding(ch.Resolved, acquireTime, ValueDrift, "")
	})
	n.mu.Lock()
	defer n.mu.Unlock()
	if len(n.asked) != 2 {
		t.Errorf("requests = %q, want one before and one after SetPlan", n.asked)
	}
}
