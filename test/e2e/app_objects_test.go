package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"syncd.dev/syncd/internal/testenv/gitserver"
)

// teamRepo is a team's deployment repository in the shape small teams
// keep one: plain manifests per app, without namespaces (the App's
// namespace is theirs).
func teamRepo(image string) map[string][]byte {
	return map[string][]byte{
		"apps/web/deployment.yaml": []byte(fmt.Sprintf(`apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  labels: {app.kubernetes.io/name: web}
spec:
  replicas: 2
  selector:
    matchLabels: {app.kubernetes.io/name: web}
  template:
    metadata:
      labels: {app.kubernetes.io/name: web}
    spec:
      containers:
        - name: web
          image: ghcr.io/example/web:%s
          envFrom: [{configMapRef: {name: web-settings}}]
          ports: [{name: http, containerPort: 8080}]
`, image)),
		"apps/web/service.yaml": []byte(`apiVersion: v1
kind: Service
metadata:
  name: web
spec:
  selector: {app.kubernetes.io/name: web}
  ports: [{name: http, port: 80, targetPort: http}]
`),
		"apps/web/configmap.yaml": []byte(`apiVersion: v1
kind: ConfigMap
metadata:
  name: web-settings
data:
  LOG_LEVEL: info
`),
	}
}

// appJourney is journey 9's state: a team namespace with a GitSource and
// an App, the daemon running them, and the team's repository.
type appJourney struct {
	t        *testing.T
	w        *workspace
	cl       *cluster
	repo     *gitserver.Repo
	ns, name string
	token    string
	cliCache string // the CLI's own cache, apart from the daemon's
	step     func(string)
}

// objects are the App's objects, as syncd's reports name them.
func (a *appJourney) objects() []objectRef {
	return []objectRef{
		{group: "apps", kind: "Deployment", namespace: a.ns, name: "web"},
		{kind: "Service", namespace: a.ns, name: "web"},
		{kind: "ConfigMap", namespace: a.ns, name: "web-settings"},
	}
}

func (a *appJourney) appRef() objectRef {
	return objectRef{group: "syncd.dev", kind: "App", namespace: a.ns, name: a.name}
}

// manager is the App's default field manager (docs/apps.md, Names).
func (a *appJourney) manager() string { return "syncd-" + a.ns + "-" + a.name }

// TestJourneyAppObjects: a team declares a GitSource (Git over HTTP,
// its token in a Secret) and an App with kubectl, and `syncd run`
// without --config (App objects only) applies it. The journey is daemon-driven, so it goes
// through journey.run's steps itself: the App Ready under its manager,
// `syncd get apps`, plan exit 0, a reconcile that writes nothing, a
// pull-request checkout planned (exit 2), the commit applied by the
// daemon's poll, plan exit 0, and deleting the App prunes its objects.
// `syncd render` has no App form (it takes --config only), so the
// journey does not render.
func TestJourneyAppObjects(t *testing.T) {
	a := &appJourney{t: t, w: newWorkspace(t), cl: newCluster(t), ns: "team-a", name: "web",
		token: "gts-e2e-Rk4pV9wQ2mX7cN5j", step: stepper(t)}
	a.cliCache = filepath.Join(a.w.dir, "cache-cli")
	sha := a.serveRepo()
	d := a.startDaemon()
	a.declare()
	a.step("declare, start")

	a.waitReady(sha)
	a.checkManaged()
	a.checkMetrics(d)
	a.step("App Ready, its series in /metrics")

	a.checkGet(sha)
	a.w.must(exitOK, a.planArgs()...)
	a.step("get apps, plan")

	a.checkTreeAndEvents(sha)
	a.step("tree, events")

	a.checkReconcileWritesNothing()
	a.step("reconcile (no change)")

	next := a.planCheckout()
	a.step("plan a checkout")

	a.commit(next)
	a.w.must(exitOK, a.planArgs()...)
	a.step("commit applied, plan")

	a.deleteApp()
	a.step("delete prunes")

	d.stop()
	a.w.checkNoSecrets(a.token)
}

