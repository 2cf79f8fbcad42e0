package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"

	"syncd.dev/syncd/internal/daemon"
	"syncd.dev/syncd/internal/inventory"
	"syncd.dev/syncd/internal/reconcile"
)

// writeCounter counts one replica's write requests (every verb but GET),
// Lease writes apart from the rest.
type writeCounter struct {
	rt http.RoundTripper

	mu           sync.Mutex
	lease, other int
	otherPaths   []string
}

func (c *writeCounter) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Method != http.MethodGet {
		c.mu.Lock()
		if strings.Contains(req.URL.Path, "/leases/") || strings.HasSuffix(req.URL.Path, "/leases") {
			c.lease++
		} else {
			c.other++
			if len(c.otherPaths) < 5 {
				c.otherPaths = append(c.otherPaths, req.Method+" "+req.URL.Path)
			}
		}
		c.mu.Unlock()
	}
	return c.rt.RoundTrip(req)
}

// counts returns Lease writes, other writes and a few of the latter.
func (c *writeCounter) counts() (lease, other int, paths []string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.lease, c.other, append([]string(nil), c.otherPaths...)
}

// replica is one in-process `syncd run` with leader election: its own
// clients (counted), inventory and daemon, run through runElected.
type replica struct {
	name   string
	writes *writeCounter
	d      *daemon.Daemon
	cancel context.CancelFunc
	done   chan error
	once   sync.Once
}

