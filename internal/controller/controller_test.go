package controller

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/tools/record"
	"sigs.k8s.io/cli-utils/pkg/kstatus/status"

	"syncd.dev/syncd/internal/api/v1alpha1"
	"syncd.dev/syncd/internal/inventory"
	"syncd.dev/syncd/internal/reconcile"
	"syncd.dev/syncd/internal/reconcile/reconciletest"
	"syncd.dev/syncd/internal/testenv/gitserver"
)

// rig is a running Controller, a loopback Git repository and a team
// namespace holding the GitSource and Apps.
type rig struct {
	t    *testing.T
	dyn  dynamic.Interface
	ns   string
	repo *gitserver.Repo
	sha  string
	// srv serves repo (SetDown makes an outage).
	srv *gitserver.Server
	c   *Controller
	// stop stops c (a restart starts another: startIn).
	stop func()
	// invNS holds the inventories of syncd's own cluster.
	invNS string
}

// newRig starts a Controller over a repository whose directories web/
// and api/ each hold one ConfigMap (namespace unset: it lands in the
// App's namespace). interval is the GitSource's.
func newRig(t *testing.T, interval string) *rig {
	t.Helper()
	return newRigWith(t, interval, Options{})
}

// newRigWith is newRig with a controller whose Tenancy and remote
// targets (Runner.Targets) are those of extra.
func newRigWith(t *testing.T, interval string, extra Options) *rig {
	t.Helper()
	dyn := installCRDs(t)
	srv, err := gitserver.Start(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	repo, err := srv.NewRepo("team", t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	sha, err := repo.Commit("first", map[string][]byte{
		"web/cm.yaml": []byte(configMap("web", "1")),
		"api/cm.yaml": []byte(configMap("api", "1")),
	})
	if err != nil {
		t.Fatal(err)
	}
	r := &rig{t: t, dyn: dyn, ns: env.Namespace(t), repo: repo, sha: sha, srv: srv}
	r.c = r.start(extra)
	r.create("gitsources", fmt.Sprintf(`
kind: GitSource
metadata: {name: repo}
spec: {url: %q, branch: main, interval: %s}`, repo.URL, interval))
	return r
}

// start runs a Controller with an inventory until the test ends.
func (r *rig) start(extra Options) *Controller {
	r.invNS = env.Namespace(r.t)
	c, stop := r.startIn(r.invNS, extra)
	r.stop = stop
	return c
}

// startIn runs a Controller whose inventory keeps its Secrets in invNS
// until stop is called or the test ends (a restart: a new Controller,
// with new Names, over the same inventories).
func (r *rig) startIn(invNS string, extra Options) (c *Controller, stop func()) {
	t := r.t
	cl, md, inv := clusterWithInventory(t, r.dyn, invNS)
	broadcaster := record.NewBroadcaster()
	broadcaster.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: env.Clientset(t).CoreV1().Events("")})
	t.Cleanup(broadcaster.Shutdown)
	c, err := New(Options{
		Names:    extra.Names,
		Events:   broadcaster.NewRecorder(scheme.Scheme, corev1.EventSource{Component: "syncd"}),
		Cluster:  cl,
		Runner:   reconcile.Options{CacheDir: t.TempDir(), Inventory: inv, Targets: extra.Runner.Targets},
		Secrets:  ClientSecrets{Client: env.Clientset(t)},
		Logger:   slog.New(slog.NewTextHandler(io.Discard, nil)),
		Tenancy:  extra.Tenancy,
		Metadata: md,
		Alerts:   extra.Alerts,
		Metrics:  extra.Metrics,
		Backoff:  extra.Backoff,
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("controller: %v", err)
			}
			inv.Stop()
		})
	}
	t.Cleanup(stop)
	return c, stop
}

func configMap(name, value string) string {
	return fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: %s\ndata:\n  value: %q\n", name, value)
}

// create creates an object of syncd.dev/v1alpha1 in the rig's namespace.
func (r *rig) create(resource, manifest string) {
	r.t.Helper()
	u := object(r.t, manifest)
	u.SetAPIVersion(v1alpha1.GroupVersion.String())
	if _, err := r.dyn.Resource(v1alpha1.GroupVersion.WithResource(resource)).Namespace(r.ns).Create(context.Background(), u, metav1.CreateOptions{}); err != nil {
		r.t.Fatalf("create %s: %v", resource, err)
	}
}

