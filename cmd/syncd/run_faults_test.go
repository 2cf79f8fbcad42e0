package main

import (
	"context"
	"fmt"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestRunKilledMidPrune runs the real `syncd run` as a process, lets it
// apply 150 objects, pushes a commit that drops 90 of them and kills the
// process with SIGKILL while it deletes them (some deleted, some not, the
// inventory not yet written). A new process waits for the dead one's
// Lease to expire and finishes the prune. Nothing is lost: the 60 kept
// objects keep their UIDs and values, exactly the 90 dropped ones are
// gone, a bystander object is untouched, the inventory lists exactly the
// kept objects (each recorded as applied) and /status reports the app ok.
func TestRunKilledMidPrune(t *testing.T) {
	ns := env.Namespace(t)
	sysNS := env.Namespace(t)
	cs := env.Clientset(t)
	ctx := context.Background()
	if _, err := cs.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "bystander"}, Data: map[string]string{"v": "mine"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	repo := servedRepo(t, "app")
	const n, kept = 150, 60
	cms := func(count int) map[string][]byte {
		var b strings.Builder
		for i := range count {
			fmt.Fprintf(&b, "---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm-%03d\ndata:\n  v: \"1\"\n", i)
		}
		return map[string][]byte{"app/cms.yaml": []byte(b.String())}
	}
	sha1, err := repo.Commit("150 objects", cms(n))
	if err != nil {
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
  pruneBudget: 100
`, repo.URL, ns)}), "syncd.yaml")
	args := []string{"run", "--config", cfgPath, "--kubeconfig", env.Kubeconfig,
		"--inventory-namespace", sysNS, "--leader-elect-namespace", sysNS,
		"--leader-elect-lease-duration", "3s", "--leader-elect-renew-deadline", "2s", "--leader-elect-retry-period", "500ms",
		"--listen", "127.0.0.1:0", "--cache-dir", t.TempDir(),
		// A rate limit low enough that 90 deletes take more than a
		// second: the kill lands mid-prune on any machine.
		"--kube-qps", "50", "--kube-burst", "10", "--concurrency", "4"}

	live := func() (map[string]corev1.ConfigMap, error) {
		list, err := cs.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return nil, err
		}
		out := map[string]corev1.ConfigMap{}
		for _, cm := range list.Items {
			if cm.Name != "kube-root-ca.crt" {
				out[cm.Name] = cm
			}
		}
		return out, nil
	}
	converged := func(p *syncdProcess, count int, sha string) func() (bool, string) {
		return func() (bool, string) {
			addr, ok := p.listenAddr()
			if !ok {
				return false, "no \"syncd started\" line yet"
			}
			m, err := live()
			if err != nil {
				return false, err.Error()
			}
			got := map[string]string{}
			for name, cm := range m {
				got[name] = cm.Data["v"]
			}
			want := map[string]string{"bystander": "mine"}
			for i := range count {
				want[fmt.Sprintf("cm-%03d", i)] = "1"
			}
			st, err := getStatus(addr)
			if err != nil {
				return false, err.Error()
			}
			if diff := cmp.Diff(want, got); diff != "" {
				return false, fmt.Sprintf("status %+v; ConfigMaps (-want +got):\n%s", st, diff)
			}
			if len(st.Apps) != 1 || st.Apps[0].Result != "ok" || st.Apps[0].Revision != sha || st.Apps[0].Error != "" {
				return false, fmt.Sprintf("status %+v, want web ok at %s", st, sha)
			}
			return true, ""
		}
	}

	first := startSyncd(t, args...)
	poll(t, "first process applies the 150 objects", converged(first, n, sha1))
	before, err := live()
	if err != nil {
		t.Fatal(err)
	}
	sha2, err := repo.Commit("drop 90", cms(kept))
	if err != nil {
		t.Fatal(err)
	}
	poll(t, "first process pruning", func() (bool, string) {
		m, err := live()
		if err != nil {
			return false, err.Error()
		}
		return len(m) < n+1, fmt.Sprintf("%d ConfigMaps", len(m))
	})
	if err := first.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-first.exited
	killed, err := live()
	if err != nil {
		t.Fatal(err)
	}
	if len(killed) <= kept+1 {
		t.Fatalf("all %d dropped objects were deleted before the kill: it did not land mid-prune", n-kept)
	}
	t.Logf("killed with %d of %d dropped objects deleted", n+1-len(killed), n-kept)

	second := startSyncd(t, args...)
	poll(t, "restarted syncd finishes the prune", converged(second, kept, sha2))

	final, err := live()
	if err != nil {
		t.Fatal(err)
	}
	for name, cm := range final {
		if before[name].UID != cm.UID {
			t.Errorf("ConfigMap %s was deleted and created again across the kill (uid %s → %s)", name, before[name].UID, cm.UID)
		}
	}
	inv := loadInventory(t, ctx, sysNS, "web")
	var members, wantMembers []string
	for _, m := range inv.Members {
		members = append(members, m.Name)
		if m.ResourceVersion == "" || m.Blocked != "" {
			t.Errorf("inventory member %s: resourceVersion %q, blocked %q; want applied, not blocked", m.Name, m.ResourceVersion, m.Blocked)
		}
	}
	for i := range kept {
		wantMembers = append(wantMembers, fmt.Sprintf("cm-%03d", i))
	}
	sort.Strings(members)
	if diff := cmp.Diff(wantMembers, members); diff != "" {
		t.Errorf("inventory members (-want +got):\n%s", diff)
	}
}
