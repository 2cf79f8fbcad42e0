package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"

	"syncd.dev/syncd/internal/daemon"
	"syncd.dev/syncd/internal/inventory"
	"syncd.dev/syncd/internal/leader"
	"syncd.dev/syncd/internal/reconcile"
	"syncd.dev/syncd/internal/testenv/gitserver"
)

// leaderFixture is a Git repository with one app "web" of n ConfigMaps
// and the namespaces of the app and of syncd (Lease, inventory).
type leaderFixture struct {
	ns, sysNS string
	repo      *gitserver.Repo
	config    string // the config's YAML
}

func newLeaderFixture(t *testing.T, files map[string][]byte) *leaderFixture {
	t.Helper()
	fx := &leaderFixture{ns: env.Namespace(t), sysNS: env.Namespace(t)}
	srv, err := gitserver.Start(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	if fx.repo, err = srv.NewRepo("app", t.TempDir()); err != nil {
		t.Fatal(err)
	}
	if _, err := fx.repo.Commit("first", files); err != nil {
		t.Fatal(err)
	}
	fx.config = fmt.Sprintf(`apiVersion: syncd/v1alpha1
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
`, fx.repo.URL, fx.ns)
	return fx
}

// configMaps is n ConfigMaps cm-00.. with data.v = v, and one named slow.
func configMaps(n int, v string) map[string][]byte {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, "---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm-%02d\ndata:\n  v: %q\n", i, v)
	}
	fmt.Fprintf(&b, "---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: slow\ndata:\n  v: %q\n", v)
	return map[string][]byte{"app/cms.yaml": []byte(b.String())}
}

// writeConfigFile writes content to a new file and returns its path.
func writeConfigFile(t *testing.T, content string) string {
	t.Helper()
	return filepath.Join(writeFiles(t, map[string]string{"syncd.yaml": content}), "syncd.yaml")
}

// runArgs is the command line of a `syncd run` process of the fixture.
func (fx *leaderFixture) runArgs(t *testing.T, cfgPath string, extra ...string) []string {
	return append([]string{"run", "--config", cfgPath, "--kubeconfig", env.Kubeconfig,
		"--inventory-namespace", fx.sysNS, "--leader-elect-namespace", fx.sysNS,
		"--leader-elect-lease-duration", "3s", "--leader-elect-renew-deadline", "2s", "--leader-elect-retry-period", "500ms",
		"--listen", "127.0.0.1:0", "--cache-dir", t.TempDir()}, extra...)
}

// lease reads a Lease of the fixture (nil when it does not exist).
func (fx *leaderFixture) lease(t *testing.T, name string) *coordinationv1.Lease {
	t.Helper()
	l, err := env.Clientset(t).CoordinationV1().Leases(fx.sysNS).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		return nil
	}
	return l
}

func holder(l *coordinationv1.Lease) string {
	if l == nil || l.Spec.HolderIdentity == nil {
		return ""
	}
	return *l.Spec.HolderIdentity
}

// readyz returns the status code and body of a process's /readyz.
func readyz(addr string) (int, string) {
	resp, err := httpClient.Get("http://" + addr + "/readyz")
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, strings.TrimSpace(string(b))
}

func (p *syncdProcess) addr(t *testing.T) string {
	t.Helper()
	var addr string
	poll(t, "syncd listening", func() (bool, string) {
		a, ok := p.listenAddr()
		addr = a
		return ok, "no \"syncd started\" line yet"
	})
	return addr
}

func (p *syncdProcess) logContains(s string) bool {
	data, _ := os.ReadFile(p.stderr)
	return strings.Contains(string(data), s)
}

