package daemon_test

import (
	"context"
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
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"syncd.dev/syncd/internal/daemon"
	"syncd.dev/syncd/internal/inventory"
	"syncd.dev/syncd/internal/reconcile"
	"syncd.dev/syncd/internal/reconcile/reconciletest"
	"syncd.dev/syncd/internal/testenv/gitserver"
)

// nothingLost checks the state after a fault and its recovery: every
// object Git declares exists with Git's values, no object that stayed in
// Git was deleted and created again (same UID as before the fault), only
// the objects that left Git were deleted, the inventory lists exactly the
// declared objects, and the daemon reports the app ok at the revision.
func (r *faultRig) nothingLost(wantLive map[string]string, sha string, before map[string]liveConfigMap, leftGit []string) {
	r.t.Helper()
	reconciletest.Eventually(r.t, "converged after the fault", func() (bool, string) { return r.converged(wantLive, sha) })
	after, err := r.live()
	if err != nil {
		r.t.Fatal(err)
	}
	for name, cm := range after {
		if b, ok := before[name]; ok && b.UID != cm.UID {
			r.t.Errorf("ConfigMap %s was deleted and created again across the fault (uid %s → %s)", name, b.UID, cm.UID)
		}
	}
	deleted := map[string]bool{}
	for _, name := range r.reqs.deletedNames() {
		deleted[name] = true // a delete retried after the fault counts once
	}
	if diff := cmp.Diff(leftGit, sortedKeys(boolKeys(deleted))); diff != "" {
		r.t.Errorf("deleted ConfigMaps (-left Git +deleted):\n%s", diff)
	}
	if diff := cmp.Diff(sortedKeys(wantLive), r.inventoryNames()); diff != "" {
		r.t.Errorf("inventory members (-want +got):\n%s", diff)
	}
	if s := r.status(); s.Result != "ok" || s.Error != "" {
		r.t.Errorf("after recovery status = %+v, want ok without error", s)
	}
}

func boolKeys(m map[string]bool) map[string]string {
	out := make(map[string]string, len(m))
	for k := range m {
		out[k] = ""
	}
	return out
}

// names returns prefix-000..prefix-(n-1).
func names(prefix string, n int) []string {
	return sortedKeys(want(nil, prefix, n, ""))
}

// onNth returns a request hook that runs f once, when the nth request
// of method to a path containing part goes out.
func onNth(r *requests, method, part string, nth int, f func()) func(*http.Request) {
	var (
		once sync.Once
		seen int
	)
	return func(req *http.Request) {
		if req.Method != method || !strings.Contains(req.URL.Path, part) {
			return
		}
		r.mu.Lock()
		seen++
		n := seen
		r.mu.Unlock()
		if n == nth {
			once.Do(f)
		}
	}
}

// TestFaultEtcdRestartMidSync stops etcd in the middle of a sync (at the
// 20th new object of the commit, from inside the daemon's transport) while
// kube-apiserver keeps answering, waits until the API server reports its
// storage down, and starts etcd again. Nothing is lost: the commit lands
// whole, kept objects keep their UIDs, only the object that left Git is
// pruned, the inventory lists every member and the app is ok.
//
// It stops the package's shared etcd: it must not run in parallel with
// other tests, and it always leaves etcd and the API server running.
func TestFaultEtcdRestartMidSync(t *testing.T) {
	rig := newFaultRig(t, rigOptions{interval: "1h", maxBackoff: time.Second, files: func(ns string) map[string][]byte {
		return map[string][]byte{
			"app/keep.yaml": []byte(configMaps(ns, "keep", 30, "1")),
			"app/gone.yaml": []byte(configMaps(ns, "gone", 1, "1")),
		}
	}})
	reconciletest.Eventually(t, "first commit applied", func() (bool, string) {
		return rig.converged(want(want(nil, "keep", 30, "1"), "gone", 1, "1"), rig.first)
	})
	before, err := rig.live()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		// Whatever happened, leave etcd and the API server running.
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		if err := env.StartEtcd(ctx); err != nil && !strings.Contains(err.Error(), "etcd is running") {
			t.Errorf("restart etcd: %v", err)
		}
	})
	stopped := make(chan struct{})
	rig.reqs.mu.Lock()
	rig.reqs.before = onNth(rig.reqs, http.MethodPatch, "/configmaps/new-", 20, func() {
		if err := env.StopEtcd(); err != nil {
			t.Errorf("stop etcd: %v", err)
		}
		close(stopped)
	})
	rig.reqs.mu.Unlock()

	sha2 := rig.pushChangedRevision(t, stopped)
	reconciletest.Eventually(t, "the API server reports its storage down", func() (bool, string) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		down, err := env.APIServerStorageDown(ctx)
		if err != nil {
			return false, err.Error()
		}
		return down, "readyz/etcd still ok"
	})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := env.StartEtcd(ctx); err != nil {
		t.Fatalf("restart etcd: %v", err)
	}
	rig.nothingLost(want(want(nil, "keep", 30, "2"), "new", 200, "2"), sha2, before, []string{"gone-000"})
}

