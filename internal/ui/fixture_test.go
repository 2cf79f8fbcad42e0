package ui

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/metadata"

	"syncd.dev/syncd/internal/api/v1alpha1"
	"syncd.dev/syncd/internal/config"
	"syncd.dev/syncd/internal/drift"
	"syncd.dev/syncd/internal/inventory"
	"syncd.dev/syncd/internal/planner"
	"syncd.dev/syncd/internal/preview"
	"syncd.dev/syncd/internal/reconcile"
	"syncd.dev/syncd/internal/reconcile/reconciletest"
)

// secretValue is the value of the fixture's Secret: no page may show it,
// in clear or base64.
const secretValue = "hunter2-do-not-show-this"

var deploymentsGVR = schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}

// fixture is a file app "web" applied by syncd from a directory (a
// Deployment, a ConfigMap and a Secret), then changed by others: a hand
// edit of the image by kubectl-edit, the replicas through the scale
// subresource by an autoscaler, and a label applied with the same value by
// a second manager (shared).
type fixture struct {
	ns      string
	app     config.App
	dir     string
	runner  *reconcile.Runner
	cluster reconcile.Cluster
	inv     *inventory.Manager
	// demo is the demo's app, once demoDeployment applied it.
	demo    *dirApp
	opts    Options
	server  *Server
	httpSrv *httptest.Server
}

func (f *fixture) deployment() planner.ObjectRef {
	return planner.ObjectRef{Group: "apps", Version: "v1", Kind: "Deployment", Namespace: f.ns, Name: "web"}
}

func (f *fixture) secret() planner.ObjectRef {
	return planner.ObjectRef{Version: "v1", Kind: "Secret", Namespace: f.ns, Name: "creds"}
}

// dirDrift is a drift source that renders the app from the fixture's
// directory (syncd drift --path).
type dirDrift struct{ f *fixture }

func (d dirDrift) Drift(ctx context.Context, app AppRef) (*drift.Report, error) {
	switch {
	case !app.File():
		return nil, nil
	case app.Name == d.f.app.Name:
		return d.f.runner.DetectDrift(ctx, d.f.app, d.f.dir)
	case d.f.demo != nil && app.Name == d.f.demo.app.Name:
		return d.f.demo.runner.DetectDrift(ctx, d.f.demo.app, d.f.demo.dir)
	}
	return nil, nil
}

// dirPlans is a plan source that previews the fixture's app from its
// directory (syncd plan --path).
type dirPlans struct{ f *fixture }

func (p dirPlans) Plan(ctx context.Context, app AppRef) (*preview.Report, error) {
	if !app.File() || app.Name != p.f.app.Name {
		return nil, nil
	}
	rep, _, err := p.f.runner.Preview(ctx, p.f.app, p.f.dir)
	return rep, err
}

