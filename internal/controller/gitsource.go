package controller

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"

	"syncd.dev/syncd/internal/api/v1alpha1"
)

// nextSource checks one queued GitSource; false once the queue shut
// down.
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

// reconcileSource writes a GitSource's status: Ready when its spec
// passes the file validation and the Secrets it names have the keys it
// needs. It does not poll the repository; the Apps using it do, and
// their status says whether it answers.
func (c *Controller) reconcileSource(ctx context.Context, key string) error {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil
	}
	obj, err := c.sources.ByNamespace(ns).Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	src, err := sourceFrom(obj)
	if err != nil {
		return fmt.Errorf("GitSource %s: decode: %w", key, err)
	}
	if len(sourceSecrets(src)) > 0 {
		c.watchSecrets(src.Namespace)
	}
	reason, err := c.checkSource(ctx, src)
	st := sourceStatusOf(src.Status, src.Generation, reason, err)
	return c.writeSourceStatus(ctx, src, st)
}

// checkSource returns why a GitSource cannot be used, or ReasonValid.
func (c *Controller) checkSource(ctx context.Context, src *v1alpha1.GitSource) (v1alpha1.Reason, error) {
	if err := checkNetworkSource(src); err != nil {
		return v1alpha1.ReasonInvalidSpec, err
	}
	creds, err := c.creds.write(ctx, src)
	var missing *MissingSecretError
	switch {
	case errors.As(err, &missing):
		return v1alpha1.ReasonSecretNotFound, err
	case err != nil:
		return v1alpha1.ReasonSecretNotFound, err
	}
	if err := CheckSource(src, creds); err != nil {
		return v1alpha1.ReasonInvalidSpec, err
	}
	return v1alpha1.ReasonValid, nil
}

// sourceStatusOf is a GitSource's status after a check, with kstatus
// meaning as an App's: Stalled=True when it cannot be used.
func sourceStatusOf(old v1alpha1.GitSourceStatus, generation int64, reason v1alpha1.Reason, err error) v1alpha1.GitSourceStatus {
	st := old
	st.Conditions = append([]metav1.Condition(nil), old.Conditions...)
	st.ObservedGeneration = generation
	setCondition(&st.Conditions, v1alpha1.ConditionReconciling, metav1.ConditionFalse, reason, "", generation)
	if err != nil {
		setCondition(&st.Conditions, v1alpha1.ConditionReady, metav1.ConditionFalse, reason, message(err), generation)
		setCondition(&st.Conditions, v1alpha1.ConditionStalled, metav1.ConditionTrue, reason, message(err), generation)
		return st
	}
	setCondition(&st.Conditions, v1alpha1.ConditionReady, metav1.ConditionTrue, reason, "the spec is valid and its Secrets have the keys it needs", generation)
	setCondition(&st.Conditions, v1alpha1.ConditionStalled, metav1.ConditionFalse, reason, "", generation)
	return st
}

func (c *Controller) writeSourceStatus(ctx context.Context, src *v1alpha1.GitSource, st v1alpha1.GitSourceStatus) error {
	data, err := json.Marshal(map[string]any{"status": st})
	if err != nil {
		return err
	}
	_, err = c.opts.Cluster.Dynamic.Resource(v1alpha1.GitSourceResource).Namespace(src.Namespace).Patch(ctx, src.Name, types.MergePatchType, data, metav1.PatchOptions{FieldManager: FieldManager}, "status")
	if err != nil {
		return fmt.Errorf("GitSource %s/%s: write status: %w", src.Namespace, src.Name, err)
	}
	return nil
}
