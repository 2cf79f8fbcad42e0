package reconcile

import (
	"context"
	"fmt"
	"log/slog"

	"syncd.dev/syncd/internal/inventory"
	"syncd.dev/syncd/internal/planner"
)

// An app moves between clusters when its cluster section changes (added,
// removed, or naming another cluster): it is then applied to the new
// cluster, and once that apply is clean the objects its inventory holds
// on the cluster it left are pruned there under its prune rules, as if
// they had left Git for that cluster (prune disabled: they stay, and so
// does their inventory). Until that prune completes, each reconcile
// retries it. Only a move seen by a running syncd is followed: the
// cluster an app last applied to is kept in memory.

// appliedTo records that the app applied cleanly to t. The cluster it
// applied to before, when another one, is left (pruneLeft); a cluster it
// comes back to is no longer.
func (rc *Reconciler) appliedTo(t *Target) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	if rc.applied != nil && rc.applied.Name != t.Name {
		rc.left = rc.applied
	}
	if rc.left != nil && rc.left.Name == t.Name {
		rc.left = nil
	}
	rc.applied = t
}

// pruneLeft prunes the app's objects on the cluster it left, if any, and
// logs what it did there.
func (rc *Reconciler) pruneLeft(ctx context.Context, log *slog.Logger, r *Runner, a *App) error {
	rc.mu.Lock()
	left := rc.left
	rc.mu.Unlock()
	if left == nil {
		return nil
	}
	rep, err := r.pruneAllOn(ctx, a, left)
	if err != nil {
		return pruneFailed(fmt.Errorf("app %s: moved off cluster %s, but its objects there could not be pruned (retried at the next reconcile): %w", a.Config.Name, left.Name, err))
	}
	rc.mu.Lock()
	if rc.left == left {
		rc.left = nil
	}
	rc.mu.Unlock()
	log.Info("app moved off a cluster; its objects there were pruned under its prune rules", "left", left.Name, "prune", rep.String())
	return nil
}

// PruneAll prunes every object the app's inventory holds, on the cluster
// it applies to and on one it left: the app is deleted. The per-object
// guards hold (adopted objects are orphaned, Namespaces, CRDs and PVCs
// need syncd.dev/prune: allow, syncd's own objects stay); the whole-prune
// guards are lifted, the deletion being the request to empty the app
// (allowEmpty) and to go past its budget. An app in drift mode detect,
// for which syncd never wrote, and one whose prune is disabled prune
// nothing.
func (rc *Reconciler) PruneAll(ctx context.Context, r *Runner, a *App) (*inventory.Report, error) {
	rc.mu.Lock()
	left := rc.left
	rc.mu.Unlock()
	if left != nil {
		if _, err := r.pruneAllOn(ctx, a, left); err != nil {
			return nil, fmt.Errorf("cluster %s: %w", left.Name, err)
		}
	}
	t, err := r.Target(ctx, a.Config)
	if err != nil {
		return nil, err
	}
	return r.pruneAllOn(ctx, a, t)
}

// pruneAllOn runs the app's inventory on t with an empty plan: every
// member goes, through the per-object guards, as PruneAll says.
func (r *Runner) pruneAllOn(ctx context.Context, a *App, t *Target) (*inventory.Report, error) {
	if t.Inventory == nil || a.Config.DetectOnly() || !a.Inventory.Prune {
		return nil, nil
	}
	all := *a
	all.Inventory.AllowEmpty = true
	all.Inventory.PruneBudget = 100
	rendered := &Rendered{Plan: &planner.Plan{App: a.Config.Name}}
	cs, err := r.applyOn(ctx, &all, t, rendered, false, nil)
	if _, err := ResultOf(rendered, cs, err); err != nil {
		return rendered.Prune, err
	}
	return rendered.Prune, nil
}