func startReplica(t *testing.T, name, cfgPath, ns string, f *runFlags) *replica {
	t.Helper()
	wc := &writeCounter{}
	cfg := rest.CopyConfig(env.Config)
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		wc.rt = rt
		return wc
	})
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	disc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	md, err := metadata.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	cl := &cluster{config: cfg, dynamic: dyn, mapper: restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(disc)), namespace: ns}
	inv, err := inventory.New(dyn, md, cl.mapper, inventory.Options{Namespace: ns})
	if err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	d, err := daemon.New(daemon.Options{
		ConfigPath: cfgPath,
		Cluster:    reconcile.Cluster{Dynamic: dyn, Mapper: cl.mapper, Config: cfg},
		Options:    reconcile.Options{CacheDir: t.TempDir(), Inventory: inv},
		Logger:     log,
		MaxBackoff: time.Second,
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	r := &replica{name: name, writes: wc, d: d, cancel: cancel, done: make(chan error, 1)}
	go func() { r.done <- runElected(ctx, cl, f, log, d.Run) }()
	t.Cleanup(func() {
		r.stop()
		inv.Stop()
	})
	return r
}

// stop cancels the replica (releasing the Lease) and waits for it.
func (r *replica) stop() {
	r.once.Do(func() {
		r.cancel()
		<-r.done
	})
}

// leads reports whether the replica's daemon is running (it only runs
// while the replica holds the Lease).
func (r *replica) leads() bool { return len(r.d.Status()) > 0 }

// TestRunLeaderElectionRace: two replicas race for one Lease. Only the
// leader writes (every non-GET request of each replica is counted; Lease
// writes apart); when the leader stops, the other takes over within the
// lease duration and applies the next commit.
func TestRunLeaderElectionRace(t *testing.T) {
	ns := env.Namespace(t)
	repo := servedRepo(t, "app")
	cms := func(n int, v string) map[string][]byte {
		var b strings.Builder
		for i := range n {
			fmt.Fprintf(&b, "---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm-%02d\ndata:\n  v: %q\n", i, v)
		}
		return map[string][]byte{"app/cms.yaml": []byte(b.String())}
	}
	if _, err := repo.Commit("first", cms(10, "1")); err != nil {
		t.Fatal(err)
	}
	cfgPath := filepath.Join(writeFiles(t, map[string]string{"syncd.yaml": fmt.Sprintf(`apiVersion: syncd/v1alpha1
kind: Config
sources:
- name: repo
  git:
    url: %s
    branch: main
    interval: 1s
apps:
- name: web
  source: repo
  path: app
  namespace: %s
`, repo.URL, ns)}), "syncd.yaml")

	const leaseDuration = 4 * time.Second
	// The Lease and the inventory live in syncd's own namespace, which no
	// app object may share.
	sysNS := env.Namespace(t)
	flags := func() *runFlags {
		return &runFlags{leaderElect: true, leaseNamespace: sysNS, leaseName: "syncd", leaseDuration: leaseDuration, renewDeadline: 3 * time.Second, retryPeriod: 500 * time.Millisecond, shards: 1}
	}
	a := startReplica(t, "a", cfgPath, sysNS, flags())
	b := startReplica(t, "b", cfgPath, sysNS, flags())

	cs := env.Clientset(t)
	values := func() map[string]string {
		list, err := cs.CoreV1().ConfigMaps(ns).List(context.Background(), metav1.ListOptions{})
		if err != nil {
			return map[string]string{"<error>": err.Error()}
		}
		out := map[string]string{}
		for _, cm := range list.Items {
			if cm.Name != "kube-root-ca.crt" {
				out[cm.Name] = cm.Data["v"]
			}
		}
		return out
	}
	wantValues := func(n int, v string) map[string]string {
		out := map[string]string{}
		for i := range n {
			out[fmt.Sprintf("cm-%02d", i)] = v
		}
		return out
	}
	converged := func(want map[string]string) func() (bool, string) {
		return func() (bool, string) {
			diff := cmp.Diff(want, values())
			return diff == "", "ConfigMaps (-want +got):\n" + diff
		}
	}
	poll(t, "first commit applied by one replica", converged(wantValues(10, "1")))

	leader, follower := a, b
	if b.leads() {
		leader, follower = b, a
	}
	if !leader.leads() || follower.leads() {
		t.Fatalf("want exactly one replica running its daemon: a leads=%v, b leads=%v", a.leads(), b.leads())
	}
	// Let the leader renew its Lease a few times (each renewal is one
	// Lease write) while it keeps polling every second: the follower must
	// still have sent no write but Lease ones.
	leaseBefore, _, _ := leader.writes.counts()
	poll(t, "leader renews its Lease three times", func() (bool, string) {
		l, _, _ := leader.writes.counts()
		return l-leaseBefore >= 3, fmt.Sprintf("%d renewals", l-leaseBefore)
	})
	leaderLease, leaderOther, _ := leader.writes.counts()
	followerLease, followerOther, paths := follower.writes.counts()
	t.Logf("writes while %s leads: leader %d (+%d Lease), follower %d (+%d Lease)", leader.name, leaderOther, leaderLease, followerOther, followerLease)
	if leaderOther == 0 {
		t.Errorf("leader %s sent no write outside its Lease, want the apply's writes", leader.name)
	}
	if followerOther != 0 {
		t.Errorf("follower %s sent %d write(s) outside the Lease, want none: %v", follower.name, followerOther, paths)
	}
	if follower.leads() {
		t.Errorf("follower %s runs its daemon while %s leads", follower.name, leader.name)
	}

	// The leader stops (SIGTERM path: the Lease is released). The next
	// commit is applied by the other replica.
	leader.stop()
	stopped := time.Now()
	_, leaderOther, _ = leader.writes.counts()
	if _, err := repo.Commit("second", cms(9, "2")); err != nil {
		t.Fatal(err)
	}
	poll(t, "follower takes over", func() (bool, string) { return follower.leads(), "" })
	took := time.Since(stopped)
	t.Logf("%s took over %s after %s released the Lease", follower.name, took, leader.name)
	if took > leaseDuration {
		t.Errorf("follower took over %s after the leader stopped, want within the lease duration %s", took, leaseDuration)
	}
	poll(t, "second commit applied by the new leader", converged(wantValues(9, "2")))
	if _, other, _ := leader.writes.counts(); other != leaderOther {
		t.Errorf("the stopped leader sent %d write(s) after it stopped", other-leaderOther)
	}
	if _, other, _ := follower.writes.counts(); other == 0 {
		t.Errorf("the new leader %s applied the second commit without a single counted write", follower.name)
	}
}

// poll waits for cond with a generous deadline.
func poll(t *testing.T, what string, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	last := ""
	for time.Now().Before(deadline) {
		ok, state := cond()
		if ok {
			return
		}
		last = state
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("%s: not reached in 60s; last state: %s", what, last)
}
