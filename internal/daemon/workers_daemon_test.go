package daemon_test

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"syncd.dev/syncd/internal/daemon"
	"syncd.dev/syncd/internal/reconcile/reconciletest"
)

// reconcileCounter is a log handler that follows the apps reconciling at
// once: an app starts when its Reconciler logs "applying" and ends when
// the daemon logs how the reconcile ended.
type reconcileCounter struct {
	mu       sync.Mutex
	now, max int
	done     map[string]int // reconciles ended, by app
	attrs    []slog.Attr
}

func (c *reconcileCounter) Enabled(context.Context, slog.Level) bool { return true }

func (c *reconcileCounter) Handle(_ context.Context, r slog.Record) error {
	app := ""
	for _, a := range c.attrs {
		if a.Key == "app" {
			app = a.Value.String()
		}
	}
	r.Attrs(func(a slog.Attr) bool {
		if a.Key == "app" {
			app = a.Value.String()
		}
		return true
	})
	c.mu.Lock()
	defer c.mu.Unlock()
	switch r.Message {
	case "applying":
		c.now++
		c.max = max(c.max, c.now)
	case "reconciled", "reconcile failed":
		c.now--
		c.done[app]++
	}
	return nil
}

func (c *reconcileCounter) WithAttrs(attrs []slog.Attr) slog.Handler {
	return &counterView{c: c, attrs: attrs}
}

func (c *reconcileCounter) WithGroup(string) slog.Handler { return c }

// counterView is the counter seen through a logger's With attributes.
type counterView struct {
	c     *reconcileCounter
	attrs []slog.Attr
}

func (v *counterView) Enabled(context.Context, slog.Level) bool { return true }

func (v *counterView) Handle(ctx context.Context, r slog.Record) error {
	r = r.Clone()
	r.AddAttrs(v.attrs...)
	return v.c.Handle(ctx, r)
}

func (v *counterView) WithAttrs(attrs []slog.Attr) slog.Handler {
	return &counterView{c: v.c, attrs: append(append([]slog.Attr(nil), v.attrs...), attrs...)}
}

func (v *counterView) WithGroup(string) slog.Handler { return v }

// snapshot returns the most apps seen reconciling at once and how many
// reconciles of each app ended.
func (c *reconcileCounter) snapshot() (int, map[string]int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	done := make(map[string]int, len(c.done))
	for k, v := range c.done {
		done[k] = v
	}
	return c.max, done
}

// TestDaemonBoundsAppsReconcilingAtOnce: with Workers 1, six apps polled
// together reconcile one after the other, and every one of them does;
// with Workers 2 at most two do at once (unbounded, four of them did).
func TestDaemonBoundsAppsReconcilingAtOnce(t *testing.T) {
	for _, workers := range []int{1, 2} {
		t.Run(fmt.Sprintf("workers=%d", workers), func(t *testing.T) {
			ns := env.Namespace(t)
			repo := reconciletest.NewRepo(t)
			files := map[string]string{}
			var apps strings.Builder
			names := []string{"a", "b", "c", "d", "e", "f"}
			for _, app := range names {
				var objs []string
				for i := range 20 {
					objs = append(objs, reconciletest.NamedConfigMap(ns, fmt.Sprintf("%s-%02d", app, i), "blue"))
				}
				files[app+"/cms.yaml"] = strings.Join(objs, "\n---\n")
				fmt.Fprintf(&apps, "- name: %s\n  source: repo\n  path: %s\n  namespace: %s\n", app, app, ns)
			}
			repo.Commit("apps", files)
			cfg := fmt.Sprintf("apiVersion: syncd/v1alpha1\nkind: Config\nsources:\n- name: repo\n  git:\n    url: file://%s\n    branch: main\n    interval: 1h\napps:\n%s", repo.Dir, apps.String())
			counter := &reconcileCounter{done: map[string]int{}}
			d := launchConfig(t, cfg, daemon.Options{Workers: workers, Logger: slog.New(counter)})
			reconciletest.Eventually(t, "every app reconciled", func() (bool, string) {
				_, done := counter.snapshot()
				for _, app := range names {
					if done[app] == 0 || appStatus(d, app).Result != "ok" {
						return false, fmt.Sprintf("reconciles ended: %v; %s: %+v", done, app, appStatus(d, app))
					}
				}
				return true, ""
			})
			if most, _ := counter.snapshot(); most > workers {
				t.Errorf("%d apps reconciled at once, want at most %d (Workers)", most, workers)
			} else {
				t.Logf("at most %d apps reconciled at once (Workers %d)", most, workers)
			}
		})
	}
}
