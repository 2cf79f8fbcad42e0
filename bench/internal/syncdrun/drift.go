package syncdrun

import (
	"context"
	"fmt"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"syncd.dev/syncd/internal/applier"
	"syncd.dev/syncd/internal/drift"
	"syncd.dev/syncd/internal/inventory"
	"syncd.dev/syncd/internal/planner"
)

// driftWatch is an app's drift watcher as the daemon runs it: created
// after the first sync, paused while syncd applies, pointed at each plan
// just applied. A nil *driftWatch does nothing (no WithDrift).
type driftWatch struct {
	s      *Syncd
	w      *drift.Watcher
	cancel context.CancelFunc
	done   chan struct{}

	mu      sync.Mutex
	changes []drift.Delta
	errs    []error
}

// WithDrift runs the app's drift watcher beside its syncs, label-selected
// by the app's ApplySet ID as in the daemon.
func (s *Syncd) WithDrift() { s.drift = &driftWatch{s: s} }

func (d *driftWatch) pause() {
	if d != nil && d.w != nil {
		d.w.Pause()
	}
}

func (d *driftWatch) resume() {
	if d != nil && d.w != nil {
		d.w.Resume()
	}
}

// follow starts the watcher on the first call and points it at plan,
// with the resourceVersions cs left.
func (d *driftWatch) follow(plan *planner.Plan, cs *applier.ChangeSet) error {
	if d == nil {
		return nil
	}
	if d.w == nil {
		w, err := drift.NewWatcher(d.s.dyn, d.s.mapper, drift.WatcherOptions{
			OnChange:      d.record,
			OnError:       d.recordErr,
			LabelSelector: inventory.LabelPartOf + "=" + d.s.inv.ID(d.s.App.Name),
			Cache:         d.s.inv.LiveCache(),
		})
		if err != nil {
			return err
		}
		ctx, cancel := context.WithCancel(context.Background())
		d.w, d.cancel, d.done = w, cancel, make(chan struct{})
		go func() {
			defer close(d.done)
			_ = w.Run(ctx)
		}()
	}
	versions := map[planner.ObjectRef]string{}
	for _, c := range cs.Changes {
		if c.ResourceVersion != "" {
			versions[c.Object] = c.ResourceVersion
		}
	}
	d.w.Applied(versions)
	var managers []planner.FieldManager
	for _, m := range d.s.App.Managers() {
		managers = append(managers, planner.FieldManager(m))
	}
	if err := d.w.SetPlan(plan, drift.Options{Managers: managers}); err != nil {
		return fmt.Errorf("drift watcher: %w", err)
	}
	return nil
}

func (d *driftWatch) record(c drift.Delta) {
	d.mu.Lock()
	d.changes = append(d.changes, c)
	d.mu.Unlock()
}

func (d *driftWatch) recordErr(err error) {
	d.mu.Lock()
	d.errs = append(d.errs, err)
	d.mu.Unlock()
}

// Found reports whether the watcher has reported a new finding on the
// object named name; false without WithDrift.
func (s *Syncd) Found(name string) bool {
	d := s.drift
	if d == nil {
		return false
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, c := range d.changes {
		if c.Object.Name == name && len(c.New) > 0 {
			return true
		}
	}
	return false
}

// DriftErrors returns the watch errors reported so far.
func (s *Syncd) DriftErrors() []error {
	if s.drift == nil {
		return nil
	}
	s.drift.mu.Lock()
	defer s.drift.mu.Unlock()
	return append([]error(nil), s.drift.errs...)
}

func (d *driftWatch) stop() {
	if d == nil || d.cancel == nil {
		return
	}
	d.cancel()
	<-d.done
}

// EditOutOfBand changes the data of the ConfigMap name in the app's
// namespace as another manager would (a merge patch by "bench-editor"),
// for the drift watcher to report.
func (s *Syncd) EditOutOfBand(ctx context.Context, name string) error {
	gvr := schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	patch := []byte(`{"data":{"payload":"edited out of band"}}`)
	_, err := s.dyn.Resource(gvr).Namespace(s.App.Namespace).Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{FieldManager: "bench-editor"})
	return err
}
