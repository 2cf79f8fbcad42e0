package renderproc

import (
	"context"
	"errors"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"syncd.dev/syncd/internal/planner"
)

// TestPrestartedChildRenders: the child Prestart keeps renders the next
// request as a child started for it would, under the same limits, and
// the render after it starts a child of its own.
func TestPrestartedChildRenders(t *testing.T) {
	dir := writeTree(t, map[string]string{
		"a.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n  namespace: ns\ndata:\n  k: v\n",
	})
	tree := planner.Tree{Root: dir, Dir: dir}
	want, err := planner.Render(context.Background(), tree)
	if err != nil {
		t.Fatal(err)
	}
	r := newRenderer(t, Limits{Time: 2 * time.Second})
	t.Cleanup(r.StopSpare)
	if err := r.Prestart(); err != nil {
		t.Fatal(err)
	}
	spare := r.spare.cmd.Process.Pid
	for _, run := range []string{"prestarted child", "child started for the render"} {
		got, err := r.Render(context.Background(), tree)
		if err != nil {
			t.Fatalf("%s: %v", run, err)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("%s: manifests (-in process +child):\n%s", run, diff)
		}
	}
	if slices.Contains(childrenOf(os.Getpid()), spare) {
		t.Errorf("the prestarted child %d is still running after its render", spare)
	}
	// The prestarted child is under the render's limits: an endless
	// chart is killed at the time limit.
	if err := r.Prestart(); err != nil {
		t.Fatal(err)
	}
	_, err = r.Render(context.Background(), chartTree(t, "", endless))
	var le *LimitError
	if !errors.As(err, &le) || le.Limit != LimitTime {
		t.Errorf("endless render in a prestarted child: got %v, want the time limit's LimitError", err)
	}
}

// TestStopSpareKillsTheSpare: a child kept by Prestart and not used is
// killed and reaped by StopSpare, and the Renderer still renders.
func TestStopSpareKillsTheSpare(t *testing.T) {
	r := newRenderer(t, Limits{})
	if err := r.Prestart(); err != nil {
		t.Fatal(err)
	}
	if err := r.Prestart(); err != nil {
		t.Fatal(err)
	}
	spare := r.spare.cmd.Process.Pid
	if got := childrenOf(os.Getpid()); !slices.Contains(got, spare) {
		t.Fatalf("children %v: the prestarted child %d is not running", got, spare)
	}
	r.StopSpare()
	if got := childrenOf(os.Getpid()); slices.Contains(got, spare) {
		t.Errorf("children %v: the prestarted child %d is still there after StopSpare", got, spare)
	}
	dir := writeTree(t, map[string]string{"a.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n"})
	if _, err := r.Render(context.Background(), planner.Tree{Root: dir, Dir: dir}); err != nil {
		t.Errorf("render after StopSpare: %v", err)
	}
}