// checkMetrics waits until the daemon's /metrics holds the App's
// reconcile under its app name, as the dashboards and alert rules read a
// config file's app.
func (a *appJourney) checkMetrics(d *daemon) {
	a.t.Helper()
	app := map[string]string{"app": a.ns + "-" + a.name, "cluster": "local"}
	waitFor(a.t, "the App's series in /metrics", 30*time.Second, func() (bool, string) {
		families := scrape(a.t, d.addr)
		ok := value(families, "syncd_app_result", map[string]string{"app": app["app"], "cluster": "local", "result": "ok"}) == 1 &&
			count(families, "syncd_reconcile_duration_seconds", app) >= 1 &&
			value(families, "syncd_last_success_timestamp_seconds", app) > 0
		return ok, fmt.Sprintf("syncd_app_result, syncd_reconcile_duration_seconds or syncd_last_success_timestamp_seconds of app %s missing", app["app"])
	})
}

// serveRepo serves the team's repository, private (basic auth with the
// token), and returns its first commit.
func (a *appJourney) serveRepo() string {
	srv := gitserver.StartTest(a.t)
	a.repo = srv.NewTestRepo(a.t, "team-a-deploy")
	sha, err := a.repo.Commit("web 1.0.0", teamRepo("1.0.0"))
	if err != nil {
		a.t.Fatal(err)
	}
	srv.RequireBasic("git", a.token)
	return sha
}

// startDaemon runs `syncd run` without --config: App objects only, the
// way manifests/components/app-only installs it (docs/apps.md). It is
// ready at once and its /status lists no app.
func (a *appJourney) startDaemon() *daemon {
	d := a.w.startDaemon()
	resp, err := loopback.Get("http://" + d.addr + "/readyz")
	if err != nil {
		a.t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		a.t.Errorf("/readyz of syncd run without --config: %s, want 200 at once", resp.Status)
	}
	if apps, err := d.status(); err != nil || len(apps) != 0 {
		a.t.Errorf("/status of syncd run without --config: %+v (%v), want no app", apps, err)
	}
	return d
}

// declare creates the team's namespace, the token Secret, the GitSource
// and the App with kubectl, as docs/apps.md shows. The App is deleted
// (pruned) at cleanup while the daemon still runs.
func (a *appJourney) declare() { a.declareWith("") }

// declareWith is declare with more lines of the App's spec (YAML,
// indented by two spaces).
func (a *appJourney) declareWith(spec string) {
	ensureNamespace(a.t, a.ns)
	tokenFile := a.w.file("team-a-token", a.token)
	mustKubectl(a.t, "-n", a.ns, "create", "secret", "generic", "team-repo-token", "--from-file=token="+tokenFile)
	manifest := a.w.file("team-a.yaml", fmt.Sprintf(`apiVersion: syncd.dev/v1alpha1
kind: GitSource
metadata:
  name: team-repo
spec:
  url: %s
  branch: main
  interval: 5s
  secretRef: {name: team-repo-token}
---
apiVersion: syncd.dev/v1alpha1
kind: App
metadata:
  name: %s
spec:
  sourceRef: {kind: GitSource, name: team-repo}
  path: apps/web
%s`, a.repo.URL, a.name, spec))
	mustKubectl(a.t, "-n", a.ns, "apply", "-f", manifest)
	a.t.Cleanup(a.cleanUp)
}

// cleanUp deletes what declare created; an App whose prune does not end
// loses its finalizer so that later journeys do not meet it.
func (a *appJourney) cleanUp() {
	if _, err := kubectl("-n", a.ns, "delete", "app/"+a.name, "--ignore-not-found", "--timeout=60s"); err != nil {
		_, _ = kubectl("-n", a.ns, "patch", "app/"+a.name, "--type=merge", "-p", `{"metadata":{"finalizers":null}}`)
	}
	_, _ = kubectl("-n", a.ns, "delete", "gitsource/team-repo", "secret/team-repo-token", "--ignore-not-found")
}

// waitReady waits with kubectl wait, then until the App's status says
// it applied sha.
func (a *appJourney) waitReady(sha string) {
	a.t.Helper()
	mustKubectl(a.t, "-n", a.ns, "wait", "--for=condition=Ready", "app/"+a.name, "--timeout=120s")
	a.waitApplied(sha)
}