// TestRunLeaderCannotRun: the real `syncd run` wins the Lease while its
// config file is invalid (it was valid at start). It releases the Lease at
// once (holder empty, no waiting for expiry), answers /readyz 503 with the
// reason, and a second replica takes the Lease and applies. Once the
// config loads again the first one is a standby again.
func TestRunLeaderCannotRun(t *testing.T) {
	fx := newLeaderFixture(t, configMaps(2, "1"))
	cs := env.Clientset(t)
	ctx := context.Background()
	// Another holder keeps the Lease for a few seconds, so that the
	// first replica starts as a standby.
	now := metav1.NewMicroTime(time.Now())
	if _, err := cs.CoordinationV1().Leases(fx.sysNS).Create(ctx, &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: "syncd"},
		Spec:       coordinationv1.LeaseSpec{HolderIdentity: ptr.To("ghost"), LeaseDurationSeconds: ptr.To[int32](3), AcquireTime: &now, RenewTime: &now},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	cfgA := writeConfigFile(t, fx.config)
	a := startSyncd(t, fx.runArgs(t, cfgA)...)
	addrA := a.addr(t)
	if code, body := readyz(addrA); code != http.StatusOK || body != "ok (standby)" {
		t.Fatalf("/readyz of the standby: %d %q, want 200 \"ok (standby)\"", code, body)
	}
	// The config breaks while the standby waits for the Lease.
	if err := os.WriteFile(cfgA, []byte("apiVersion: syncd/v1alpha1\nkind: Config\napps:\n- name: web\n  source: nowhere\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	poll(t, "the replica wins the Lease, cannot run and says so on /readyz", func() (bool, string) {
		code, body := readyz(addrA)
		return code == http.StatusServiceUnavailable && strings.Contains(body, "cannot run") && strings.Contains(body, "nowhere"), fmt.Sprintf("%d %q", code, body)
	})
	poll(t, "the log says why", func() (bool, string) { return a.logContains("won the Lease but cannot run"), "" })
	// Released, not left to expire: nobody holds it, and it stays so
	// (the replica is no candidate while its config does not load).
	poll(t, "the Lease is released", func() (bool, string) {
		l := fx.lease(t, "syncd")
		return l != nil && holder(l) == "", fmt.Sprintf("holder %q", holder(l))
	})
	time.Sleep(2 * time.Second) // longer than the lease duration and 4 retry periods
	if h := holder(fx.lease(t, "syncd")); h != "" {
		t.Fatalf("the replica that cannot run took the Lease again: holder %q", h)
	}
	if code, _ := readyz(addrA); code != http.StatusServiceUnavailable {
		t.Errorf("/readyz %d while the config does not load, want 503", code)
	}

	// A second replica with a good config takes the released Lease at
	// once and applies.
	released := time.Now()
	b := startSyncd(t, fx.runArgs(t, writeConfigFile(t, fx.config))...)
	poll(t, "the second replica applies", func() (bool, string) {
		cm, err := cs.CoreV1().ConfigMaps(fx.ns).Get(ctx, "cm-00", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return cm.Data["v"] == "1", fmt.Sprintf("data %v", cm.Data)
	})
	t.Logf("second replica applied %s after it started", time.Since(released))
	if h := holder(fx.lease(t, "syncd")); h == "" || !b.logContains("leading: applying") {
		t.Errorf("the second replica applied without holding the Lease (holder %q)", h)
	}

	// The config is fixed: the first replica is a ready standby again.
	if err := os.WriteFile(cfgA, []byte(fx.config), 0o644); err != nil {
		t.Fatal(err)
	}
	poll(t, "the first replica is a standby again", func() (bool, string) {
		code, body := readyz(addrA)
		return code == http.StatusOK && body == "ok (standby)", fmt.Sprintf("%d %q", code, body)
	})
}

// TestRunLeaderLostLeaseExitsNonZero: a sharded `syncd run` holds the
// Lease syncd-shard-K-of-2; another holder takes the Lease over. The
// process stops and exits 1 (not 0), without writing the Lease back.
func TestRunLeaderLostLeaseExitsNonZero(t *testing.T) {
	fx := newLeaderFixture(t, configMaps(2, "1"))
	cs := env.Clientset(t)
	ctx := context.Background()
	shard := daemon.ShardOf("web", 2)
	name := fmt.Sprintf("syncd-shard-%d-of-2", shard)
	p := startSyncd(t, fx.runArgs(t, writeConfigFile(t, fx.config), "--shards", "2", "--shard", fmt.Sprint(shard))...)
	poll(t, "the shard's replica applies", func() (bool, string) {
		_, err := cs.CoreV1().ConfigMaps(fx.ns).Get(ctx, "cm-00", metav1.GetOptions{})
		return err == nil, fmt.Sprint(err)
	})
	if holder(fx.lease(t, name)) == "" {
		t.Fatalf("no holder on Lease %s/%s (the shard Lease is named with the shard count)", fx.sysNS, name)
	}
	// Someone else holds the Lease now. The replica renews it every
	// retry period, so the takeover reads it again on a conflict.
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		l := fx.lease(t, name)
		if l == nil {
			return fmt.Errorf("Lease %s/%s not found", fx.sysNS, name)
		}
		now := metav1.NewMicroTime(time.Now())
		l.Spec.HolderIdentity, l.Spec.RenewTime, l.Spec.LeaseDurationSeconds = ptr.To("ghost"), &now, ptr.To[int32](60)
		_, err := cs.CoordinationV1().Leases(fx.sysNS).Update(ctx, l, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-p.exited:
	case <-time.After(30 * time.Second):
		t.Fatal("syncd run did not exit within 30s of losing its Lease")
	}
	if code := p.cmd.ProcessState.ExitCode(); code != exitError {
		t.Errorf("syncd run exited %d after losing its Lease, want %d", code, exitError)
	}
	if !p.logContains("lost the Lease") {
		t.Errorf("the log does not say the Lease was lost")
	}
	if h := holder(fx.lease(t, name)); h != "ghost" {
		t.Errorf("Lease holder %q after the loss, want the new holder ghost", h)
	}
}

// timedWrites records the non-Lease writes of one replica with when each
// started and ended, and holds the apply of ConfigMap "slow" for delay.
type timedWrites struct {
	rt    http.RoundTripper
	delay time.Duration
	// slowStarted is closed when the slow write started.
	slowStarted chan struct{}
	once        sync.Once

	mu     sync.Mutex
	writes []timedWrite
}

type timedWrite struct {
	what       string
	start, end time.Time
}

func (w *timedWrites) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Method == http.MethodGet || strings.Contains(req.URL.Path, "/leases") {
		return w.rt.RoundTrip(req)
	}
	tw := timedWrite{what: req.Method + " " + req.URL.Path, start: time.Now()}
	if w.delay > 0 && strings.HasSuffix(req.URL.Path, "/configmaps/slow") && req.Method == http.MethodPatch {
		w.once.Do(func() { close(w.slowStarted) })
		select {
		case <-time.After(w.delay):
		case <-req.Context().Done():
		}
	}
	resp, err := w.rt.RoundTrip(req)
	tw.end = time.Now()
	w.mu.Lock()
	w.writes = append(w.writes, tw)
	w.mu.Unlock()
	return resp, err
}