// app creates an App of the rig's GitSource rendering path.
func (r *rig) app(name, path string, extra string) {
	r.t.Helper()
	r.create("apps", fmt.Sprintf(`
kind: App
metadata: {name: %s}
spec: {sourceRef: {kind: GitSource, name: repo}, path: %s%s}`, name, path, extra))
}

// get reads an App.
func (r *rig) get(name string) (*v1alpha1.App, *unstructured.Unstructured, error) {
	u, err := r.dyn.Resource(v1alpha1.AppResource).Namespace(r.ns).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		return nil, nil, err
	}
	app, err := appFrom(u)
	return app, u, err
}

// ready returns the App's Ready condition (nil before the first status).
func ready(app *v1alpha1.App) *metav1.Condition {
	for i := range app.Status.Conditions {
		if app.Status.Conditions[i].Type == string(v1alpha1.ConditionReady) {
			return &app.Status.Conditions[i]
		}
	}
	return nil
}

// waitApp polls the App until cond holds for its current generation.
func (r *rig) waitApp(name, what string, cond func(*v1alpha1.App) bool) *v1alpha1.App {
	r.t.Helper()
	var last *v1alpha1.App
	eventually(r.t, "App "+name+" "+what, func() (bool, string) {
		app, _, err := r.get(name)
		if err != nil {
			return false, err.Error()
		}
		last = app
		return app.Status.ObservedGeneration == app.Generation && cond(app), fmt.Sprintf("%+v", app.Status)
	})
	return last
}

func (r *rig) waitReady(name, revision string) *v1alpha1.App {
	r.t.Helper()
	return r.waitApp(name, "Ready at "+revision, func(a *v1alpha1.App) bool {
		c := ready(a)
		return c != nil && c.Status == metav1.ConditionTrue && a.Status.LastAppliedRevision == revision
	})
}

// eventually polls cond until it holds or a generous deadline passes.
func eventually(t *testing.T, what string, cond func() (bool, string)) {
	t.Helper()
	reconciletest.Eventually(t, what, cond)
}

// clusterWithInventory is syncd's view of the test cluster through dyn
// (discovery-backed mapper, rest config) and an inventory keeping its
// Secrets in invNS.
func clusterWithInventory(t *testing.T, dyn dynamic.Interface, invNS string) (reconcile.Cluster, metadata.Interface, *inventory.Manager) {
	t.Helper()
	disc, err := discovery.NewDiscoveryClientForConfig(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	md, err := metadata.NewForConfig(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	cl := reconcile.Cluster{Dynamic: dyn, Mapper: restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(disc)), Config: env.Config}
	inv, err := inventory.New(cl.Dynamic, md, cl.Mapper, inventory.Options{Namespace: invNS, Config: env.Config})
	if err != nil {
		t.Fatal(err)
	}
	return cl, md, inv
}

func (r *rig) configMapValue(name string) (string, error) {
	cm, err := env.Clientset(r.t).CoreV1().ConfigMaps(r.ns).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		return "", err
	}
	return cm.Data["value"], nil
}

