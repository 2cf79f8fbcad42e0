package applier

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"

	"syncd.dev/syncd/internal/planner"
)

// TestWaitDeployment: the test control plane runs kube-controller-manager
// but no scheduler or kubelet. A Deployment with replicas 0 is rolled out
// by the Deployment controller alone and becomes Current; one with a
// replica never gets a running pod, so it stays InProgress and the wait
// ends at its timeout with a message saying so. Neither outcome depends on
// how fast the machine is: the first has a generous deadline, the second
// can never become Current.
func TestWaitDeployment(t *testing.T) {
	tests := map[string]struct {
		replicas    int
		timeout     time.Duration
		wantHealth  string
		wantMessage []string
	}{
		"no replicas: Current": {replicas: 0, timeout: 2 * time.Minute, wantHealth: "Current"},
		"a replica that never runs: InProgress at the timeout": {
			replicas: 1, timeout: 3 * time.Second, wantHealth: "InProgress",
			wantMessage: []string{"Deployment ", "/web: not Current after waiting 3s (status InProgress: "},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			c := newCluster(t, env.Config)
			ns := env.Namespace(t)
			cs := c.apply(t, c.plan(t, webApp(ns, "syncd-web"), deployment("web", tc.replicas, "nginx:1.27")), ApplyOptions{Wait: true, Timeout: tc.timeout})
			wantChanges(t, cs, "Deployment web syncd-web created")
			got := cs.Changes[0]
			t.Logf("health %s, message %q", got.Health, got.HealthMessage)
			if got.Health != tc.wantHealth {
				t.Errorf("Health = %q, want %q (message %q)", got.Health, tc.wantHealth, got.HealthMessage)
			}
			if len(tc.wantMessage) == 0 && got.HealthMessage != "" {
				t.Errorf("HealthMessage = %q for a Current object, want none", got.HealthMessage)
			}
			for _, w := range tc.wantMessage {
				if !strings.Contains(got.HealthMessage, w) {
					t.Errorf("HealthMessage %q lacks %q", got.HealthMessage, w)
				}
			}
		})
	}
}

// TestWaitStageOneDeadline: the wait runs after the stage's writes, for
// the whole stage at once and outside the concurrency slots: two
// Deployments that never become Current, applied one at a time, are
// both given up at the app's timeout measured from the end of the
// stage, not one timeout after the other, and each message states the
// real wait.
func TestWaitStageOneDeadline(t *testing.T) {
	c := newCluster(t, env.Config)
	ns := env.Namespace(t)
	const timeout = 3 * time.Second
	plan := c.plan(t, webApp(ns, "syncd-web"), deployment("one", 1, "nginx:1.27"), deployment("two", 1, "nginx:1.27"))
	start := time.Now()
	cs, err := c.applier(t, Options{Concurrency: 1}).Apply(context.Background(), plan, ApplyOptions{Wait: true, Timeout: timeout})
	if err != nil {
		t.Fatal(err)
	}
	took := time.Since(start)
	t.Logf("apply and wait took %s", took)
	wantChanges(t, cs, "Deployment one syncd-web created", "Deployment two syncd-web created")
	if took < timeout || took >= 2*timeout {
		t.Errorf("apply and wait took %s, want one timeout (%s) from the end of the stage, not one per object", took, timeout)
	}
	for _, ch := range cs.Changes {
		want := ch.Object.String() + ": not Current after waiting 3s (status InProgress: "
		if ch.Health != "InProgress" || !strings.HasPrefix(ch.HealthMessage, want) {
			t.Errorf("%s: health %q, message %q, want InProgress and %q", ch.Object, ch.Health, ch.HealthMessage, want)
		}
	}
	if n := len(cs.Unhealthy()); n != 2 {
		t.Errorf("Unhealthy() has %d changes, want 2", n)
	}
}

// unchangedAll is a LiveReader whose cache says every object is exactly
// as syncd left it.
type unchangedAll struct{}

func (unchangedAll) Live(context.Context, planner.ObjectRef) (*unstructured.Unstructured, error) {
	return nil, errors.New("unchangedAll: Live must not be asked")
}

func (unchangedAll) Unchanged(context.Context, *planner.Object) (string, bool) { return "1", true }

// TestWaitKeepsNoOpSkip: with wait on, objects unchanged since the last
// apply are still skipped (no request writes them) and are reported
// Current after the wait.
func TestWaitKeepsNoOpSkip(t *testing.T) {
	admin := newCluster(t, env.Config)
	ns := env.Namespace(t)
	plan := admin.plan(t, webApp(ns, "syncd-web"), configMap("cfg", map[string]string{"k": "v"}), deployment("web", 0, "nginx:1.27"))
	first := admin.apply(t, plan, ApplyOptions{Wait: true, Timeout: time.Minute})
	wantChanges(t, first, "ConfigMap cfg syncd-web created", "Deployment web syncd-web created")

	counter := &dryRunCounter{}
	cfg := rest.CopyConfig(env.Config)
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { counter.next = rt; return counter })
	c := newCluster(t, cfg)
	skip := func(*planner.Object, *unstructured.Unstructured) bool { return true }
	cs, err := c.applier(t, Options{}).Apply(context.Background(), plan, ApplyOptions{Wait: true, Timeout: time.Minute, Live: unchangedAll{}, Skip: skip})
	if err != nil {
		t.Fatal(err)
	}
	wantChanges(t, cs, "ConfigMap cfg syncd-web unchanged", "Deployment web syncd-web unchanged")
	for _, ch := range cs.Changes {
		if ch.Health != "Current" || ch.HealthMessage != "" {
			t.Errorf("%s: health %q (%q), want Current", ch.Object, ch.Health, ch.HealthMessage)
		}
	}
	if n := counter.patches.Load(); n != 0 {
		t.Errorf("%d PATCH requests for unchanged objects, want none", n)
	}
}

