package controller

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"syncd.dev/syncd/internal/api/v1alpha1"
	"syncd.dev/syncd/internal/config"
	"syncd.dev/syncd/internal/reconcile"
)

// ensureFinalizer keeps the finalizer on an App exactly when it prunes:
// with it, deleting the App waits until its objects are pruned.
func (c *Controller) ensureFinalizer(ctx context.Context, app *v1alpha1.App) error {
	has := slices.Contains(app.Finalizers, v1alpha1.Finalizer)
	switch want := app.Spec.PruneEnabled(); {
	case want && !has:
		return c.setFinalizers(ctx, app, append(slices.Clone(app.Finalizers), v1alpha1.Finalizer))
	case !want && has:
		return c.setFinalizers(ctx, app, withoutFinalizer(app.Finalizers))
	}
	return nil
}

// finalize prunes a deleted App's objects (unless it does not prune,
// never wrote any, or its app name is held by another app), then lets
// the deletion finish.
func (c *Controller) finalize(ctx context.Context, app *v1alpha1.App) error {
	key := app.Namespace + "/" + app.Name
	if !slices.Contains(app.Finalizers, v1alpha1.Finalizer) {
		c.forget(key)
		return nil
	}
	if len(appSecrets(app)) > 0 {
		// A Secret created or edited (a kubeconfig) retries the prune at
		// once, also when this process never ran the App before.
		c.watchSecrets(app.Namespace)
	}
	switch err := c.claimName(app); {
	case err != nil:
		// The inventory of that name is another app's: pruning it would
		// delete that app's objects.
		c.log.Info("App deleted without pruning: its app name belongs to another app", "app", key, "reason", err.Error())
	case app.Spec.PruneEnabled() && c.opts.Runner.Inventory != nil:
		if err := c.pruneAll(ctx, app); err != nil {
			return c.deletionWaits(ctx, app, err)
		}
	}
	if err := c.setFinalizers(ctx, app, withoutFinalizer(app.Finalizers)); err != nil {
		return err
	}
	c.forget(key)
	c.log.Info("App deleted; its objects were pruned", "app", key)
	return nil
}

// pruneAll prunes every object of a deleted App (reconcile's
// Reconciler.PruneAll): on the cluster it applies to, through the
// kubeconfig of its spec.cluster when it has one, and on a cluster it
// left whose prune has not completed.
func (c *Controller) pruneAll(ctx context.Context, app *v1alpha1.App) error {
	key := app.Namespace + "/" + app.Name
	runs, err := c.opts.Tenancy.withDefaults(app)
	if err != nil {
		return fmt.Errorf("App %s: prune on deletion: %w", key, err)
	}
	a := appOf(runs, "")
	if a.DetectOnly() {
		return nil // syncd never wrote for it: nothing to prune
	}
	compiled, err := reconcile.Compile(a)
	if err != nil {
		return fmt.Errorf("App %s: prune on deletion: %w", key, err)
	}
	compiled.Inventory.Owner = ownerOf(key)
	opts := c.opts.Runner
	opts.Owner = ownerOf(key)
	c.mu.Lock()
	opts.Targets = c.targetsFor(key, app.Namespace)
	c.mu.Unlock()
	r, err := reconcile.New(&config.Config{APIVersion: config.APIVersion, Kind: config.Kind, Apps: []config.App{a}}, c.opts.Cluster, opts)
	if err != nil {
		return fmt.Errorf("App %s: prune on deletion: %w", key, err)
	}
	rc := c.reconcilerOf(key)
	if rc == nil {
		rc = reconcile.NewReconciler(reconcile.ReconcilerOptions{Logger: c.log.With("app", key)})
	}
	rep, err := rc.PruneAll(ctx, r, compiled)
	if c.ownedByAnother(a.Name, err) {
		c.log.Info("App deleted without pruning: the inventory of its app name belongs to another App", "app", key, "reason", err.Error())
		return nil
	}
	if err != nil {
		return fmt.Errorf("App %s: prune on deletion: %w", key, err)
	}
	c.log.Info("App's objects pruned on deletion", "app", key, "prune", rep.String())
	return nil
}

// deletionWaits reports a deleted App whose prune failed, and returns
// the error to retry with backoff: the App keeps its finalizer, so it
// stays, and nothing is pruned, until a retry succeeds (a Secret it
// names changing retries at once). Its status says why (Ready=False,
// Stalled=True), as do a Warning Event and the log, so a deletion never
// hangs without a word; one that should not wait loses its finalizer by
// hand.
func (c *Controller) deletionWaits(ctx context.Context, app *v1alpha1.App, err error) error {
	key := app.Namespace + "/" + app.Name
	err = fmt.Errorf("%w; the App stays, with its finalizer %s, and its prune is retried until it succeeds (to delete the App and leave its objects, remove the finalizer)", err, v1alpha1.Finalizer)
	at := attempt{Reason: deletionReason(err), Err: err}
	now := metav1.NewTime(c.opts.Clock.Now())
	if werr := c.status.write(ctx, app.Namespace, app.Name, statusOf(app.Status, app.Generation, at, now)); werr != nil {
		c.log.Warn("the status of a deleted App whose prune failed could not be written", "app", key, "error", werr)
	}
	c.events.attempt(app, at)
	c.log.Error("App deleted, its prune failed; the App stays until it succeeds", "app", key, "reason", string(at.Reason), "error", message(err))
	return err
}

// deletionReason is the reason a deleted App's prune failed:
// SecretNotFound when its service account may not read the kubeconfig
// of its spec.cluster (as a reconcile would say), else PruneFailed.
func deletionReason(err error) v1alpha1.Reason {
	if errors.As(err, new(*reconcile.SecretForbiddenError)) {
		return v1alpha1.ReasonSecretNotFound
	}
	return v1alpha1.ReasonPruneFailed
}

func withoutFinalizer(fs []string) []string {
	return slices.DeleteFunc(slices.Clone(fs), func(f string) bool { return f == v1alpha1.Finalizer })
}

// setFinalizers writes an App's finalizers, preconditioned on the
// resourceVersion read (a concurrent edit makes it fail and retry).
func (c *Controller) setFinalizers(ctx context.Context, app *v1alpha1.App, fs []string) error {
	if fs == nil {
		fs = []string{}
	}
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"finalizers": fs, "resourceVersion": app.ResourceVersion}})
	if err != nil {
		return err
	}
	_, err = c.opts.Cluster.Dynamic.Resource(v1alpha1.AppResource).Namespace(app.Namespace).Patch(ctx, app.Name, types.MergePatchType, patch, metav1.PatchOptions{FieldManager: FieldManager})
	if err != nil {
		return fmt.Errorf("App %s/%s: write finalizers: %w", app.Namespace, app.Name, err)
	}
	return nil
}