// waitApplied waits until the App is Ready with lastAppliedRevision sha.
func (a *appJourney) waitApplied(sha string) *unstructured.Unstructured {
	a.t.Helper()
	var app *unstructured.Unstructured
	waitFor(a.t, "App "+a.name+" Ready at "+sha, 2*time.Minute, func() (bool, string) {
		var err error
		if app, err = a.cl.get(a.appRef()); err != nil {
			return false, err.Error()
		}
		rev, _, _ := unstructured.NestedString(app.Object, "status", "lastAppliedRevision")
		return rev == sha && readyStatus(app) == "True", fmt.Sprint(app.Object["status"])
	})
	return app
}

// readyStatus is the status of an object's Ready condition.
func readyStatus(obj *unstructured.Unstructured) string {
	conds, _, _ := unstructured.NestedSlice(obj.Object, "status", "conditions")
	for _, c := range conds {
		if m, ok := c.(map[string]any); ok && m["type"] == "Ready" {
			return fmt.Sprint(m["status"])
		}
	}
	return ""
}

// checkManaged checks that every object of the App exists and is
// applied under the App's manager.
func (a *appJourney) checkManaged() {
	a.t.Helper()
	for _, ref := range a.objects() {
		obj, err := a.cl.get(ref)
		if err != nil {
			a.t.Errorf("%s: %v", ref, err)
			continue
		}
		if ms := managers(obj); !slices.Contains(ms, a.manager()) {
			a.t.Errorf("%s managers %q, want %s among them", ref, ms, a.manager())
		}
	}
}

// checkGet checks `syncd get apps` and `syncd get gitsources` show the
// App Ready at sha and the GitSource Ready.
func (a *appJourney) checkGet(sha string) {
	a.t.Helper()
	r := a.w.must(exitOK, "get", "apps", "-n", a.ns)
	checkTable(a.t, r, "NAME READY REVISION AGE STATUS", a.name, "True", sha)
	r = a.w.must(exitOK, "get", "gitsources", "-n", a.ns)
	checkTable(a.t, r, "NAME URL READY REVISION AGE STATUS", "team-repo", a.repo.URL, "True", "main@sha1:"+sha)
	r = a.w.must(exitOK, "get", "apps", "-n", a.ns, "-o", "json")
	var list struct {
		Items []struct{ Metadata struct{ Name string } }
	}
	if err := json.Unmarshal([]byte(r.stdout), &list); err != nil {
		a.t.Fatalf("get apps -o json: %v\n%s", err, r)
	}
	if len(list.Items) != 1 || list.Items[0].Metadata.Name != a.name {
		a.t.Errorf("get apps -o json: %+v, want the one App %s", list, a.name)
	}
}

// checkTreeAndEvents: `syncd tree app` shows the App's objects by
// stage and kind, applied under its manager at the revision, and `syncd
// events app` lists the controller's Synced Event.
func (a *appJourney) checkTreeAndEvents(sha string) {
	a.t.Helper()
	r := a.w.must(exitOK, "tree", "app", a.name, "-n", a.ns)
	if want := fmt.Sprintf("App %s/%s (syncd app %s-%s)  revision %s", a.ns, a.name, a.ns, a.name, sha[:12]); !strings.HasPrefix(r.stdout, want) {
		a.t.Errorf("tree starts %q, want %q", firstLineOf(r.stdout), want)
	}
	for _, kind := range []string{"Deployment.apps", "ConfigMap", "Service"} {
		if lineWith(r.stdout, kind) == "" {
			a.t.Errorf("tree has no %s:\n%s", kind, r.stdout)
		}
	}
	if l := lineWith(r.stdout, a.ns+"/web-settings"); !strings.Contains(l, "applied") || !strings.Contains(l, a.manager()) {
		a.t.Errorf("the ConfigMap's line %q: want applied by %s", l, a.manager())
	}
	r = a.w.must(exitOK, "events", "app", a.name, "-n", a.ns)
	checkTableHeader(a.t, r, "LAST SEEN TYPE REASON COUNT MESSAGE")
	if l := lineWith(r.stdout, "Synced"); !strings.Contains(l, "Normal") || !strings.Contains(l, "applied") {
		a.t.Errorf("events: no Normal Synced line:\n%s", r)
	}
}

func firstLineOf(s string) string { return strings.SplitN(s, "\n", 2)[0] }