func (w *timedWrites) list() []timedWrite {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]timedWrite(nil), w.writes...)
}

// slowReplica is one in-process `syncd run` with leader election whose
// writes are timed (timedWrites).
type slowReplica struct {
	writes *timedWrites
	d      *daemon.Daemon
	cancel context.CancelFunc
	done   chan error
	once   sync.Once
	err    error
}

func startSlowReplica(t *testing.T, fx *leaderFixture, cfgPath string, f *runFlags, delay time.Duration) *slowReplica {
	t.Helper()
	w := &timedWrites{delay: delay, slowStarted: make(chan struct{})}
	cfg := rest.CopyConfig(env.Config)
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		w.rt = rt
		return w
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
	cl := &cluster{config: cfg, dynamic: dyn, mapper: restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(disc)), namespace: fx.sysNS}
	inv, err := inventory.New(dyn, md, cl.mapper, inventory.Options{Namespace: fx.sysNS})
	if err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	d, err := daemon.New(daemon.Options{
		ConfigPath: cfgPath,
		Cluster:    reconcile.Cluster{Dynamic: dyn, Mapper: cl.mapper, Config: cfg},
		Options:    reconcile.Options{CacheDir: t.TempDir(), Inventory: inv, Concurrency: 2},
		Logger:     log,
		MaxBackoff: time.Second,
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	r := &slowReplica{writes: w, d: d, cancel: cancel, done: make(chan error, 1)}
	go func() { r.done <- runElected(ctx, cl, f, log, d.Run) }()
	t.Cleanup(func() {
		_ = r.stop()
		inv.Stop()
	})
	return r
}

// stop cancels the replica (SIGTERM) and returns what runElected did.
func (r *slowReplica) stop() error {
	r.once.Do(func() {
		r.cancel()
		r.err = <-r.done
	})
	return r.err
}

// TestRunLeaderSIGTERMWaitsForInFlight: the leader is stopped (SIGTERM)
// while one object's apply is held 4 s in its transport. It starts nothing
// new, waits for that apply, and only then releases the Lease: the
// standby acquires it, and sends its first write, after the old leader's
// last write ended. The old leader sends nothing after it returned.
func TestRunLeaderSIGTERMWaitsForInFlight(t *testing.T) {
	fx := newLeaderFixture(t, configMaps(6, "1"))
	cfgPath := writeConfigFile(t, fx.config)
	flags := func() *runFlags {
		return &runFlags{leaderElect: true, leaseNamespace: fx.sysNS, leaseName: "syncd", leaseDuration: 4 * time.Second, renewDeadline: 3 * time.Second, retryPeriod: 500 * time.Millisecond, shards: 1, shutdownGrace: 20 * time.Second}
	}
	const delay = 4 * time.Second
	a := startSlowReplica(t, fx, cfgPath, flags(), delay)
	select {
	case <-a.writes.slowStarted:
	case <-time.After(60 * time.Second):
		t.Fatal("the leader never applied ConfigMap slow")
	}
	b := startSlowReplica(t, fx, cfgPath, flags(), 0)
	time.Sleep(500 * time.Millisecond) // b is a candidate, and a's slow apply is in flight
	sigterm := time.Now()
	errA := a.stop()
	returned := time.Now()
	t.Logf("stopped leader returned %s after SIGTERM", returned.Sub(sigterm))
	if errA != nil {
		t.Errorf("stopped leader returned %v, want nil (drained within the grace period)", errA)
	}
	writesA := a.writes.list()
	var slow, lastA timedWrite
	for _, w := range writesA {
		if strings.HasSuffix(w.what, "/configmaps/slow") {
			slow = w
		}
		if w.end.After(lastA.end) {
			lastA = w
		}
	}
	switch {
	case slow.end.IsZero():
		t.Errorf("the stopped leader returned while its held apply was still in flight")
	case slow.end.Before(sigterm.Add(2 * time.Second)):
		t.Errorf("the held apply was cut: it ended %s after SIGTERM, want about %s", slow.end.Sub(sigterm), delay-500*time.Millisecond)
	}
	if returned.Before(lastA.end) {
		t.Errorf("the stopped leader returned before its last write (%s) ended", lastA.what)
	}

	// The next commit is applied by b, which took the Lease only after a
	// released it.
	if _, err := fx.repo.Commit("second", configMaps(6, "2")); err != nil {
		t.Fatal(err)
	}
	cs := env.Clientset(t)
	poll(t, "the standby applies the next commit", func() (bool, string) {
		cm, err := cs.CoreV1().ConfigMaps(fx.ns).Get(context.Background(), "slow", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return cm.Data["v"] == "2", fmt.Sprintf("data %v", cm.Data)
	})
	l := fx.lease(t, "syncd")
	if l == nil || l.Spec.AcquireTime == nil {
		t.Fatal("no Lease with an acquire time")
	}
	if acquired := l.Spec.AcquireTime.Time; acquired.Before(lastA.end) {
		t.Errorf("the standby acquired the Lease %s before the old leader's last write ended", lastA.end.Sub(acquired))
	}
	writesB := b.writes.list()
	if len(writesB) == 0 {
		t.Fatal("the new leader sent no write")
	}
	if first := writesB[0]; first.start.Before(lastA.end) {
		t.Errorf("the new leader's first write (%s) started %s before the old leader's last write (%s) ended", first.what, lastA.end.Sub(first.start), lastA.what)
	}
	if n := len(a.writes.list()); n != len(writesA) {
		t.Errorf("the stopped leader sent %d write(s) after it returned", n-len(writesA))
	}
	if errors.Is(errA, leader.ErrLeaseLost) {
		t.Errorf("the stopped leader reports a lost Lease")
	}
}

// TestRunLeaderSIGTERMGraceRunsOut: the leader is stopped while one apply
// is held 4 s, with a grace period of 1 s. It returns exit 1 after the
// grace period without releasing the Lease, and the standby cannot take
// the Lease before the held apply ended (in a process the exit cuts it;
// here, in-process, the Lease is released once it ended).
func TestRunLeaderSIGTERMGraceRunsOut(t *testing.T) {
	fx := newLeaderFixture(t, configMaps(2, "1"))
	cfgPath := writeConfigFile(t, fx.config)
	flags := func(grace time.Duration) *runFlags {
		return &runFlags{leaderElect: true, leaseNamespace: fx.sysNS, leaseName: "syncd", leaseDuration: 4 * time.Second, renewDeadline: 3 * time.Second, retryPeriod: 500 * time.Millisecond, shards: 1, shutdownGrace: grace}
	}
	const delay, grace = 4 * time.Second, time.Second
	a := startSlowReplica(t, fx, cfgPath, flags(grace), delay)
	select {
	case <-a.writes.slowStarted:
	case <-time.After(60 * time.Second):
		t.Fatal("the leader never applied ConfigMap slow")
	}
	holderA := holder(fx.lease(t, "syncd"))
	b := startSlowReplica(t, fx, cfgPath, flags(20*time.Second), 0)
	sigterm := time.Now()
	err := a.stop()
	took := time.Since(sigterm)
	t.Logf("stopped leader returned %s after SIGTERM: %v", took, err)
	var ce *exitCodeError
	if !errors.As(err, &ce) || ce.code != exitError {
		t.Errorf("stopped leader returned %v, want exit %d (work outlived the grace period)", err, exitError)
	}
	if took < grace || took > delay-time.Second {
		t.Errorf("stopped leader returned %s after SIGTERM, want after the grace period %s and well before the held apply ends (%s)", took, grace, delay)
	}
	if h := holder(fx.lease(t, "syncd")); h != holderA {
		t.Errorf("Lease holder %q when the grace period ran out, want still %q (not released while the apply is in flight)", h, holderA)
	}
	poll(t, "the standby takes over", func() (bool, string) { return len(b.d.Status()) > 0, "" })
	var slow timedWrite
	for _, w := range a.writes.list() {
		if strings.HasSuffix(w.what, "/configmaps/slow") {
			slow = w
		}
	}
	if slow.end.IsZero() {
		t.Fatal("the held apply never ended")
	}
	if acquired := fx.lease(t, "syncd").Spec.AcquireTime.Time; acquired.Before(slow.end) {
		t.Errorf("the standby acquired the Lease %s before the held apply ended", slow.end.Sub(acquired))
	}
}

// TestRunShardLayoutsExcludeEachOther: a replica of a 3-shard layout wins
// its Lease (syncd-shard-K-of-3) while a leader of the 2-shard layout
// still renews syncd-shard-0-of-2. It holds its Lease but applies nothing
// until that Lease is no longer renewed, then applies.
func TestRunShardLayoutsExcludeEachOther(t *testing.T) {
	fx := newLeaderFixture(t, configMaps(1, "1"))
	cs := env.Clientset(t)
	ctx := context.Background()
	leases := cs.CoordinationV1().Leases(fx.sysNS)
	acquired := metav1.NewMicroTime(time.Now().Add(-time.Minute))
	old, err := leases.Create(ctx, &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: "syncd-shard-0-of-2"},
		Spec:       coordinationv1.LeaseSpec{HolderIdentity: ptr.To("old-layout"), LeaseDurationSeconds: ptr.To[int32](2), AcquireTime: &acquired, RenewTime: &acquired},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// The old layout's leader renews every 500 ms until it stops.
	renew := func() {
		now := metav1.NewMicroTime(time.Now())
		old.Spec.RenewTime = &now
		if old, err = leases.Update(ctx, old, metav1.UpdateOptions{}); err != nil {
			t.Error(err)
		}
	}
	renew()
	stopOld := make(chan struct{})
	oldStopped := make(chan struct{})
	go func() {
		defer close(oldStopped)
		for {
			select {
			case <-stopOld:
				return
			case <-time.After(500 * time.Millisecond):
				renew()
			}
		}
	}()
	shard := daemon.ShardOf("web", 3)
	name := leader.LeaseName("syncd", 3, shard)
	f := &runFlags{leaderElect: true, leaseNamespace: fx.sysNS, leaseName: "syncd", leaseDuration: 3 * time.Second, renewDeadline: 2 * time.Second, retryPeriod: 500 * time.Millisecond, shards: 3, shard: shard, shutdownGrace: 20 * time.Second}
	r := startSlowReplica(t, fx, writeConfigFile(t, fx.config), f, 0)
	poll(t, "the new layout's replica holds "+name, func() (bool, string) {
		h := holder(fx.lease(t, name))
		return h != "", fmt.Sprintf("holder %q", h)
	})
	time.Sleep(3 * time.Second) // several checks while the old layout runs
	if n := len(r.writes.list()); n != 0 || len(r.d.Status()) != 0 {
		t.Fatalf("the new layout's replica wrote %d time(s) (status %v) while the old layout's Lease was renewed", n, r.d.Status())
	}
	close(stopOld)
	<-oldStopped
	stopped := time.Now()
	poll(t, "the new layout applies once the old Lease expired", func() (bool, string) {
		_, err := cs.CoreV1().ConfigMaps(fx.ns).Get(ctx, "cm-00", metav1.GetOptions{})
		return err == nil, fmt.Sprint(err)
	})
	if first := r.writes.list()[0]; first.start.Before(stopped.Add(time.Second)) {
		t.Errorf("the new layout's first write (%s) came %s after the old layout's last renewal, before its Lease (2 s) expired", first.what, first.start.Sub(stopped))
	}
}
