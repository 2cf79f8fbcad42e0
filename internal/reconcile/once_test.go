package reconcile_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"k8s.io/client-go/rest"

	"syncd.dev/syncd/internal/config"
	"syncd.dev/syncd/internal/reconcile"
	"syncd.dev/syncd/internal/reconcile/reconciletest"
)

// dryRunCounter counts the dry-run requests sent through it.
type dryRunCounter struct {
	next http.RoundTripper
	n    *atomic.Int64
}

func (c dryRunCounter) RoundTrip(req *http.Request) (*http.Response, error) {
	if strings.Contains(req.URL.RawQuery, "dryRun=All") {
		c.n.Add(1)
	}
	return c.next.RoundTrip(req)
}

// TestOnceKeepsNoAcceptedDryRuns: a Runner that applies an app again
// (the daemon's) dry-runs only the refused object the second time, the
// others' outcomes being known; a Runner with Once (the one-shot
// commands', whose process never applies an app twice) keeps no record
// of them, and dry-runs all four again.
func TestOnceKeepsNoAcceptedDryRuns(t *testing.T) {
	for _, tc := range []struct {
		once          bool
		wantSecondRun int64
	}{{once: false, wantSecondRun: 1}, {once: true, wantSecondRun: 4}} {
		t.Run(fmt.Sprintf("once=%v", tc.once), func(t *testing.T) {
			ctx := context.Background()
			ns := env.Namespace(t)
			repo := reconciletest.NewRepo(t)
			repo.Commit("three and one refused", map[string]string{
				"app/a.yaml":       reconciletest.NamedConfigMap(ns, "a", "blue"),
				"app/b.yaml":       reconciletest.NamedConfigMap(ns, "b", "blue"),
				"app/c.yaml":       reconciletest.NamedConfigMap(ns, "c", "blue"),
				"app/refused.yaml": reconciletest.NamedConfigMap(ns+"-missing", "refused", "blue"),
			})
			var dryRuns atomic.Int64
			restCfg := rest.CopyConfig(env.Config)
			restCfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { return dryRunCounter{next: rt, n: &dryRuns} })
			cl := reconciletest.Cluster(t, restCfg)
			cl.Config = restCfg
			app := config.App{Name: "web", Source: "repo", Namespace: ns, AppSpec: config.AppSpec{Path: "app"}}
			cfg := &config.Config{APIVersion: config.APIVersion, Kind: config.Kind, File: "test", Apps: []config.App{app}}
			runner, err := reconcile.New(cfg, cl, reconcile.Options{CacheDir: t.TempDir(), Once: tc.once})
			if err != nil {
				t.Fatal(err)
			}
			apply := func() int64 {
				t.Helper()
				before := dryRuns.Load()
				_, cs, err := runner.Apply(ctx, app, repo.Dir+"/app", false)
				if err == nil && cs.OK() {
					t.Fatal("the stage with an object in a missing namespace was applied")
				}
				return dryRuns.Load() - before
			}
			if first := apply(); first != 4 {
				t.Fatalf("the first apply sent %d dry runs, want 4 (one per object)", first)
			}
			if second := apply(); second != tc.wantSecondRun {
				t.Errorf("the second apply sent %d dry runs, want %d", second, tc.wantSecondRun)
			}
		})
	}
}