// TestAppBecomesReady: a GitSource and an App created with the dynamic
// client; the App applies its directory, is Ready at the repository's
// revision, kstatus computes Current and `kubectl wait
// --for=condition=Ready` returns.
func TestAppBecomesReady(t *testing.T) {
	r := newRig(t, "1h")
	// As a user would: kubectl apply of a manifest.
	if out, err := r.kubectl(`apiVersion: syncd.dev/v1alpha1
kind: App
metadata: {name: web}
spec: {sourceRef: {kind: GitSource, name: repo}, path: web}
`, "apply", "-f", "-"); err != nil {
		t.Fatalf("kubectl apply of the App: %v\n%s", err, out)
	}
	app := r.waitReady("web", r.sha)
	if v, err := r.configMapValue("web"); err != nil || v != "1" {
		t.Errorf("ConfigMap web: value %q, %v; want 1", v, err)
	}
	if app.Status.Objects == nil || app.Status.Objects.Total != 1 {
		t.Errorf("status.objects = %+v, want total 1", app.Status.Objects)
	}
	if c := ready(app); c.Reason != string(v1alpha1.ReasonSucceeded) {
		t.Errorf("Ready reason = %q, want %s", c.Reason, v1alpha1.ReasonSucceeded)
	}
	_, u, err := r.get("web")
	if err != nil {
		t.Fatal(err)
	}
	res, err := status.Compute(u)
	if err != nil || res.Status != status.CurrentStatus {
		t.Errorf("kstatus = %+v, %v; want Current", res, err)
	}
	out, err := exec.Command(filepath.Join(env.BinDir, "kubectl"), "--kubeconfig", env.Kubeconfig, "-n", r.ns,
		"wait", "--for=condition=Ready", "app/web", "--timeout=30s").CombinedOutput()
	if err != nil {
		t.Errorf("kubectl wait: %v\n%s", err, out)
	}
	table, err := r.kubectl("", "get", "apps.syncd.dev")
	if err != nil {
		t.Errorf("kubectl get apps: %v\n%s", err, table)
	}
	checkAppColumns(t, table, []string{"web", "True", r.sha, "applied revision " + r.sha})
	// The GitSource shows the commit the App fetched, with a
	// NewArtifact Event, as HelmSources and OCISources do.
	want := "main@sha1:" + r.sha
	var src Source
	eventually(t, "GitSource repo status.revision "+want, func() (bool, string) {
		src = r.waitSourceOf(v1alpha1.KindGitSource, "repo", "True "+string(v1alpha1.ReasonValid))
		return src.Git.Status.Revision == want, fmt.Sprintf("%+v", src.Git.Status)
	})
	if src.Git.Status.LastFetchTime == nil {
		t.Errorf("GitSource repo: no lastFetchTime: %+v", src.Git.Status)
	}
	r.waitEvent("repo", "NewArtifact", want)
	out, err = exec.Command(filepath.Join(env.BinDir, "kubectl"), "--kubeconfig", env.Kubeconfig,
		"explain", "apps.syncd.dev.spec.prune").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "Prune deletes objects that left Git") {
		t.Errorf("kubectl explain apps.syncd.dev.spec.prune: %v\n%s", err, out)
	}
}

