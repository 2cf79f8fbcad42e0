package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// journey is one way into syncd, driven through the binary by the steps
// every journey shares (run).
type journey struct {
	w   *workspace
	app string // the app of the workspace's config
	// render is the render command line after "render --config C --app A"
	// (a Git source's checkout: --path DIR).
	render []string
	// rendered are strings the render must print (object names, values).
	rendered []string
	// renderErr, when set, is what render must fail with (exit 1) instead:
	// an app render cannot build without the cluster (substituteFrom a
	// ConfigMap or Secret).
	renderErr string
	// change changes the app's source (a commit, a new chart version, a
	// new tag) and returns what the live state must then show.
	change func() (applied func(t *testing.T))
	// planned are strings the plan of the change must print.
	planned []string
	// secrets are values that must appear in nothing syncd printed.
	secrets []string
	// cluster is the cluster the app applies to (apps[].cluster), where
	// its objects and inventory are read; nil: the local one.
	cluster *cluster
}

// run drives the journey: render, apply, a second apply that writes
// nothing, plan exit 0, the change, plan exit 2, apply, the change live,
// no secret printed. Each step's wall time is logged.
func (j *journey) run(t *testing.T) {
	t.Helper()
	w, cl := j.w, j.cluster
	if cl == nil {
		cl = newCluster(t)
	}
	app := []string{"--config", w.config, "--app", j.app, "--cache-dir", w.cache}
	step := stepper(t)

	j.checkRender(t, w.syncd(append(append([]string{"render"}, app...), j.render...)...))
	step("render")

	r := w.must(exitOK, append([]string{"apply"}, app...)...)
	objs := appliedObjects(r.stdout)
	if len(objs) == 0 {
		t.Fatalf("apply named no object\n%s", r)
	}
	step("apply")

	before := cl.syncdEntries(t, objs)
	awaitNextSecond()
	r = w.must(exitOK, append([]string{"apply"}, app...)...)
	j.checkWroteNothing(t, cl, r, before)
	step("second apply")

	// The inventory records each object's resourceVersion after syncd's
	// apply; a controller's status write since (a Deployment's) makes
	// the second apply send a no-op patch and record the new version.
	// From then on a re-apply writes nothing at all, the inventory
	// included.
	inventories := cl.inventoryVersions(t)
	w.must(exitOK, append([]string{"apply"}, app...)...)
	if diff := cmp.Diff(inventories, cl.inventoryVersions(t)); diff != "" {
		t.Errorf("third apply wrote an inventory (resourceVersions -before +after):\n%s", diff)
	}
	step("third apply")

	w.must(exitOK, append([]string{"plan"}, app...)...)
	step("plan (no change)")

	applied := j.change()
	r = w.must(exitChanges, append([]string{"plan"}, app...)...)
	for _, s := range j.planned {
		if !strings.Contains(r.stdout, s) {
			t.Errorf("plan of the change does not print %q\n%s", s, r)
		}
	}
	step("change, plan")

	w.must(exitOK, append([]string{"apply"}, app...)...)
	applied(t)
	step("apply the change")

	w.checkNoSecrets(j.secrets...)
}

// awaitNextSecond waits until the wall clock enters its next second.
// managedFields times have a resolution of one second: a write by the
// second apply in the same second as the first apply's, keeping the same
// fields (a value that changes at every render), would leave syncd's
// entries as they were. The API server runs on this machine, with this
// clock.
func awaitNextSecond() {
	time.Sleep(time.Until(time.Now().Truncate(time.Second).Add(time.Second)))
}

// checkRender fails unless render printed what the journey expects, or
// failed as it expects.
func (j *journey) checkRender(t *testing.T, r result) {
	t.Helper()
	if j.renderErr != "" {
		if r.code != exitError || !strings.Contains(r.stderr, j.renderErr) || r.stdout != "" {
			t.Errorf("render: want exit %d with %q and nothing on stdout\n%s", exitError, j.renderErr, r)
		}
		return
	}
	if r.code != exitOK {
		t.Fatalf("render: want exit %d\n%s", exitOK, r)
	}
	for _, s := range j.rendered {
		if !strings.Contains(r.stdout, s) {
			t.Errorf("render does not print %q\n%s", s, r)
		}
	}
}

// checkWroteNothing fails unless a second apply left every object as it
// was: each outcome unchanged and no managedFields entry of syncd's
// managers touched (an apply that changes the object renews its
// manager's entry time; a no-op apply leaves the object as it was).
func (j *journey) checkWroteNothing(t *testing.T, cl *cluster, r result, before map[objectRef]string) {
	t.Helper()
	for ref, outcome := range appliedObjects(r.stdout) {
		if outcome != "unchanged" {
			t.Errorf("second apply: %s %s, want unchanged\n%s", ref, outcome, r)
		}
	}
	if diff := cmp.Diff(before, cl.syncdEntries(t, before)); diff != "" {
		t.Errorf("second apply wrote objects (syncd's managedFields -before +after):\n%s\n%s", diff, r)
	}
}

// inventoryVersions returns the resourceVersion of every Secret in the
// cluster's inventory namespace (the apps' inventories, on the app's
// cluster): only syncd writes them.
func (c *cluster) inventoryVersions(t *testing.T) map[string]string {
	t.Helper()
	secrets := schema.GroupVersionResource{Version: "v1", Resource: "secrets"}
	list, err := c.dyn.Resource(secrets).Namespace(inventoryNamespace).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, s := range list.Items {
		out[s.GetName()] = s.GetResourceVersion()
	}
	return out
}

// stepper logs each step's wall time since the previous one.
func stepper(t *testing.T) func(name string) {
	last := time.Now()
	return func(name string) {
		t.Helper()
		now := time.Now()
		t.Logf("step %-20s %6.2fs", name, now.Sub(last).Seconds())
		last = now
	}
}

// Exit codes of the syncd binary (cmd/syncd/main.go).
const (
	exitOK       = 0
	exitError    = 1
	exitChanges  = 2
	exitConflict = 3
)
