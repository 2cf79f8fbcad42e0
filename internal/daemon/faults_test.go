package daemon_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus/testutil"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"

	"syncd.dev/syncd/internal/daemon"
	"syncd.dev/syncd/internal/inventory"
	"syncd.dev/syncd/internal/reconcile"
	"syncd.dev/syncd/internal/reconcile/reconciletest"
	"syncd.dev/syncd/internal/testenv/gitserver"
)

// requests counts the requests one client sends, by verb and object, and
// can run a hook before a request goes out (to stop the API server at an
// exact point of a sync).
type requests struct {
	rt http.RoundTripper

	mu      sync.Mutex
	writes  map[string]int // "PATCH configmaps/NAME" → count
	deleted []string       // names of deleted configmaps
	before  func(*http.Request)
}

// wrap returns a copy of cfg whose requests r counts.
func (r *requests) wrap(cfg *rest.Config) *rest.Config {
	c := rest.CopyConfig(cfg)
	c.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		r.rt = rt
		return r
	})
	return c
}

// RoundTrip implements http.RoundTripper.
func (r *requests) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Method != http.MethodGet {
		r.mu.Lock()
		if r.writes == nil {
			r.writes = map[string]int{}
		}
		obj := objectOfPath(req.URL.Path)
		r.writes[req.Method+" "+obj+postedName(req)]++
		if req.Method == http.MethodDelete && strings.HasPrefix(obj, "configmaps/") {
			r.deleted = append(r.deleted, strings.TrimPrefix(obj, "configmaps/"))
		}
		hook := r.before
		r.mu.Unlock()
		if hook != nil {
			hook(req)
		}
	}
	return r.rt.RoundTrip(req)
}

// postedName is "/NAME" for a POST (a create) of an object named in its
// JSON body, else "": a create's path names only the collection.
func postedName(req *http.Request) string {
	if req.Method != http.MethodPost || req.GetBody == nil {
		return ""
	}
	body, err := req.GetBody()
	if err != nil {
		return ""
	}
	defer body.Close()
	var obj struct {
		Metadata struct{ Name string } `json:"metadata"`
	}
	if json.NewDecoder(body).Decode(&obj) != nil || obj.Metadata.Name == "" {
		return ""
	}
	return "/" + obj.Metadata.Name
}

// objectOfPath returns "resource/name" (or "resource") of an API path.
func objectOfPath(p string) string {
	parts := strings.Split(strings.Trim(p, "/"), "/")
	for i, s := range parts {
		if s == "namespaces" && i+2 < len(parts) {
			return strings.Join(parts[i+2:], "/")
		}
	}
	if len(parts) >= 2 {
		return strings.Join(parts[len(parts)-2:], "/")
	}
	return p
}

// configMapWrites returns how many writes went to ConfigMaps.
func (r *requests) configMapWrites() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for k, v := range r.writes {
		if strings.Contains(k, " configmaps") {
			n += v
		}
	}
	return n
}

func (r *requests) deletedNames() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := append([]string(nil), r.deleted...)
	sort.Strings(out)
	return out
}

// configMaps renders n ConfigMaps prefix-000.. with data v=value, one
// document each.
func configMaps(ns, prefix string, n int, value string) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, "---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: %s-%03d\n  namespace: %s\ndata:\n  v: %q\n", prefix, i, ns, value)
	}
	return b.String()
}

// faultRig is one daemon running one app "web" from a repo on a loopback
// Git server, with an inventory (so prune is live), its own metrics,
// Events, and a client whose requests are counted.
type faultRig struct {
	t        *testing.T
	ns       string
	first    string // SHA of the first commit
	srv      *gitserver.Server
	repo     *gitserver.Repo
	cfgPath  string
	reqs     *requests
	inv      *inventory.Manager
	metrics  *daemon.Metrics
	d        *daemon.Daemon
	cancel   context.CancelFunc
	done     chan error
	stopOnce sync.Once
}

type rigOptions struct {
	interval   string
	maxBackoff time.Duration
	// files returns the first commit's files for the app's namespace.
	files func(ns string) map[string][]byte
}