// checkTableHeader checks a table's header line.
func checkTableHeader(t *testing.T, r result, header string) {
	t.Helper()
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	if got := strings.Join(strings.Fields(lines[0]), " "); got != header {
		t.Errorf("header %q, want %q\n%s", got, header, r)
	}
}

// checkTable checks a `syncd get` table's header and that a row begins
// with cells.
func checkTable(t *testing.T, r result, header string, cells ...string) {
	t.Helper()
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	if got := strings.Join(strings.Fields(lines[0]), " "); got != header {
		t.Errorf("header %q, want %q\n%s", got, header, r)
	}
	for _, l := range lines[1:] {
		row := strings.Fields(l)
		if len(row) >= len(cells) && cmp.Equal(row[:len(cells)], cells) {
			return
		}
	}
	t.Errorf("no row beginning %q\n%s", cells, r)
}

// planArgs previews the App from the cluster, as it stands in Git.
func (a *appJourney) planArgs(extra ...string) []string {
	return append([]string{"plan", "--app", a.name, "-n", a.ns, "--cache-dir", a.cliCache}, extra...)
}

// checkReconcileWritesNothing asks for a reconcile with `syncd
// reconcile app --wait` and checks it wrote no object.
func (a *appJourney) checkReconcileWritesNothing() {
	a.t.Helper()
	before := a.entries()
	a.w.must(exitOK, "reconcile", "app", a.name, "-n", a.ns, "--wait", "--timeout", "2m")
	if diff := cmp.Diff(before, a.entries()); diff != "" {
		a.t.Errorf("a reconcile at the same revision wrote objects (syncd's managedFields -before +after):\n%s", diff)
	}
	app, err := a.cl.get(a.appRef())
	if err != nil {
		a.t.Fatal(err)
	}
	if changed, _, _ := unstructured.NestedInt64(app.Object, "status", "objects", "changed"); changed != 0 {
		a.t.Errorf("App status.objects.changed %d after a reconcile at the same revision, want 0", changed)
	}
}

// entries are syncd's managedFields entries of the App's objects.
func (a *appJourney) entries() map[objectRef]string {
	return a.cl.syncdEntries(a.t, refSet(a.objects()))
}

// planCheckout previews a pull request's checkout (web 1.1.0) of the
// App from the cluster with --path: exit 2, the image named in the
// diff. It returns the change, for the commit.
func (a *appJourney) planCheckout() map[string][]byte {
	a.t.Helper()
	next := teamRepo("1.1.0")
	dir := filepath.Join(a.w.dir, "pr")
	for name, content := range next {
		a.w.file(filepath.Join("pr", name), string(content))
	}
	r := a.w.must(exitChanges, a.planArgs("--path", filepath.Join(dir, "apps", "web"))...)
	if !strings.Contains(r.stdout, "ghcr.io/example/web:1.1.0") {
		a.t.Errorf("plan of the checkout does not show the new image\n%s", r)
	}
	return next
}

// commit pushes the change and waits for the daemon's poll to apply it:
// the live Deployment first, then the App's status.
func (a *appJourney) commit(files map[string][]byte) {
	a.t.Helper()
	sha, err := a.repo.Commit("web 1.1.0", files)
	if err != nil {
		a.t.Fatal(err)
	}
	dep := objectRef{group: "apps", kind: "Deployment", namespace: a.ns, name: "web"}
	waitFor(a.t, "the daemon to apply web 1.1.0", 2*time.Minute, func() (bool, string) {
		obj, err := a.cl.get(dep)
		if err != nil {
			return false, err.Error()
		}
		got := containerImage(obj)
		return got == "ghcr.io/example/web:1.1.0", got
	})
	a.waitApplied(sha)
}

// deleteApp deletes the App with kubectl and waits until its objects
// are pruned (the finalizer syncd.dev/prune).
func (a *appJourney) deleteApp() {
	a.t.Helper()
	mustKubectl(a.t, "-n", a.ns, "delete", "app/"+a.name, "--timeout=90s")
	for _, ref := range a.objects() {
		waitFor(a.t, ref.String()+" pruned", time.Minute, func() (bool, string) {
			_, err := a.cl.get(ref)
			return apierrors.IsNotFound(err), fmt.Sprint(err)
		})
	}
}
