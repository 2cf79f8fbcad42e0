package daemon_test

import (
	"fmt"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"syncd.dev/syncd/internal/reconcile/reconciletest"
)

// TestDaemonRapidPushesDuringLargeRender pushes to the loopback Git server
// and triggers a poll after every push while the daemon renders a plain
// app of a few thousand manifest files. Every revision is handed to the app
// with a hold on its tree, so no render loses files to a newer revision:
// no render fails, no apply fails (a partial render would be refused by
// the prune guard or prune what it missed), nothing is deleted, and the
// app ends at the last push with every object.
func TestDaemonRapidPushesDuringLargeRender(t *testing.T) {
	const objects, pushes = 2000, 15
	manifest := func(ns string, i int, v string) []byte {
		return fmt.Appendf(nil, "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm-%04d\n  namespace: %s\ndata:\n  v: %q\n", i, ns, v)
	}
	file := func(i int) string { return fmt.Sprintf("app/d%02d/cm-%04d.yaml", i%40, i) }
	rig := newFaultRig(t, rigOptions{interval: "200ms", files: func(ns string) map[string][]byte {
		files := map[string][]byte{}
		for i := range objects {
			files[file(i)] = manifest(ns, i, "0")
		}
		return files
	}})
	wantValues := map[string]string{}
	for i := range objects {
		wantValues[fmt.Sprintf("cm-%04d", i)] = "0"
	}
	reconciletest.Eventually(t, "first commit applied", func() (bool, string) { return rig.converged(wantValues, rig.first) })

	// Each push changes one object, so every revision is the whole app.
	var last string
	for p := 1; p <= pushes; p++ {
		i := p * 131 % objects
		sha, err := rig.repo.Commit(fmt.Sprintf("push %d", p), map[string][]byte{file(i): manifest(rig.ns, i, fmt.Sprint(p))})
		if err != nil {
			t.Fatal(err)
		}
		wantValues[fmt.Sprintf("cm-%04d", i)] = fmt.Sprint(p)
		last = sha
		if err := rig.d.Trigger("repo"); err != nil {
			t.Fatal(err)
		}
	}
	reconciletest.Eventually(t, "last push applied", func() (bool, string) { return rig.converged(wantValues, last) })

	for _, stage := range []string{"render", "apply", "source"} {
		if n := testutil.ToFloat64(rig.metrics.Errors.WithLabelValues("web", "local", stage)); n != 0 {
			t.Errorf("%v %s errors during the pushes, want none (a tree vanished under a render?)", n, stage)
		}
	}
	if deleted := rig.reqs.deletedNames(); len(deleted) != 0 {
		t.Errorf("%d ConfigMaps deleted during the pushes, want none: %v", len(deleted), deleted)
	}
	if n := len(rig.inventoryNames()); n != objects {
		t.Errorf("inventory has %d members, want %d", n, objects)
	}
}