func newFaultRig(t *testing.T, o rigOptions) *faultRig {
	t.Helper()
	ns := env.Namespace(t)
	srv := gitserver.StartTest(t)
	repo := srv.NewTestRepo(t, "app")
	sha, err := repo.Commit("first", o.files(ns))
	if err != nil {
		t.Fatal(err)
	}
	cfgPath := filepath.Join(t.TempDir(), "syncd.yaml")
	cfg := fmt.Sprintf(`apiVersion: syncd/v1alpha1
kind: Config
sources:
- name: repo
  git:
    url: %s
    branch: main
    interval: %s
apps:
- name: web
  source: repo
  path: app
  namespace: %s
`, repo.URL, o.interval, ns)
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	reqs := &requests{}
	cfgREST := reqs.wrap(env.Config)
	cl := clusterAt(t, cfgREST)
	invNS := env.Namespace(t) // the inventory namespace is syncd's own: no app object may live there
	inv := newInventory(t, cfgREST, cl, invNS)
	events := eventRecorder(t)
	metrics := daemon.NewMetrics(nil)
	d, err := daemon.New(daemon.Options{
		ConfigPath:  cfgPath,
		Cluster:     cl,
		Options:     reconcile.Options{CacheDir: t.TempDir(), Inventory: inv},
		Events:      events,
		Metrics:     metrics,
		ConfigCheck: 200 * time.Millisecond,
		MaxBackoff:  o.maxBackoff,
		Logger:      quietLogger(),
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	rig := &faultRig{t: t, ns: ns, first: sha, srv: srv, repo: repo, cfgPath: cfgPath, reqs: reqs, inv: inv, metrics: metrics, d: d, cancel: cancel, done: make(chan error, 1)}
	go func() { rig.done <- d.Run(ctx) }()
	t.Cleanup(rig.stop)
	return rig
}

// stop ends the daemon and waits for it.
func (r *faultRig) stop() {
	r.stopOnce.Do(func() {
		r.cancel()
		<-r.done
	})
}

// pushChangedRevision commits the fault tests' second revision (keep
// changed, gone removed, 200 new ConfigMaps), triggers the source, and
// waits until the fault the test armed has fired (stopped is closed at the
// 20th new object). It returns the revision.
func (r *faultRig) pushChangedRevision(t *testing.T, stopped <-chan struct{}) string {
	t.Helper()
	sha, err := r.repo.Commit("keep changed, gone removed, 200 new", map[string][]byte{
		"app/keep.yaml": []byte(configMaps(r.ns, "keep", 30, "2")),
		"app/gone.yaml": nil,
		"app/new.yaml":  []byte(configMaps(r.ns, "new", 200, "2")),
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.d.Trigger("repo"); err != nil {
		t.Fatal(err)
	}
	select {
	case <-stopped:
	case <-time.After(60 * time.Second):
		t.Fatalf("the sync of the new commit never reached its 20th new object; status=%+v", r.status())
	}
	return sha
}

func (r *faultRig) status() daemon.AppStatus {
	for _, s := range r.d.Status() {
		if s.App == "web" {
			return s
		}
	}
	return daemon.AppStatus{}
}

// liveConfigMap is what the tests check of one live ConfigMap.
type liveConfigMap struct {
	V   string
	UID types.UID
}

// live lists the namespace's ConfigMaps (kube-root-ca.crt left out).
func (r *faultRig) live() (map[string]liveConfigMap, error) {
	list, err := env.Clientset(r.t).CoreV1().ConfigMaps(r.ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	out := map[string]liveConfigMap{}
	for _, cm := range list.Items {
		if cm.Name == "kube-root-ca.crt" {
			continue
		}
		out[cm.Name] = liveConfigMap{V: cm.Data["v"], UID: cm.UID}
	}
	return out, nil
}

// converged reports whether the live ConfigMaps are exactly want
// (name → v) and the app's last reconcile of revision sha succeeded.
func (r *faultRig) converged(want map[string]string, sha string) (bool, string) {
	live, err := r.live()
	if err != nil {
		return false, err.Error()
	}
	got := map[string]string{}
	for n, cm := range live {
		got[n] = cm.V
	}
	s := r.status()
	if diff := cmp.Diff(want, got); diff != "" {
		return false, fmt.Sprintf("status=%+v; ConfigMaps (-want +got):\n%s", s, diff)
	}
	if s.Result != "ok" || s.Revision != sha {
		return false, fmt.Sprintf("status=%+v, want result ok at %s", s, sha)
	}
	return true, ""
}

// inventoryNames returns the names the app's inventory records.
func (r *faultRig) inventoryNames() []string {
	r.t.Helper()
	inv, err := r.inv.Load(context.Background(), "web")
	if err != nil {
		r.t.Fatalf("load inventory of web: %v", err)
	}
	var out []string
	for _, m := range inv.Members {
		out = append(out, m.Name)
	}
	sort.Strings(out)
	return out
}

// want returns name → value for prefix-000..prefix-(n-1).
func want(into map[string]string, prefix string, n int, value string) map[string]string {
	if into == nil {
		into = map[string]string{}
	}
	for i := range n {
		into[fmt.Sprintf("%s-%03d", prefix, i)] = value
	}
	return into
}

func sortedKeys(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// TestDaemonGitServerDown: the Git server answers 503 for several polls
// while a new commit waits on it. The daemon keeps the applied state (no
// write, no delete), reports the source error in its status, metrics and
// an Event, polls no faster than the interval, and applies the waiting
// commit (pruning what left Git) once the server is back.
func TestDaemonGitServerDown(t *testing.T) {
	const interval = 500 * time.Millisecond
	nsFiles := func(ns string, n int, v string) map[string][]byte {
		return map[string][]byte{"app/cms.yaml": []byte(configMaps(ns, "cm", n, v))}
	}
	rig := newFaultRig(t, rigOptions{interval: interval.String(), maxBackoff: time.Second, files: func(ns string) map[string][]byte { return nsFiles(ns, 20, "1") }})
	sha1 := rig.first
	want1 := want(nil, "cm", 20, "1")
	reconciletest.Eventually(t, "first commit applied", func() (bool, string) { return rig.converged(want1, sha1) })
	before, err := rig.live()
	if err != nil {
		t.Fatal(err)
	}
	writesBefore := rig.reqs.configMapWrites()
	sourceErrs := func() float64 {
		return testutil.ToFloat64(rig.metrics.Errors.WithLabelValues("web", "local", "source"))
	}
	errsBefore := sourceErrs()

	// The outage. The next commit (one object fewer, new values) is pushed
	// to the bare repository behind the server's back.
	rig.srv.SetDown(true)
	down := time.Now()
	sha2, err := rig.repo.Commit("nineteen", nsFiles(rig.ns, 19, "2"))
	if err != nil {
		t.Fatal(err)
	}
	reconciletest.Eventually(t, "several failed polls reported", func() (bool, string) {
		s := rig.status()
		return sourceErrs()-errsBefore >= 4 && strings.Contains(s.Error, "Unreachable"),
			fmt.Sprintf("source errors=%v status=%+v", sourceErrs()-errsBefore, s)
	})
	polls := sourceErrs() - errsBefore
	elapsed := time.Since(down)
	// No faster than the interval: at most one poll per interval elapsed
	// (plus the one in flight when the server went down).
	if limit := float64(elapsed/interval) + 2; polls > limit {
		t.Errorf("%v failed polls in %s with interval %s: the daemon polls a down server faster than its interval (limit %v)", polls, elapsed, interval, limit)
	}
	s := rig.status()
	if s.Revision != sha1 {
		t.Errorf("during the outage status revision = %s, want the last good %s", s.Revision, sha1)
	}
	// Not ok next to an error: failed, at the revision in force, as the
	// App controller says Ready=False (SourceFailed) for it.
	if s.Result != reconcile.ResultFailed {
		t.Errorf("during the outage status result = %q, want %q", s.Result, reconcile.ResultFailed)
	}
	after, err := rig.live()
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(before, after); diff != "" {
		t.Errorf("the outage changed live ConfigMaps (-before +after):\n%s", diff)
	}
	if n := rig.reqs.configMapWrites() - writesBefore; n != 0 {
		t.Errorf("%d ConfigMap writes during the outage, want none: %v", n, rig.reqs.writes)
	}
	reconciletest.Eventually(t, "SourceFailed event", func() (bool, string) {
		return hasEvent(t, rig.inv.Namespace(), "SourceFailed", "Unreachable")
	})

	// The server is back: the waiting commit lands, cm-019 is pruned.
	rig.srv.SetDown(false)
	want2 := want(nil, "cm", 19, "2")
	reconciletest.Eventually(t, "waiting commit applied after the outage", func() (bool, string) { return rig.converged(want2, sha2) })
	if s := rig.status(); s.Error != "" {
		t.Errorf("after recovery status error = %q, want none", s.Error)
	}
	if diff := cmp.Diff([]string{"cm-019"}, rig.reqs.deletedNames()); diff != "" {
		t.Errorf("deleted ConfigMaps (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(sortedKeys(want2), rig.inventoryNames()); diff != "" {
		t.Errorf("inventory members (-want +got):\n%s", diff)
	}
	final, err := rig.live()
	if err != nil {
		t.Fatal(err)
	}
	for name, cm := range final {
		if cm.UID != before[name].UID {
			t.Errorf("ConfigMap %s was recreated (uid %s → %s): an update must not delete", name, before[name].UID, cm.UID)
		}
	}
}

// hasEvent reports whether the namespace holds an Event with reason whose
// message contains text.
func hasEvent(t *testing.T, ns, reason, text string) (bool, string) {
	list, err := env.Clientset(t).CoreV1().Events(ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		return false, err.Error()
	}
	var seen []string
	for _, e := range list.Items {
		if e.Reason == reason && strings.Contains(e.Message, text) {
			return true, ""
		}
		seen = append(seen, e.Reason+": "+e.Message)
	}
	return false, "events: " + strings.Join(seen, "; ")
}

// TestDaemonAPIServerRestart stops kube-apiserver in the middle of a sync
// (from inside the daemon's own transport, at the 20th object of the new
// commit) and starts it again. The sync fails and is retried; the objects
// kept across commits are never deleted (same UIDs), only the one that left
// Git is pruned, and the daemon converges to the commit with a consistent
// inventory.
//
// It stops the package's shared API server: it must not run in parallel
// with other tests, and it always leaves the server running.
func TestDaemonAPIServerRestart(t *testing.T) {
	rig := newFaultRig(t, rigOptions{interval: "1h", maxBackoff: time.Second, files: func(ns string) map[string][]byte {
		return map[string][]byte{
			"app/keep.yaml": []byte(configMaps(ns, "keep", 30, "1")),
			"app/gone.yaml": []byte(configMaps(ns, "gone", 1, "1")),
		}
	}})
	sha1 := rig.first
	want1 := want(want(nil, "keep", 30, "1"), "gone", 1, "1")
	reconciletest.Eventually(t, "first commit applied", func() (bool, string) { return rig.converged(want1, sha1) })
	before, err := rig.live()
	if err != nil {
		t.Fatal(err)
	}

	var (
		stopOnce sync.Once
		stopped  = make(chan struct{})
		newSeen  int
	)
	t.Cleanup(func() {
		// Whatever happened, leave the shared API server running.
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		if _, err := env.Clientset(t).Discovery().ServerVersion(); err != nil {
			if err := env.StartAPIServer(ctx); err != nil {
				t.Errorf("restart kube-apiserver: %v", err)
			}
		}
	})
	rig.reqs.mu.Lock()
	rig.reqs.before = func(req *http.Request) {
		if req.Method != http.MethodPatch || !strings.Contains(req.URL.Path, "/configmaps/new-") {
			return
		}
		rig.reqs.mu.Lock()
		newSeen++
		n := newSeen
		rig.reqs.mu.Unlock()
		if n == 20 {
			stopOnce.Do(func() {
				if err := env.StopAPIServer(); err != nil {
					t.Errorf("stop kube-apiserver: %v", err)
				}
				close(stopped)
			})
		}
	}
	rig.reqs.mu.Unlock()

	sha2 := rig.pushChangedRevision(t, stopped)
	reconciletest.Eventually(t, "failed sync reported while the API server is down", func() (bool, string) {
		s := rig.status()
		return s.Result == "failed" && s.Revision == sha2, fmt.Sprintf("status=%+v", s)
	})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := env.StartAPIServer(ctx); err != nil {
		t.Fatalf("restart kube-apiserver: %v", err)
	}

	want2 := want(want(nil, "keep", 30, "2"), "new", 200, "2")
	reconciletest.Eventually(t, "converged after the API server restart", func() (bool, string) { return rig.converged(want2, sha2) })
	after, err := rig.live()
	if err != nil {
		t.Fatal(err)
	}
	for name, cm := range after {
		if b, ok := before[name]; ok && b.UID != cm.UID {
			t.Errorf("ConfigMap %s was deleted and recreated across the restart (uid %s → %s)", name, b.UID, cm.UID)
		}
	}
	if diff := cmp.Diff([]string{"gone-000"}, rig.reqs.deletedNames()); diff != "" {
		t.Errorf("deleted ConfigMaps (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(sortedKeys(want2), rig.inventoryNames()); diff != "" {
		t.Errorf("inventory members (-want +got):\n%s", diff)
	}
	if n := testutil.ToFloat64(rig.metrics.Errors.WithLabelValues("web", "local", "apply")); n < 1 {
		t.Errorf("syncd_reconcile_errors_total{app=web,stage=apply} = %v, want the failed sync counted", n)
	}
}