// pathRecorder records the method and path (with the query's labelSelector
// when set) of every request.
type pathRecorder struct {
	next http.RoundTripper
	mu   sync.Mutex
	seen []string
}

func (p *pathRecorder) RoundTrip(req *http.Request) (*http.Response, error) {
	line := req.Method + " " + req.URL.Path
	if sel := req.URL.Query().Get("labelSelector"); sel != "" {
		line += "?labelSelector=" + sel
	}
	p.mu.Lock()
	p.seen = append(p.seen, line)
	p.mu.Unlock()
	return p.next.RoundTrip(req)
}

// TestWaitListsByLabel: a stage's objects of one resource and namespace
// are waited for with one LIST by the app's labels, not a GET each, so a
// no-op sync with wait on stays a handful of requests; an object of the
// same resource without the label (another app's inventory keeps it) is
// still read on its own.
func TestWaitListsByLabel(t *testing.T) {
	admin := newCluster(t, env.Config)
	ns := env.Namespace(t)
	var docs []string
	for i := range listMin + 2 {
		docs = append(docs, configMap(fmt.Sprintf("cm-%02d", i), map[string]string{"k": "v"}))
	}
	plan := admin.plan(t, webApp(ns, "syncd-web"), docs...)
	labels := map[string]string{"test.syncd.dev/app": "web"}
	first := admin.apply(t, plan, ApplyOptions{Labels: labels})
	if !first.OK() {
		t.Fatalf("first apply: %v%s", changes(first), errs(first))
	}
	// cm-00 loses the label, as when another app's inventory keeps it.
	if _, err := admin.resource(t, configMaps, ns).Patch(context.Background(), "cm-00", types.MergePatchType, []byte(`{"metadata":{"labels":{"test.syncd.dev/app":null}}}`), metav1.PatchOptions{FieldManager: "other"}); err != nil {
		t.Fatal(err)
	}

	rec := &pathRecorder{}
	cfg := rest.CopyConfig(env.Config)
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { rec.next = rt; return rec })
	c := newCluster(t, cfg)
	skip := func(*planner.Object, *unstructured.Unstructured) bool { return true }
	cs, err := c.applier(t, Options{}).Apply(context.Background(), plan, ApplyOptions{Wait: true, Timeout: time.Minute, Labels: labels, Live: unchangedAll{}, Skip: skip})
	if err != nil {
		t.Fatal(err)
	}
	for _, ch := range cs.Changes {
		if ch.Action != Unchanged || ch.Health != "Current" {
			t.Errorf("%s %s, health %q (%q), want unchanged and Current", ch.Object, ch.Action, ch.Health, ch.HealthMessage)
		}
	}
	want := []string{
		"GET /api/v1/namespaces/" + ns + "/configmaps?labelSelector=test.syncd.dev/app=web",
		"GET /api/v1/namespaces/" + ns + "/configmaps/cm-00",
	}
	var got []string
	for _, r := range rec.seen {
		if strings.Contains(r, "/namespaces/") {
			got = append(got, r) // not discovery
		}
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("requests of a no-op sync with wait on (-want +got):\n%s", diff)
	}
}

// TestWaitListForbidden: an identity that may get but not list the
// objects is still waited for, with a GET each.
func TestWaitListForbidden(t *testing.T) {
	ctx := ctxT(t)
	admin := newCluster(t, env.Config)
	ns := env.Namespace(t)
	var docs []string
	for i := range listMin {
		docs = append(docs, configMap(fmt.Sprintf("cm-%02d", i), map[string]string{"k": "v"}))
	}
	plan := admin.plan(t, webApp(ns, "syncd-web"), docs...)
	labels := map[string]string{"test.syncd.dev/app": "web"}
	if first := admin.apply(t, plan, ApplyOptions{Labels: labels}); !first.OK() {
		t.Fatalf("first apply: %v%s", changes(first), errs(first))
	}
	cfg, err := env.ServiceAccountConfig(ctx, ns, "syncd")
	if err != nil {
		t.Fatal(err)
	}
	if err := env.Grant(ctx, ns, "syncd", ns, []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get", "patch"}}}); err != nil {
		t.Fatal(err)
	}
	c := newCluster(t, cfg)
	skip := func(*planner.Object, *unstructured.Unstructured) bool { return true }
	cs, err := c.applier(t, Options{}).Apply(ctx, plan, ApplyOptions{Wait: true, Timeout: 30 * time.Second, Labels: labels, Live: unchangedAll{}, Skip: skip})
	if err != nil {
		t.Fatal(err)
	}
	for _, ch := range cs.Changes {
		if ch.Health != "Current" {
			t.Errorf("%s: health %q (%q), want Current", ch.Object, ch.Health, ch.HealthMessage)
		}
	}
}
