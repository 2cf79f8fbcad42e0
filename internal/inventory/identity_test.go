package inventory

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	rbacv1 "k8s.io/api/rbac/v1"

	"syncd.dev/syncd/internal/applier"
	"syncd.dev/syncd/internal/config"
	"syncd.dev/syncd/internal/identity"
)

// TestTenantWatchesAsItself: the no-op skip's metadata watch of a tenant
// app's members lists and watches as the app's service account. Granted
// list and watch, it syncs; without them it fails (and reads fall back to
// GETs as the account) instead of being served by syncd's own identity.
// An app with serviceAccountName and no Config fails before any read.
func TestTenantWatchesAsItself(t *testing.T) {
	tests := map[string]struct {
		verbs      []string
		wantSynced bool
	}{
		"list and watch granted": {verbs: []string{"get", "list", "watch", "create", "patch"}, wantSynced: true},
		"no list, no watch":      {verbs: []string{"get", "create", "patch"}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			f := newFixture(t, config.App{}, Options{Config: env.Config, SyncTimeout: 3 * time.Second})
			if _, err := env.ServiceAccountConfig(ctx, f.ns, "deployer"); err != nil {
				t.Fatal(err)
			}
			if err := env.Grant(ctx, f.ns, "deployer", f.ns, []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: tc.verbs}}); err != nil {
				t.Fatal(err)
			}
			f.app.ServiceAccountName = "deployer"
			f.mustSync(f.plan(f.cm("a")))

			got := map[string]bool{}
			f.m.tracker.mu.Lock()
			for k, w := range f.m.tracker.watches {
				got[k.user] = w.failed == nil
			}
			f.m.tracker.mu.Unlock()
			want := map[string]bool{identity.User(invApp(f.app).Tenant): tc.wantSynced}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("watches by user, synced (-want +got):\n%s", diff)
			}
			// A second run reads through the account again and skips
			// the unchanged object either way.
			cs, _, err := f.sync(ctx, f.plan(f.cm("a")))
			if err != nil || !cs.OK() {
				t.Fatalf("second sync: %v %v", err, cs)
			}
			for _, c := range cs.Changes {
				if c.Action != applier.Unchanged {
					t.Errorf("second sync: %s %s, want unchanged", c.Object, c.Action)
				}
			}
		})
	}
	// Without get, the read before the apply is refused: the error names
	// the object and what to do.
	t.Run("no get", func(t *testing.T) {
		ctx := context.Background()
		f := newFixture(t, config.App{}, Options{Config: env.Config, SyncTimeout: 3 * time.Second})
		if _, err := env.ServiceAccountConfig(ctx, f.ns, "deployer"); err != nil {
			t.Fatal(err)
		}
		if err := env.Grant(ctx, f.ns, "deployer", f.ns, []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"create", "patch"}}}); err != nil {
			t.Fatal(err)
		}
		f.app.ServiceAccountName = "deployer"
		_, _, err := f.sync(ctx, f.plan(f.cm("a")))
		for _, s := range []string{"ConfigMap " + f.ns + "/a: read before apply", "forbidden", "remove it from the app's manifests"} {
			if err == nil || !strings.Contains(err.Error(), s) {
				t.Errorf("sync without get: %v, want an error saying %q", err, s)
			}
		}
	})
	t.Run("no config", func(t *testing.T) {
		f := newFixture(t, config.App{}, Options{})
		f.app.ServiceAccountName = "deployer"
		if _, err := f.m.Begin(context.Background(), invApp(f.app), f.plan(f.cm("a")), false); err == nil {
			t.Fatal("Begin of a tenant app without Config succeeded; its reads would run as syncd")
		}
	})
}
