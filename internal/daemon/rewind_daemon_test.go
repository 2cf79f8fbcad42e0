package daemon_test

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"syncd.dev/syncd/internal/daemon"
	"syncd.dev/syncd/internal/reconcile"
	"syncd.dev/syncd/internal/reconcile/reconciletest"
)

// daemonOn starts a new Daemon on rig's config, cluster and inventory
// namespace, with its own Source caches, metrics and Events: a restarted
// syncd. It returns the daemon and its metrics; it stops at cleanup.
func daemonOn(t *testing.T, rig *faultRig) (*daemon.Daemon, *daemon.Metrics) {
	t.Helper()
	cl := cluster(t)
	inv := newInventory(t, env.Config, cl, rig.inv.Namespace())
	metrics := daemon.NewMetrics(nil)
	d := launchDaemon(t, daemon.Options{
		ConfigPath:  rig.cfgPath,
		Cluster:     cl,
		Options:     reconcile.Options{CacheDir: t.TempDir(), Inventory: inv},
		Events:      eventRecorder(t),
		Metrics:     metrics,
		ConfigCheck: 200 * time.Millisecond,
	})
	return d, metrics
}

func statusOf(d *daemon.Daemon) daemon.AppStatus { return appStatus(d, "web") }

// TestDaemonRewind: main gains a commit adding an object, then is
// force-pushed back to a sibling of it (a real force-push to the loopback
// Git server). The rewound revision is applied (its new values are live)
// but its prune is refused: the object the dropped commit added stays, and
// stays in the inventory, whose recorded revision stays the last pruned
// one; the rewind is in /status, an Event Rewound and
// syncd_source_rewinds_total. With a restart between the sync and the
// force-push (a new Daemon on the same cluster, empty Git caches) the
// inventory remembers. Setting allowRewinds then lets the prune run.
func TestDaemonRewind(t *testing.T) {
	for name, restart := range map[string]bool{"same daemon": false, "daemon restarted in between": true} {
		t.Run(name, func(t *testing.T) {
			files := func(ns, extra, v string) map[string][]byte {
				return map[string][]byte{"app/cms.yaml": []byte(configMaps(ns, "cm", 4, v)), "app/extra.yaml": []byte(extra)}
			}
			rig := newFaultRig(t, rigOptions{interval: "500ms", maxBackoff: time.Second, files: func(ns string) map[string][]byte { return files(ns, "", "1") }})
			base := rig.first
			reconciletest.Eventually(t, "base applied", func() (bool, string) { return rig.converged(want(nil, "cm", 4, "1"), base) })
			added, err := rig.repo.Commit("add extra", files(rig.ns, configMaps(rig.ns, "extra", 1, "1"), "1"))
			if err != nil {
				t.Fatal(err)
			}
			withExtra := want(want(nil, "cm", 4, "1"), "extra", 1, "1")
			reconciletest.Eventually(t, "extra applied", func() (bool, string) { return rig.converged(withExtra, added) })

			d, metrics := rig.d, rig.metrics
			if restart {
				rig.stop()
			}
			// The force-push: main back to base, then a sibling of added
			// that changes the values and has no extra.
			if _, err := rig.repo.Git("reset", "-q", "--hard", base); err != nil {
				t.Fatal(err)
			}
			// Commit's plain push is refused (not a fast-forward): push
			// by force.
			if _, err := rig.repo.Commit("rewound", files(rig.ns, "", "2")); err == nil {
				t.Fatal("a plain push of the rewound line succeeded; want it refused")
			}
			if _, err := rig.repo.Git("push", "-q", "-f", "origin", "main"); err != nil {
				t.Fatalf("force-push: %v", err)
			}
			rewound, err := rig.repo.Git("rev-parse", "HEAD")
			if err != nil {
				t.Fatal(err)
			}
			if restart {
				d, metrics = daemonOn(t, rig)
			}

			// Applied: the new values are live; refused: extra stays.
			rewoundLive := want(want(nil, "cm", 4, "2"), "extra", 1, "1")
			reconciletest.Eventually(t, "rewound revision applied, prune refused", func() (bool, string) {
				s := statusOf(d)
				ok, state := convergedOn(rig, d, rewoundLive, rewound)
				return ok && s.Rewound != nil, fmt.Sprintf("%s; rewound=%+v", state, s.Rewound)
			})
			s := statusOf(d)
			if diff := cmp.Diff(&daemon.RewindStatus{From: added, To: rewound, Ancestry: "diverged", Since: s.Rewound.Since}, s.Rewound); diff != "" {
				t.Errorf("/status rewound (-want +got):\n%s", diff)
			}
			inv, err := rig.inv.Load(context.Background(), "web")
			if err != nil {
				t.Fatal(err)
			}
			if inv.Revision != added {
				t.Errorf("inventory revision = %s, want the last pruned %s", inv.Revision, added)
			}
			if diff := cmp.Diff(sortedKeys(withExtra), rig.inventoryNames()); diff != "" {
				t.Errorf("inventory members (-want +got):\n%s", diff)
			}
			if got := testutil.ToFloat64(metrics.SourceRewinds.WithLabelValues("web", "local")); got != 1 {
				t.Errorf("syncd_source_rewinds_total{app=web} = %v, want 1", got)
			}
			reconciletest.Eventually(t, "Rewound event", func() (bool, string) {
				return hasEvent(t, rig.inv.Namespace(), "Rewound", "does not descend from "+added[:12])
			})
			// A few more polls of the same revision prune nothing either.
			time.Sleep(1500 * time.Millisecond)
			if ok, state := convergedOn(rig, d, rewoundLive, rewound); !ok {
				t.Errorf("after more polls: %s", state)
			}

			// allowRewinds: the prune runs and the rewound revision is
			// recorded; the rewind clears from /status.
			cfg, err := os.ReadFile(rig.cfgPath)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(rig.cfgPath, append(cfg, "  allowRewinds: true\n"...), 0o644); err != nil {
				t.Fatal(err)
			}
			reconciletest.Eventually(t, "pruned once rewinds are allowed", func() (bool, string) {
				ok, state := convergedOn(rig, d, want(nil, "cm", 4, "2"), rewound)
				inv, err := rig.inv.Load(context.Background(), "web")
				if err != nil {
					return false, err.Error()
				}
				return ok && inv.Revision == rewound && statusOf(d).Rewound == nil, fmt.Sprintf("%s; inventory revision %s; rewound=%+v", state, inv.Revision, statusOf(d).Rewound)
			})
			if diff := cmp.Diff(sortedKeys(want(nil, "cm", 4, "2")), rig.inventoryNames()); diff != "" {
				t.Errorf("inventory members after the allowed prune (-want +got):\n%s", diff)
			}
		})
	}
}

// convergedOn is faultRig.converged for daemon d.
func convergedOn(rig *faultRig, d *daemon.Daemon, wantCMs map[string]string, sha string) (bool, string) {
	live, err := rig.live()
	if err != nil {
		return false, err.Error()
	}
	got := map[string]string{}
	for n, cm := range live {
		got[n] = cm.V
	}
	s := statusOf(d)
	if diff := cmp.Diff(wantCMs, got); diff != "" {
		return false, fmt.Sprintf("status=%+v; ConfigMaps (-want +got):\n%s", s, diff)
	}
	if s.Result != "ok" || s.Revision != sha {
		return false, fmt.Sprintf("status=%+v, want result ok at %s", s, sha)
	}
	return true, ""
}