// TestFaultAPIServerRestartMidPrune stops kube-apiserver in the middle of
// a prune (at the 4th of 12 deletions) and starts it again once the daemon
// reports the sync failed. Nothing is lost: every object that left Git is
// deleted and nothing else, the kept objects keep their UIDs and values,
// the inventory lists exactly the kept objects and the app is ok.
//
// It stops the package's shared API server: it must not run in parallel
// with other tests, and it always leaves the server running.
func TestFaultAPIServerRestartMidPrune(t *testing.T) {
	rig := newFaultRig(t, rigOptions{interval: "1h", maxBackoff: time.Second, files: func(ns string) map[string][]byte {
		return map[string][]byte{
			"app/keep.yaml": []byte(configMaps(ns, "keep", 40, "1")),
			"app/gone.yaml": []byte(configMaps(ns, "gone", 12, "1")), // 12 of 52: within the 25% budget
		}
	}})
	reconciletest.Eventually(t, "first commit applied", func() (bool, string) {
		return rig.converged(want(want(nil, "keep", 40, "1"), "gone", 12, "1"), rig.first)
	})
	before, err := rig.live()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		if _, err := env.Clientset(t).Discovery().ServerVersion(); err != nil {
			if err := env.StartAPIServer(ctx); err != nil {
				t.Errorf("restart kube-apiserver: %v", err)
			}
		}
	})
	stopped := make(chan struct{})
	rig.reqs.mu.Lock()
	rig.reqs.before = onNth(rig.reqs, http.MethodDelete, "/configmaps/gone-", 4, func() {
		if err := env.StopAPIServer(); err != nil {
			t.Errorf("stop kube-apiserver: %v", err)
		}
		close(stopped)
	})
	rig.reqs.mu.Unlock()

	sha2, err := rig.repo.Commit("gone removed", map[string][]byte{"app/gone.yaml": nil})
	if err != nil {
		t.Fatal(err)
	}
	if err := rig.d.Trigger("repo"); err != nil {
		t.Fatal(err)
	}
	select {
	case <-stopped:
	case <-time.After(60 * time.Second):
		t.Fatalf("the prune never reached its 4th deletion; status=%+v", rig.status())
	}
	reconciletest.Eventually(t, "failed sync reported while the API server is down", func() (bool, string) {
		s := rig.status()
		return s.Result == "failed" && s.Revision == sha2, fmt.Sprintf("status=%+v", s)
	})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := env.StartAPIServer(ctx); err != nil {
		t.Fatalf("restart kube-apiserver: %v", err)
	}
	rig.nothingLost(want(nil, "keep", 40, "1"), sha2, before, names("gone", 12))
}

// twoSources is a daemon running app "fast" from one Git server and app
// "slow" from the same server behind a Slow proxy, each into its own
// namespace.
type twoSources struct {
	t          *testing.T
	d          *daemon.Daemon
	inv        *inventory.Manager
	fast, slow *gitserver.Repo
	proxy      *gitserver.Slow
	nsFast     string
	nsSlow     string
}

