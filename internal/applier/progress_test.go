package applier

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"syncd.dev/syncd/internal/config"
	"syncd.dev/syncd/internal/planner"
)

// progressLog records what a Progress is told, one line per stage start
// and end; the objects done are counted into the stage's end line, since
// they arrive concurrently.
type progressLog struct {
	mu    sync.Mutex
	lines []string
	done  map[planner.Stage]int
}

func (p *progressLog) StageStarted(stage planner.Stage, objects int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.lines = append(p.lines, fmt.Sprintf("start %s %d", stage, objects))
}

func (p *progressLog) ObjectDone(stage planner.Stage) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.done == nil {
		p.done = map[planner.Stage]int{}
	}
	p.done[stage]++
}

func (p *progressLog) StageDone(stage planner.Stage) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.lines = append(p.lines, fmt.Sprintf("end %s %d done", stage, p.done[stage]))
}

var _ Progress = (*progressLog)(nil)

// TestProgress: Apply and Preview tell ApplyOptions.Progress each stage
// with its object count and every object done, and a stage that
// validation refuses ends with none done.
func TestProgress(t *testing.T) {
	c := newCluster(t, env.Config)
	ns := env.Namespace(t)
	role := "progress-" + ns
	t.Cleanup(func() {
		gvr := schema.GroupVersionResource{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "clusterroles"}
		_ = c.dyn.Resource(gvr).Delete(context.Background(), role, metav1.DeleteOptions{})
	})
	docs := []string{
		"apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata: {name: " + role + "}\nrules: []\n",
		"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\ndata: {k: v}\n",
		"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: b}\ndata: {k: v}\n",
	}
	app := config.App{Name: "progress", Namespace: ns, AppSpec: config.AppSpec{Manager: "syncd-progress"}}
	twoStages := []string{"start cluster 1", "end cluster 1 done", "start namespaced 2", "end namespaced 2 done"}
	tests := map[string]struct {
		app  config.App
		docs []string
		run  func(t *testing.T, plan *planner.Plan, ao ApplyOptions)
		want []string
	}{
		"preview": {app: app, docs: docs, run: preview, want: twoStages},
		"apply":   {app: app, docs: docs, run: apply, want: twoStages},
		"refused stage": {
			app:  config.App{Name: "progress", Namespace: "progress-no-such-namespace", AppSpec: config.AppSpec{Manager: "syncd-progress"}},
			docs: docs[1:2],
			run:  apply,
			want: []string{"start namespaced 1", "end namespaced 0 done"},
		},
	}
	for _, name := range []string{"preview", "apply", "refused stage"} {
		tc := tests[name]
		t.Run(name, func(t *testing.T) {
			log := &progressLog{}
			tc.run(t, c.plan(t, tc.app, tc.docs...), ApplyOptions{Progress: log})
			if diff := cmp.Diff(tc.want, log.lines); diff != "" {
				t.Errorf("progress (-want +got):\n%s", diff)
			}
		})
	}
}

// apply applies plan with ao.
func apply(t *testing.T, plan *planner.Plan, ao ApplyOptions) {
	t.Helper()
	c := newCluster(t, env.Config)
	c.apply(t, plan, ao)
}

// preview dry-runs plan with ao.
func preview(t *testing.T, plan *planner.Plan, ao ApplyOptions) {
	t.Helper()
	c := newCluster(t, env.Config)
	if _, err := c.applier(t, Options{DryRun: true}).Preview(context.Background(), plan, ao); err != nil {
		t.Fatalf("Preview: %v", err)
	}
}
