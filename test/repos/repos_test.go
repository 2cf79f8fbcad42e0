package repos

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"

	"syncd.dev/syncd/internal/testenv/gitserver"
)

// apps are the fixture repository's apps: each path is an app of the one
// repository, the way teams keep several apps side by side.
var apps = []struct{ name, path, namespace string }{
	{"monitoring", "monitoring", "mon"},                  // plain YAML with List documents, a CRD and its resource
	{"shop", "shop/overlays/production", "shop-prod"},    // overlay of ../../base with ../../components
	{"platform", "platform/cluster-install", "platform"}, // ../crds and ../namespace-install
	{"other", "other", "default"},                        // another team's app next to them
}

// result is what one syncd invocation printed and returned.
type result struct {
	code           int
	stdout, stderr string
}

func (r result) String() string {
	return fmt.Sprintf("exit %d\n--- stdout\n%s--- stderr\n%s", r.code, r.stdout, r.stderr)
}

// fixture is the fixture repository served over HTTP and a syncd.yaml
// naming its apps.
type fixture struct {
	repo   *gitserver.Repo
	config string
	cache  string
	home   string
}

// newFixture commits testdata/repo to a Git server on loopback and writes a
// syncd.yaml with every app of it and a webhook alert sink at alertURL.
func newFixture(t *testing.T, alertURL string) *fixture {
	t.Helper()
	tmp := t.TempDir()
	srv, err := gitserver.Start(filepath.Join(tmp, "git"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	repo, err := srv.NewRepo("fixtures", filepath.Join(tmp, "work"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.CopyFS(repo.Work, os.DirFS("testdata/repo")); err != nil {
		t.Fatal(err)
	}
	if _, err := repo.Commit("the fixture repository", nil); err != nil {
		t.Fatal(err)
	}
	f := &fixture{repo: repo, config: filepath.Join(tmp, "syncd.yaml"), cache: filepath.Join(tmp, "cache"), home: filepath.Join(tmp, "home")}
	writeFile(t, filepath.Join(tmp, "alert-url"), alertURL)
	writeFile(t, filepath.Join(tmp, "alert-hmac"), "fixture-key")
	var b strings.Builder
	fmt.Fprintf(&b, "apiVersion: syncd/v1alpha1\nkind: Config\nsources:\n- name: repo\n  git: {url: %q, branch: main, interval: 1s}\napps:\n", repo.URL)
	for _, a := range apps {
		fmt.Fprintf(&b, "- name: %s\n  source: repo\n  path: %s\n  namespace: %s\n", a.name, a.path, a.namespace)
	}
	b.WriteString("alerts:\n- name: on-call\n  type: webhook\n  urlFile: alert-url\n  hmacKeyFile: alert-hmac\n  events: [drift]\n")
	writeFile(t, f.config, b.String())
	return f
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}

// args adds what every command of the fixture needs.
func (f *fixture) args(args ...string) []string {
	return append(args, "--config", f.config, "--kubeconfig", env.Kubeconfig, "--cache-dir", f.cache)
}

// syncd runs the syncd binary.
func (f *fixture) syncd(t *testing.T, args ...string) result {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), "HOME="+f.home, "POD_NAMESPACE="+inventoryNamespace)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("syncd %v: %v", args, err)
	}
	return result{code: code, stdout: out.String(), stderr: errOut.String()}
}

// inventoryNamespace holds the apps' inventories (syncd's default).
const inventoryNamespace = "syncd-system"

// TestRepositoryShapes syncs every app of the fixture repository and
// checks that a clean sync stays clean for every command and for the
// daemon, and that a real out-of-band edit is still found with its
// culprit by syncd drift and by the daemon's alert.
func TestRepositoryShapes(t *testing.T) {
	ctx := context.Background()
	cs := env.Clientset(t)
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: inventoryNamespace}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	alerts := startReceiver(t)
	f := newFixture(t, alerts.url)

	first := f.syncd(t, f.args("apply")...)
	t.Logf("first apply:\n%s", first)
	if first.code != 0 {
		t.Fatalf("first apply: want exit 0\n%s", first)
	}
	// Let the controllers do their part (ReplicaSets, status, the HPA's
	// /scale write) before the second apply, as in a cluster.
	waitHPAScaled(t, "mon", "dashboards", 2)

	second := f.syncd(t, f.args("apply")...)
	if second.code != 0 {
		t.Fatalf("second apply: want exit 0\n%s", second)
	}
	for _, line := range strings.Split(second.stdout, "\n") {
		if strings.HasSuffix(line, " created") || strings.Contains(line, " configured") {
			t.Errorf("second apply wrote: %q\n%s", line, second)
		}
	}
	for _, a := range apps {
		if r := f.syncd(t, f.args("plan", "--app", a.name)...); r.code != 0 {
			t.Errorf("plan %s right after the sync: want exit 0\n%s", a.name, r)
		}
	}
	if r := f.syncd(t, f.args("drift")...); r.code != 0 {
		t.Errorf("drift right after the sync: want exit 0 (no finding)\n%s", r)
	}

	d := startDaemon(t, f)
	d.waitSynced(t)
	time.Sleep(10 * time.Second) // the window: no alert may arrive in it
	if got := alerts.drift(); len(got) > 0 {
		t.Errorf("the daemon sent %d drift alert(s) within 10 s of a clean sync:\n%s", len(got), strings.Join(got, "\n"))
	}

	// Real changes, one per app: someone edits a declared field by hand.
	dyn, err := dynamic.NewForConfig(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range handEdits {
		if _, err := dyn.Resource(e.gvr).Namespace(e.namespace).Patch(ctx, e.name, types.MergePatchType, []byte(e.patch), metav1.PatchOptions{FieldManager: "kubectl-edit"}); err != nil {
			t.Fatalf("hand edit of %s %s/%s: %v", e.gvr.Resource, e.namespace, e.name, err)
		}
	}
	for _, e := range handEdits {
		alert := alerts.waitFor(t, func(a alertBody) bool { return e.alerted(a) })
		t.Logf("app %s: the daemon's alert: %s", e.app, alert.Summary)
	}
	d.stop(t)

	for _, e := range handEdits {
		r := f.syncd(t, f.args("drift", "--app", e.app)...)
		if r.code != 2 {
			t.Errorf("drift --app %s after the hand edit: want exit 2\n%s", e.app, r)
			continue
		}
		if !strings.Contains(r.stdout, e.path) || !strings.Contains(r.stdout, "kubectl-edit") {
			t.Errorf("drift --app %s does not name %s and its culprit\n%s", e.app, e.path, r)
		}
		if n := strings.Count(strings.TrimSpace(r.stdout), "\n") + 1; n != 1 {
			t.Errorf("drift --app %s after one hand edit: want 1 finding, got %d\n%s", e.app, n, r)
		}
	}
}

// handEdit is an out-of-band change of one declared field of an app.
type handEdit struct {
	app             string
	gvr             schema.GroupVersionResource
	namespace, name string
	patch           string // a JSON merge patch
	path            string // the field it changes, as findings name it
}

var handEdits = []handEdit{
	{"monitoring", schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}, "mon", "dashboards",
		`{"spec":{"minReadySeconds":30}}`, ".spec.minReadySeconds"},
	{"shop", schema.GroupVersionResource{Version: "v1", Resource: "services"}, "shop-prod", "frontend",
		`{"spec":{"type":"NodePort"}}`, ".spec.type"},
	{"platform", schema.GroupVersionResource{Group: "platform.syncd.test", Version: "v1alpha1", Resource: "widgets"}, "platform", "default",
		`{"spec":{"paused":true}}`, ".spec.paused"},
	{"other", schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}, "default", "other-settings",
		`{"data":{"mode":"clustered"}}`, ".data.mode"},
}