func newTwoSources(t *testing.T) *twoSources {
	t.Helper()
	srv := gitserver.StartTest(t)
	proxy, err := gitserver.NewSlow(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = proxy.Close() })
	ts := &twoSources{t: t, proxy: proxy, nsFast: env.Namespace(t), nsSlow: env.Namespace(t)}
	ts.fast = srv.NewTestRepo(t, "fast")
	ts.slow = srv.NewTestRepo(t, "slow")
	if _, err := ts.fast.Commit("first", map[string][]byte{"app/cms.yaml": []byte(configMaps(ts.nsFast, "cm", 5, "1"))}); err != nil {
		t.Fatal(err)
	}
	if _, err := ts.slow.Commit("first", map[string][]byte{"app/cms.yaml": []byte(configMaps(ts.nsSlow, "cm", 5, "1"))}); err != nil {
		t.Fatal(err)
	}
	cfgPath := filepath.Join(t.TempDir(), "syncd.yaml")
	cfg := fmt.Sprintf(`apiVersion: syncd/v1alpha1
kind: Config
sources:
- name: fast
  git: {url: %s, branch: main, interval: 1s}
- name: slow
  git: {url: %s/slow.git, branch: main, interval: 1s}
apps:
- {name: fast, source: fast, path: app, namespace: %s}
- {name: slow, source: slow, path: app, namespace: %s}
`, ts.fast.URL, proxy.URL, ts.nsFast, ts.nsSlow)
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	cl := clusterAt(t, env.Config)
	ts.inv = newInventory(t, env.Config, cl, env.Namespace(t))
	ts.d = launchDaemon(t, daemon.Options{
		ConfigPath:  cfgPath,
		Cluster:     cl,
		Options:     reconcile.Options{CacheDir: t.TempDir(), Inventory: ts.inv},
		ConfigCheck: 200 * time.Millisecond,
		MaxBackoff:  time.Second,
	})
	return ts
}

// converged reports whether app's namespace holds exactly cm-000..
// cm-(n-1) with v, and the app is ok at sha.
func (ts *twoSources) converged(app, ns string, n int, v, sha string) (bool, string) {
	list, err := env.Clientset(ts.t).CoreV1().ConfigMaps(ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		return false, err.Error()
	}
	got := map[string]string{}
	for _, cm := range list.Items {
		if cm.Name != "kube-root-ca.crt" {
			got[cm.Name] = cm.Data["v"]
		}
	}
	st := appStatus(ts.d, app)
	if diff := cmp.Diff(want(nil, "cm", n, v), got); diff != "" {
		return false, fmt.Sprintf("app %s status=%+v; ConfigMaps (-want +got):\n%s", app, st, diff)
	}
	if st.Result != "ok" || st.Revision != sha || st.Error != "" {
		return false, fmt.Sprintf("app %s status=%+v, want ok at %s", app, st, sha)
	}
	return true, ""
}

func (ts *twoSources) members(app string) []string {
	ts.t.Helper()
	inv, err := ts.inv.Load(context.Background(), app)
	if err != nil {
		ts.t.Fatalf("load inventory of %s: %v", app, err)
	}
	var out []string
	for _, m := range inv.Members {
		out = append(out, m.Name)
	}
	sort.Strings(out)
	return out
}