// dirApp is an app applied from a directory.
type dirApp struct {
	runner *reconcile.Runner
	app    config.App
	dir    string
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	f := &fixture{ns: env.Namespace(t), dir: t.TempDir()}
	invNS := env.Namespace(t)
	files := map[string]string{
		"config.yaml": fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\n  namespace: %s\ndata:\n  color: blue\n", f.ns),
		"secret.yaml": fmt.Sprintf("apiVersion: v1\nkind: Secret\nmetadata:\n  name: creds\n  namespace: %s\nstringData:\n  password: %s\n", f.ns, secretValue),
	}
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(f.dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	f.writeDeployment(t, fmt.Sprintf(deploymentYAML, f.ns))
	cl := reconciletest.Cluster(t, env.Config)
	f.cluster = cl
	md, err := metadata.NewForConfig(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	inv, err := inventory.New(cl.Dynamic, md, cl.Mapper, inventory.Options{Namespace: invNS, NoWatch: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(inv.Stop)
	f.inv = inv
	f.app = config.App{Name: "web-" + f.ns, Source: "repo"}
	cfg := &config.Config{APIVersion: config.APIVersion, Kind: config.Kind, File: "test", Apps: []config.App{f.app}}
	if f.runner, err = reconcile.New(cfg, cl, reconcile.Options{CacheDir: t.TempDir(), Inventory: inv}); err != nil {
		t.Fatal(err)
	}
	f.apply(t)
	// The second revision drops revisionHistoryLimit from Git: the API
	// server would reset it to its default, so syncd's handoff manager
	// holds it (a pending handoff).
	f.writeDeployment(t, strings.Replace(fmt.Sprintf(deploymentYAML, f.ns), "  revisionHistoryLimit: 5\n", "", 1))
	f.apply(t)
	f.changeByOthers(t, cl)
	f.appObject(t, cl)
	f.opts = Options{Dynamic: cl.Dynamic, Mapper: cl.Mapper, Inventory: inv, InventoryNamespace: invNS, Drift: dirDrift{f}, Plans: dirPlans{f}}
	f.server, err = New(f.opts)
	if err != nil {
		t.Fatal(err)
	}
	f.httpSrv = httptest.NewServer(f.server.Handler())
	t.Cleanup(f.httpSrv.Close)
	return f
}

// uiWith serves another UI over the fixture's cluster that reads and
// writes with dyn, its buttons on or off.
func (f *fixture) uiWith(t *testing.T, dyn dynamic.Interface, actions bool) *httptest.Server {
	t.Helper()
	opts := f.opts
	opts.Dynamic, opts.Actions = dyn, actions
	s, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(s.Handler())
	t.Cleanup(srv.Close)
	return srv
}

// post posts a form to srv's /action (with an Origin header unless
// origin is ""), without following a redirect; it returns the status,
// the Location and the body.
func post(t *testing.T, srv *httptest.Server, form url.Values, origin string) (int, string, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, srv.URL+"/action", strings.NewReader(form.Encode()))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if origin != "" {
		req.Header.Set("Origin", origin)
	}
	client := *srv.Client()
	client.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, resp.Header.Get("Location"), string(body)
}

const deploymentYAML = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  namespace: %s
  labels:
    team: payments
spec:
  replicas: 2
  revisionHistoryLimit: 5
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      containers:
      - name: web
        image: nginx:1.27
`

// apply applies the fixture's directory as the file app.
func (f *fixture) apply(t *testing.T) {
	t.Helper()
	if _, cs, err := f.runner.Apply(context.Background(), f.app, f.dir, false); err != nil || !cs.OK() {
		t.Fatalf("apply: %v %v", err, cs)
	}
}

// writeDeployment writes the Deployment's manifest into the directory.
func (f *fixture) writeDeployment(t *testing.T, text string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(f.dir, "deployment.yaml"), []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

// changeByOthers makes the Deployment's other managers: kubectl-edit
// edits the image (Update), an autoscaler sets replicas through the scale
// subresource, and team-b applies the team label with syncd's value.
func (f *fixture) changeByOthers(t *testing.T, cl reconcile.Cluster) {
	t.Helper()
	ctx := context.Background()
	ri := cl.Dynamic.Resource(deploymentsGVR).Namespace(f.ns)
	patch := []byte(`{"spec":{"template":{"spec":{"containers":[{"name":"web","image":"nginx:1.28-hotfix"}]}}}}`)
	if _, err := ri.Patch(ctx, "web", types.StrategicMergePatchType, patch, metav1.PatchOptions{FieldManager: "kubectl-edit"}); err != nil {
		t.Fatal(err)
	}
	scale := []byte(`{"spec":{"replicas":5}}`)
	if _, err := ri.Patch(ctx, "web", types.MergePatchType, scale, metav1.PatchOptions{FieldManager: "autoscaler"}, "scale"); err != nil {
		t.Fatal(err)
	}
	label := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apps/v1", "kind": "Deployment",
		"metadata": map[string]any{"name": "web", "namespace": f.ns, "labels": map[string]any{"team": "payments"}},
	}}
	if _, err := ri.Apply(ctx, "web", label, metav1.ApplyOptions{FieldManager: "team-b"}); err != nil {
		t.Fatal(err)
	}
}

// get fetches a path of the fixture's UI and returns the status and body.
func (f *fixture) get(t *testing.T, path string) (int, string, http.Header) {
	t.Helper()
	return httpGet(t, f.httpSrv.Client(), f.httpSrv.URL+path)
}

// httpGet fetches url with client (a loopback server's own: the test
// binary's default transport refuses every request).
func httpGet(t *testing.T, client *http.Client, url string) (int, string, http.Header) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	buf, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(buf), resp.Header
}

// runnerDynamic is the fixture's admin dynamic client.
func (f *fixture) runnerDynamic(t *testing.T) dynamic.Interface {
	t.Helper()
	return f.cluster.Dynamic
}

// appObject installs the App CRD and makes an App "shop" in the
// fixture's namespace with the status a controller writes: Ready, a
// revision, counts of objects, conflicts and drift.
func (f *fixture) appObject(t *testing.T, cl reconcile.Cluster) {
	t.Helper()
	ctx := context.Background()
	out, err := exec.Command(filepath.Join(env.BinDir, "kubectl"), "--kubeconfig", env.Kubeconfig, "apply", "--server-side", "-k", "../../manifests/crds").CombinedOutput()
	if err != nil {
		t.Fatalf("kubectl apply -k manifests/crds: %v\n%s", err, out)
	}
	app := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "syncd.dev/v1alpha1", "kind": "App",
		"metadata": map[string]any{"name": "shop", "namespace": f.ns},
		"spec":     map[string]any{"sourceRef": map[string]any{"kind": "GitSource", "name": "shop"}},
	}}
	ri := cl.Dynamic.Resource(v1alpha1.AppResource).Namespace(f.ns)
	var created *unstructured.Unstructured
	reconciletest.Eventually(t, "the App CRD served", func() (bool, string) {
		created, err = ri.Create(ctx, app, metav1.CreateOptions{})
		return err == nil, fmt.Sprint(err)
	})
	now := time.Now().UTC().Format(time.RFC3339)
	created.Object["status"] = map[string]any{
		"conditions":            []any{map[string]any{"type": "Ready", "status": "True", "reason": "ReconciliationSucceeded", "message": "applied revision main@sha1:4f2c9a1e", "lastTransitionTime": now}},
		"lastAppliedRevision":   "main@sha1:4f2c9a1e7d3b5c6a8f90",
		"lastReconcileTime":     now,
		"lastAttemptedRevision": "main@sha1:4f2c9a1e7d3b5c6a8f90",
		"objects":               map[string]any{"total": 7, "changed": 3, "conflicts": 1, "failed": 0, "handoffsPending": 1},
		"handoffs":              []any{map[string]any{"object": "apps/Deployment " + f.ns + "/web", "manager": "syncd-shop", "fields": []any{".spec.replicas"}}},
		"lastPrune":             map[string]any{"time": now, "revision": "main@sha1:4f2c9a1e7d3b5c6a8f90", "spared": 1, "message": "prune refused: 1 object would go (budget)"},
		"drift":                 map[string]any{"findings": 2, "overlaps": 0, "time": now, "revision": "main@sha1:4f2c9a1e7d3b5c6a8f90"},
	}
	if _, err := ri.UpdateStatus(ctx, created, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}