// kubectl runs the test control plane's kubectl in the rig's namespace,
// stdin as its input.
func (r *rig) kubectl(stdin string, args ...string) (string, error) {
	cmd := exec.Command(filepath.Join(env.BinDir, "kubectl"), append([]string{"--kubeconfig", env.Kubeconfig, "-n", r.ns}, args...)...)
	cmd.Stdin = strings.NewReader(stdin)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// checkAppColumns checks that kubectl's App table has the printer
// columns' header and a row with the cells wanted, in order.
func checkAppColumns(t *testing.T, table string, cells []string) {
	t.Helper()
	lines := strings.Split(strings.TrimSpace(table), "\n")
	if len(lines) != 2 {
		t.Fatalf("kubectl get apps: want a header and one row:\n%s", table)
	}
	if diff := cmp.Diff([]string{"NAME", "READY", "REVISION", "AGE", "STATUS"}, strings.Fields(lines[0])); diff != "" {
		t.Errorf("kubectl get apps header (-want +got):\n%s", diff)
	}
	row := lines[1]
	for _, c := range cells {
		i := strings.Index(row, c)
		if i < 0 {
			t.Errorf("kubectl get apps row %q: no cell %q after the previous ones", lines[1], c)
			return
		}
		row = row[i+len(c):]
	}
}

// TestBrokenAppDoesNotStopAnother: an App with a path that is not in the
// tree is Ready=False with the reason and Stalled (kstatus Failed),
// while another App of the same source applies a new revision.
func TestBrokenAppDoesNotStopAnother(t *testing.T) {
	r := newRig(t, "1s")
	r.app("broken", "missing", "")
	r.app("web", "web", "")
	broken := r.waitApp("broken", "failing", func(a *v1alpha1.App) bool {
		c := ready(a)
		return c != nil && c.Status == metav1.ConditionFalse
	})
	t.Logf("broken App: Ready=%s %s: %s", ready(broken).Status, ready(broken).Reason, ready(broken).Message)
	if c := ready(broken); c.Reason != string(v1alpha1.ReasonRenderFailed) {
		t.Errorf("Ready = %+v, want reason %s", c, v1alpha1.ReasonRenderFailed)
	}
	_, u, _ := r.get("broken")
	if res, err := status.Compute(u); err != nil || res.Status != status.FailedStatus {
		t.Errorf("kstatus of the broken App = %+v, %v; want Failed", res, err)
	}
	eventually(t, "a RenderFailed Event on the broken App", func() (bool, string) {
		evs, err := env.Clientset(t).CoreV1().Events(r.ns).List(context.Background(), metav1.ListOptions{FieldSelector: "involvedObject.name=broken,involvedObject.kind=App"})
		if err != nil {
			return false, err.Error()
		}
		for _, ev := range evs.Items {
			if ev.Reason == string(v1alpha1.ReasonRenderFailed) && ev.Type == corev1.EventTypeWarning {
				return true, ""
			}
		}
		return false, fmt.Sprintf("%d events", len(evs.Items))
	})
	r.waitReady("web", r.sha)
	next, err := r.repo.Commit("second", map[string][]byte{"web/cm.yaml": []byte(configMap("web", "2"))})
	if err != nil {
		t.Fatal(err)
	}
	r.waitReady("web", next)
	if v, err := r.configMapValue("web"); err != nil || v != "2" {
		t.Errorf("ConfigMap web: value %q, %v; want 2", v, err)
	}
	if c := ready(r.waitApp("broken", "still failing", func(*v1alpha1.App) bool { return true })); c.Status != metav1.ConditionFalse {
		t.Errorf("broken App became %+v", c)
	}
}

// TestEditReconcilesOnlyThatApp: with a long poll interval, editing one
// App's spec, or setting its requestedAt annotation, reconciles that App
// once and not the other.
func TestEditReconcilesOnlyThatApp(t *testing.T) {
	r := newRig(t, "1h")
	r.app("web", "web", "")
	r.app("api", "api", "")
	r.waitReady("web", r.sha)
	r.waitReady("api", r.sha)
	webBefore, apiBefore := r.c.Reconciles(r.ns, "web"), r.c.Reconciles(r.ns, "api")
	patch := []byte(`{"spec":{"allowEmpty":true}}`)
	if _, err := r.dyn.Resource(v1alpha1.AppResource).Namespace(r.ns).Patch(context.Background(), "web", types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	r.waitApp("web", "reconciled after the edit", func(a *v1alpha1.App) bool { return a.Generation > 1 })
	if got := r.c.Reconciles(r.ns, "web") - webBefore; got != 1 {
		t.Errorf("the edited App reconciled %d times, want 1", got)
	}
	if got := r.c.Reconciles(r.ns, "api") - apiBefore; got != 0 {
		t.Errorf("the other App reconciled %d times after the edit, want 0", got)
	}

	// The requestedAt annotation reconciles that App now, once.
	webBefore, apiBefore = r.c.Reconciles(r.ns, "web"), r.c.Reconciles(r.ns, "api")
	const at = "2026-12-01T21:50:00Z"
	patch = []byte(`{"metadata":{"annotations":{"` + v1alpha1.RequestedAtAnnotation + `":"` + at + `"}}}`)
	if _, err := r.dyn.Resource(v1alpha1.AppResource).Namespace(r.ns).Patch(context.Background(), "api", types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	r.waitApp("api", "handled the request", func(a *v1alpha1.App) bool { return a.Status.LastHandledReconcileAt == at })
	if got := r.c.Reconciles(r.ns, "api") - apiBefore; got != 1 {
		t.Errorf("the requested App reconciled %d times, want 1", got)
	}
	if got := r.c.Reconciles(r.ns, "web") - webBefore; got != 0 {
		t.Errorf("the other App reconciled %d times after the request, want 0", got)
	}
}

// TestDeletionPrunes: deleting an App prunes its objects through the
// finalizer; deleting one with prune: false leaves them.
func TestDeletionPrunes(t *testing.T) {
	r := newRig(t, "1h")
	r.app("web", "web", "")
	r.app("api", "api", ", prune: false")
	web := r.waitReady("web", r.sha)
	r.waitReady("api", r.sha)
	webCache, err := r.c.caches.dir(r.ns, "web", web.UID)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(webCache); err != nil {
		t.Fatalf("App web's Git cache: %v", err)
	}
	for _, name := range []string{"web", "api"} {
		if err := r.dyn.Resource(v1alpha1.AppResource).Namespace(r.ns).Delete(context.Background(), name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		eventually(t, "App "+name+" gone", func() (bool, string) {
			_, _, err := r.get(name)
			return apierrors.IsNotFound(err), fmt.Sprint(err)
		})
	}
	eventually(t, "the deleted App's Git cache removed", func() (bool, string) {
		_, err := os.Stat(webCache)
		return os.IsNotExist(err), fmt.Sprint(err)
	})
	if _, err := r.configMapValue("web"); !apierrors.IsNotFound(err) {
		t.Errorf("ConfigMap web after its App was deleted: %v, want NotFound", err)
	}
	if v, err := r.configMapValue("api"); err != nil || v != "1" {
		t.Errorf("ConfigMap api of the prune: false App: %q, %v; want it kept", v, err)
	}
}

// TestGitSourceStatus: a valid GitSource is Ready; one naming a Secret
// that does not exist is Ready=False with SecretNotFound, and so is an
// App using it; kstatus reads them Current and Failed.
func TestGitSourceStatus(t *testing.T) {
	r := newRig(t, "1h")
	r.create("gitsources", fmt.Sprintf(`
kind: GitSource
metadata: {name: private}
spec: {url: %q, branch: main, interval: 1h, secretRef: {name: absent}}`, r.repo.URL))
	r.app("web", "web", "")
	r.create("apps", `
kind: App
metadata: {name: private}
spec: {sourceRef: {kind: GitSource, name: private}, path: web}`)
	want := map[string]string{"repo": "True " + string(v1alpha1.ReasonValid), "private": "False " + string(v1alpha1.ReasonSecretNotFound)}
	for name, w := range want {
		r.waitSource(name, w)
	}
	app := r.waitApp("private", "refused", func(a *v1alpha1.App) bool { c := ready(a); return c != nil && c.Status == metav1.ConditionFalse })
	if c := ready(app); c.Reason != string(v1alpha1.ReasonSecretNotFound) || !strings.Contains(c.Message, "Secret absent") {
		t.Errorf("App private: Ready = %+v, want SecretNotFound naming the Secret", c)
	}
	r.waitReady("web", r.sha)
}

// waitSource polls the GitSource until its Ready condition is want
// ("<status> <reason>") for its current generation.
func (r *rig) waitSource(name, want string) {
	r.t.Helper()
	r.waitSourceOf(v1alpha1.KindGitSource, name, want)
}

// waitSourceOf polls the source of kind until its Ready condition is
// want ("<status> <reason>") for its current generation, and returns it.
func (r *rig) waitSourceOf(kind, name, want string) Source {
	r.t.Helper()
	var last Source
	eventually(r.t, kind+" "+name+" "+want, func() (bool, string) {
		u, err := r.dyn.Resource(sourceResource(kind)).Namespace(r.ns).Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		src, err := decodeSource(kind, u)
		if err != nil {
			return false, err.Error()
		}
		last = src
		for _, c := range src.conditions() {
			if c.Type == string(v1alpha1.ConditionReady) {
				got := string(c.Status) + " " + c.Reason
				return got == want && observedGeneration(src) == src.Meta().Generation, got + ": " + c.Message
			}
		}
		return false, "no Ready condition"
	})
	return last
}

// observedGeneration is the source's status.observedGeneration.
func observedGeneration(src Source) int64 {
	if st := src.artifactStatus(); st != nil {
		return st.ObservedGeneration
	}
	return src.Git.Status.ObservedGeneration
}

// TestDeletionPruneGuards: the prune on an App's deletion goes through
// the per-object guards: an object annotated syncd.dev/prune: disabled
// stays, the App's other objects go.
func TestDeletionPruneGuards(t *testing.T) {
	r := newRig(t, "1h")
	kept := "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: guarded-kept\n  annotations:\n    syncd.dev/prune: disabled\ndata:\n  value: \"1\"\n"
	next, err := r.repo.Commit("guarded", map[string][]byte{
		"guarded/kept.yaml": []byte(kept),
		"guarded/gone.yaml": []byte(configMap("guarded-gone", "1")),
	})
	if err != nil {
		t.Fatal(err)
	}
	r.app("guarded", "guarded", "")
	r.waitReady("guarded", next)
	if err := r.dyn.Resource(v1alpha1.AppResource).Namespace(r.ns).Delete(context.Background(), "guarded", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "App guarded gone", func() (bool, string) {
		_, _, err := r.get("guarded")
		return apierrors.IsNotFound(err), fmt.Sprint(err)
	})
	if _, err := r.configMapValue("guarded-gone"); !apierrors.IsNotFound(err) {
		t.Errorf("ConfigMap guarded-gone after its App was deleted: %v, want NotFound", err)
	}
	if v, err := r.configMapValue("guarded-kept"); err != nil || v != "1" {
		t.Errorf("ConfigMap guarded-kept (syncd.dev/prune: disabled) after its App was deleted: %q, %v; want it kept", v, err)
	}
}
