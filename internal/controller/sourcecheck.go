package controller

import (
	"context"
	"encoding/json"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"syncd.dev/syncd/internal/api/v1alpha1"
)

// nextSource checks one queued source; false once the queue shut down.
func (c *Controller) nextSource(ctx context.Context) bool {
	key, quit := c.sourceQueue.Get()
	if quit {
		return false
	}
	defer c.sourceQueue.Done(key)
	if err := c.reconcileSource(ctx, key); err != nil && ctx.Err() == nil {
		c.sourceQueue.AddRateLimited(key)
		return true
	}
	c.sourceQueue.Forget(key)
	return true
}

// reconcileSource writes a source's conditions: Ready when its spec
// passes the file validation and the Secrets it names have the keys it
// needs. It does not poll the repository, chart repository or registry;
// the Apps using it do, their status says whether it answers, and a
// HelmSource's or an OCISource's status.revision is what they fetched
// (recordFetch).
func (c *Controller) reconcileSource(ctx context.Context, key sourceKey) error {
	lister := c.sourceListers[key.Kind]
	if lister == nil {
		return nil
	}
	obj, err := lister.ByNamespace(key.Namespace).Get(key.Name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	src, err := decodeSource(key.Kind, obj)
	if err != nil {
		return fmt.Errorf("%s: decode: %w", key, err)
	}
	if len(sourceSecrets(src)) > 0 {
		c.watchSecrets(src.Meta().Namespace)
	}
	reason, err := c.checkSource(ctx, src)
	conds := sourceConditions(src.conditions(), src.Meta().Generation, reason, err)
	c.events.sourceChecked(src, conds)
	return c.writeSourceStatus(ctx, src, map[string]any{"observedGeneration": src.Meta().Generation, "conditions": conds})
}

// checkSource returns why a source cannot be used, or ReasonValid.
func (c *Controller) checkSource(ctx context.Context, src Source) (v1alpha1.Reason, error) {
	if err := checkNetworkSource(src); err != nil {
		return v1alpha1.ReasonInvalidSpec, err
	}
	creds, err := c.creds.write(ctx, src)
	if err != nil {
		return v1alpha1.ReasonSecretNotFound, err
	}
	if err := checkSourceObject(src, creds); err != nil {
		return v1alpha1.ReasonInvalidSpec, err
	}
	return v1alpha1.ReasonValid, nil
}

// sourceConditions are a source's conditions after a check, with kstatus
// meaning as an App's: Stalled=True when it cannot be used.
func sourceConditions(old []metav1.Condition, generation int64, reason v1alpha1.Reason, err error) []metav1.Condition {
	conds := append([]metav1.Condition(nil), old...)
	setCondition(&conds, v1alpha1.ConditionReconciling, metav1.ConditionFalse, reason, "", generation)
	if err != nil {
		setCondition(&conds, v1alpha1.ConditionReady, metav1.ConditionFalse, reason, message(err), generation)
		setCondition(&conds, v1alpha1.ConditionStalled, metav1.ConditionTrue, reason, message(err), generation)
		return conds
	}
	setCondition(&conds, v1alpha1.ConditionReady, metav1.ConditionTrue, reason, "the spec is valid and its Secrets have the keys it needs", generation)
	setCondition(&conds, v1alpha1.ConditionStalled, metav1.ConditionFalse, reason, "", generation)
	return conds
}

// writeSourceStatus merges fields into the source's status: the check
// writes the conditions, recordFetch the revision, neither the other's.
func (c *Controller) writeSourceStatus(ctx context.Context, src Source, fields map[string]any) error {
	data, err := json.Marshal(map[string]any{"status": fields})
	if err != nil {
		return err
	}
	m := src.Meta()
	_, err = c.opts.Cluster.Dynamic.Resource(sourceResource(src.Kind())).Namespace(m.Namespace).Patch(ctx, m.Name, types.MergePatchType, data, metav1.PatchOptions{FieldManager: FieldManager}, "status")
	if err != nil {
		return fmt.Errorf("%s: write status: %w", src, err)
	}
	return nil
}

// sourceResource is the resource of a source kind.
func sourceResource(kind string) schema.GroupVersionResource {
	for _, k := range sourceKinds {
		if k.kind == kind {
			return k.resource
		}
	}
	return v1alpha1.GitSourceResource
}