// alerted reports whether a names this edit: an open drift alert of its
// object with the field and kubectl-edit as the culprit.
func (e handEdit) alerted(a alertBody) bool {
	if a.Type != "drift" || a.State != "open" || a.Object.Namespace != e.namespace || a.Object.Name != e.name {
		return false
	}
	for _, fl := range a.Fields {
		if fl.Path == e.path && fl.Culprit != nil && fl.Culprit.Manager == "kubectl-edit" {
			return true
		}
	}
	return false
}

// waitHPAScaled waits until the HPA controller has scaled the Deployment
// to at least want replicas (through /scale; the Deployment declares none).
func waitHPAScaled(t *testing.T, ns, name string, want int32) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		d, err := env.Clientset(t).AppsV1().Deployments(ns).Get(context.Background(), name, metav1.GetOptions{})
		if err == nil && d.Spec.Replicas != nil && *d.Spec.Replicas >= want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("Deployment %s/%s was not scaled to %d by its HPA within 60 s (err %v)", ns, name, want, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// daemon is `syncd run` as a child process.
type daemon struct {
	cmd  *exec.Cmd
	log  string
	addr string
	done chan error
}

func startDaemon(t *testing.T, f *fixture) *daemon {
	t.Helper()
	d := &daemon{log: filepath.Join(t.TempDir(), "syncd-run.log"), done: make(chan error, 1)}
	logf, err := os.Create(d.log)
	if err != nil {
		t.Fatal(err)
	}
	d.cmd = exec.Command(bin, f.args("run", "--listen", "127.0.0.1:0", "--leader-elect=false")...)
	d.cmd.Env = append(os.Environ(), "HOME="+f.home, "POD_NAMESPACE="+inventoryNamespace)
	d.cmd.Stdout, d.cmd.Stderr = logf, logf
	d.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := d.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { d.done <- d.cmd.Wait(); logf.Close() }()
	t.Cleanup(func() { d.stop(t) })
	d.addr = d.waitLogged(t, "syncd started", "listen")
	return d
}

// waitLogged waits for a JSON log line with msg and returns its key.
func (d *daemon) waitLogged(t *testing.T, msg, key string) string {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if v := d.logged(msg, key); v != "" {
			return v
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("syncd run did not log %q with %q within 30 s\n%s", msg, key, d.logText())
	return ""
}

func (d *daemon) logged(msg, key string) string {
	fh, err := os.Open(d.log)
	if err != nil {
		return ""
	}
	defer fh.Close()
	sc := bufio.NewScanner(fh)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var line map[string]any
		if json.Unmarshal(sc.Bytes(), &line) == nil && line["msg"] == msg {
			if v, ok := line[key].(string); ok {
				return v
			}
		}
	}
	return ""
}

func (d *daemon) logText() string {
	b, _ := os.ReadFile(d.log)
	return string(b)
}

// waitSynced waits until /status shows every app's first reconcile ok.
func (d *daemon) waitSynced(t *testing.T) {
	t.Helper()
	deadline := time.Now().Add(90 * time.Second)
	var last string
	for time.Now().Before(deadline) {
		var st struct {
			Apps []struct {
				App, Result, Error string
			} `json:"apps"`
		}
		resp, err := http.Get("http://" + d.addr + "/status")
		if err == nil {
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			last = string(body)
			if json.Unmarshal(body, &st) == nil && len(st.Apps) == len(apps) {
				ok := 0
				for _, a := range st.Apps {
					switch a.Result {
					case "ok":
						ok++
					case "failed", "conflicts", "unhealthy":
						t.Fatalf("daemon: app %s is %s: %s\n%s", a.App, a.Result, a.Error, d.logText())
					}
				}
				if ok == len(apps) {
					return
				}
			}
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Fatalf("daemon: apps not synced within 90 s; /status:\n%s\nlog:\n%s", last, d.logText())
}

// stop sends SIGTERM and waits for the daemon to exit.
func (d *daemon) stop(t *testing.T) {
	t.Helper()
	if d.cmd.ProcessState != nil {
		return
	}
	_ = d.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-d.done:
	case <-time.After(20 * time.Second):
		_ = d.cmd.Process.Kill()
		<-d.done
	}
}

// alertBody is the part of a syncd.dev/alert/v1 body the test reads.
type alertBody struct {
	Type, State, Summary string
	Object               struct{ Kind, Namespace, Name string }
	Fields               []struct {
		Path, Class string
		Culprit     *struct{ Manager string }
	}
}

// receiver is a webhook endpoint on loopback keeping every alert.
type receiver struct {
	url    string
	mu     sync.Mutex
	alerts []alertBody
}

func startReceiver(t *testing.T) *receiver {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	r := &receiver{url: "http://" + l.Addr().String() + "/alerts"}
	srv := &http.Server{ReadHeaderTimeout: 5 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		var a alertBody
		if err := json.NewDecoder(req.Body).Decode(&a); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		r.mu.Lock()
		r.alerts = append(r.alerts, a)
		r.mu.Unlock()
	})}
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(func() { _ = srv.Close() })
	return r
}

// drift returns the summary of every drift alert received.
func (r *receiver) drift() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, a := range r.alerts {
		if a.Type == "drift" {
			fields := []string{}
			for _, f := range a.Fields {
				fields = append(fields, f.Path+" ("+f.Class+")")
			}
			out = append(out, a.State+": "+a.Summary+": "+strings.Join(fields, ", "))
		}
	}
	return out
}

// waitFor waits up to 30 s for an alert that match accepts.
func (r *receiver) waitFor(t *testing.T, match func(alertBody) bool) alertBody {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		r.mu.Lock()
		for _, a := range r.alerts {
			if match(a) {
				r.mu.Unlock()
				return a
			}
		}
		r.mu.Unlock()
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("no matching alert within 30 s; received:\n%s", strings.Join(r.drift(), "\n"))
	return alertBody{}
}