// TestFaultSlowGitServer: one app's Git host starts answering every
// request after a long delay while another app's answers at once. The
// fast app keeps landing commits (two in a row) while the slow source's
// poll is held; once the slow host answers again its waiting commit
// lands too. Nothing is lost in either app: each ends with exactly its
// commit's objects and values, its inventory lists them, both are ok.
func TestFaultSlowGitServer(t *testing.T) {
	ts := newTwoSources(t)
	headFast, _ := ts.fast.Git("rev-parse", "HEAD")
	headSlow, _ := ts.slow.Git("rev-parse", "HEAD")
	reconciletest.Eventually(t, "fast app's first commit", func() (bool, string) { return ts.converged("fast", ts.nsFast, 5, "1", headFast) })
	reconciletest.Eventually(t, "slow app's first commit", func() (bool, string) { return ts.converged("slow", ts.nsSlow, 5, "1", headSlow) })

	ts.proxy.SetDelay(time.Hour)
	slowSHA, err := ts.slow.Commit("v2, one fewer", map[string][]byte{"app/cms.yaml": []byte(configMaps(ts.nsSlow, "cm", 4, "2"))})
	if err != nil {
		t.Fatal(err)
	}
	reconciletest.Eventually(t, "the slow source's poll held by its Git host", func() (bool, string) {
		return ts.proxy.Held() > 0, "no request held yet"
	})
	for i, v := range []string{"2", "3"} {
		sha, err := ts.fast.Commit("v"+v, map[string][]byte{"app/cms.yaml": []byte(configMaps(ts.nsFast, "cm", 5-i-1, v))})
		if err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		reconciletest.Eventually(t, "fast app's commit v"+v+" while the slow host holds its poll", func() (bool, string) {
			return ts.converged("fast", ts.nsFast, 5-i-1, v, sha)
		})
		// One interval plus jitter, the sync and slack: far below what
		// waiting for the slow host would take.
		if took := time.Since(start); took > 15*time.Second {
			t.Errorf("fast app's commit v%s took %s to land while the slow host held its poll", v, took)
		}
	}
	if ts.proxy.Held() == 0 {
		t.Fatal("the slow host's poll was no longer held when the fast app had landed its commits: the test proves nothing")
	}
	if ok, state := ts.converged("slow", ts.nsSlow, 5, "1", headSlow); !ok {
		t.Fatalf("the slow app moved while its host held every request: %s", state)
	}

	ts.proxy.SetDelay(0)
	reconciletest.Eventually(t, "slow app's waiting commit once its host answers", func() (bool, string) {
		return ts.converged("slow", ts.nsSlow, 4, "2", slowSHA)
	})
	if diff := cmp.Diff(names("cm", 3), ts.members("fast")); diff != "" {
		t.Errorf("fast app's inventory (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(names("cm", 4), ts.members("slow")); diff != "" {
		t.Errorf("slow app's inventory (-want +got):\n%s", diff)
	}
}

// TestFaultDeletesFailMidPrune: deletions of a prune fail at the
// connection (as they do when the API server replica they went to dies
// behind a load balancer), while the inventory write after them reaches a
// live server. The objects whose deletion failed stay in the inventory;
// the daemon must not report the app ok and leave them until the next
// commit or poll: it retries, and converges to the commit with nothing
// lost and nothing left over.
func TestFaultDeletesFailMidPrune(t *testing.T) {
	rig := newFaultRig(t, rigOptions{interval: "1h", maxBackoff: time.Second, files: func(ns string) map[string][]byte {
		return map[string][]byte{
			"app/keep.yaml": []byte(configMaps(ns, "keep", 40, "1")),
			"app/gone.yaml": []byte(configMaps(ns, "gone", 12, "1")),
		}
	}})
	reconciletest.Eventually(t, "first commit applied", func() (bool, string) {
		return rig.converged(want(want(nil, "keep", 40, "1"), "gone", 12, "1"), rig.first)
	})
	before, err := rig.live()
	if err != nil {
		t.Fatal(err)
	}
	var (
		mu     sync.Mutex
		failed = map[string]bool{}
	)
	rig.reqs.mu.Lock()
	rig.reqs.before = func(req *http.Request) {
		name := req.URL.Path[strings.LastIndex(req.URL.Path, "/")+1:]
		if req.Method != http.MethodDelete || !strings.Contains(req.URL.Path, "/configmaps/") || name < "gone-004" || name > "gone-007" {
			return
		}
		mu.Lock()
		defer mu.Unlock()
		if failed[name] {
			return
		}
		failed[name] = true
		// The first deletion of each goes to a port nothing listens on:
		// connection refused, as from a replica that just died.
		req.URL.Host = "127.0.0.1:1"
	}
	rig.reqs.mu.Unlock()

	sha2, err := rig.repo.Commit("gone removed", map[string][]byte{"app/gone.yaml": nil})
	if err != nil {
		t.Fatal(err)
	}
	if err := rig.d.Trigger("repo"); err != nil {
		t.Fatal(err)
	}
	rig.nothingLost(want(nil, "keep", 40, "1"), sha2, before, names("gone", 12))
	mu.Lock()
	defer mu.Unlock()
	if len(failed) != 4 {
		t.Errorf("%d deletions failed at the connection, want 4: the fault did not land", len(failed))
	}
}
