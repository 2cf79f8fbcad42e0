package controller

import (
	"context"
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/metadata/metadatainformer"
	"k8s.io/client-go/tools/cache"

	"syncd.dev/syncd/internal/api/v1alpha1"
	"syncd.dev/syncd/internal/config"
)

var (
	secretsGVR    = schema.GroupVersionResource{Version: "v1", Resource: "secrets"}
	configMapsGVR = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
)

// watchSecrets starts, once per namespace, a metadata-only watch of the
// Secrets of namespace (names and resourceVersions, never data): a
// Secret a GitSource or an App names that is created, edited or deleted
// queues the objects using it (secretChanged). Without Options.Metadata
// nothing is watched, and a Secret change is seen on the next reconcile.
func (c *Controller) watchSecrets(namespace string) {
	c.watchMetadata(namespace, secretsGVR, c.secretChanged)
}

// watchConfigMaps starts, once per namespace, a metadata-only watch of
// the ConfigMaps of namespace, as watchSecrets does for Secrets: a
// ConfigMap an App's substituteFrom names queues that App
// (configMapChanged).
func (c *Controller) watchConfigMaps(namespace string) {
	c.watchMetadata(namespace, configMapsGVR, c.configMapChanged)
}

// watchMetadata starts, once per resource and namespace, a watch of the
// metadata of its objects; changed is called with the namespace and name
// of each object created, edited or deleted after the watch started.
func (c *Controller) watchMetadata(namespace string, gvr schema.GroupVersionResource, changed func(namespace, name string)) {
	if c.opts.Metadata == nil {
		return
	}
	runCtx, first := c.claimWatch(gvr.Resource + "/" + namespace)
	if !first {
		return
	}
	f := metadatainformer.NewFilteredSharedInformerFactory(c.opts.Metadata, 0, namespace, nil)
	inf := f.ForResource(gvr).Informer()
	if _, err := inf.AddEventHandler(metadataHandler(changed)); err != nil {
		c.log.Warn("objects of a namespace cannot be watched; their changes are seen on the next reconcile", "resource", gvr.Resource, "namespace", namespace, "error", err)
		return
	}
	f.Start(runCtx.Done())
	// The reconcile reads the objects after the first list: one created
	// in between is then an event, not part of the initial list
	// (metadataHandler ignores those). Bounded: a watch RBAC refuses
	// never syncs.
	ctx, cancel := context.WithTimeout(runCtx, watchSyncTimeout)
	defer cancel()
	if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		c.log.Warn("objects of a namespace are not listed yet; a change before the list completes is seen on the next reconcile", "resource", gvr.Resource, "namespace", namespace)
	}
}

// watchSyncTimeout bounds how long a reconcile waits for the first list
// of a watch it starts.
const watchSyncTimeout = 10 * time.Second

// claimWatch records that watch is started and reports whether this
// call is the first for it, with the context watches run in.
func (c *Controller) claimWatch(watch string) (context.Context, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.metadataWatches[watch] || c.runCtx == nil {
		return nil, false
	}
	c.metadataWatches[watch] = true
	return c.runCtx, true
}

// metadataHandler calls changed for each object added after the start,
// updated or deleted. The objects there at the start are those the
// reconcile that started the watch just read.
func metadataHandler(changed func(namespace, name string)) cache.ResourceEventHandlerDetailedFuncs {
	call := func(obj any) {
		if key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj); err == nil {
			if ns, name, err := cache.SplitMetaNamespaceKey(key); err == nil {
				changed(ns, name)
			}
		}
	}
	return cache.ResourceEventHandlerDetailedFuncs{
		AddFunc: func(obj any, initial bool) {
			if !initial {
				call(obj)
			}
		},
		UpdateFunc: func(_, n any) { call(n) },
		DeleteFunc: call,
	}
}

// configMapChanged queues the Apps of namespace whose substituteFrom
// names the ConfigMap.
func (c *Controller) configMapChanged(namespace, name string) {
	apps, err := c.apps.ByNamespace(namespace).List(everything)
	if err != nil {
		return
	}
	for _, o := range apps {
		app, err := appFrom(o)
		if err == nil && slices.Contains(appConfigMaps(app), name) {
			c.enqueue(o)
		}
	}
}

// appConfigMaps are the ConfigMaps of its own namespace an App names.
func appConfigMaps(app *v1alpha1.App) []string {
	var names []string
	for _, s := range app.Spec.SubstituteFrom {
		if s.Kind == config.SubstituteConfigMap {
			names = append(names, s.Name)
		}
	}
	return names
}

// secretChanged queues the sources naming the Secret and the Apps
// using it: through their source's credentials or verify keys, their
// decryption keys or their substituteFrom.
func (c *Controller) secretChanged(namespace, name string) {
	c.alertRouter.secretChanged(namespace, name)
	using := c.sourcesUsing(namespace, name)
	for _, key := range using {
		c.sourceQueue.Add(key)
	}
	apps, err := c.apps.List(everything)
	if err != nil {
		return
	}
	for _, o := range apps {
		app, err := appFrom(o)
		if err != nil {
			continue
		}
		viaSource := slices.ContainsFunc(using, func(k sourceKey) bool { return references(app, k) })
		own := app.Namespace == namespace && slices.Contains(appSecrets(app), name)
		if viaSource || own {
			c.enqueue(o)
		}
	}
}

// sourcesUsing are the sources of namespace, of every kind, that name
// the Secret.
func (c *Controller) sourcesUsing(namespace, secret string) []sourceKey {
	var keys []sourceKey
	for _, k := range sourceKinds {
		objs, _ := c.sourceListers[k.kind].ByNamespace(namespace).List(everything)
		for _, o := range objs {
			src, err := decodeSource(k.kind, o)
			if err == nil && slices.Contains(sourceSecrets(src), secret) {
				keys = append(keys, keyOf(src))
			}
		}
	}
	return keys
}

// appSecrets are the Secrets of its own namespace an App names.
func appSecrets(app *v1alpha1.App) []string {
	var names []string
	if d := app.Spec.Decryption; d != nil {
		names = append(names, d.SecretRef.Name)
	}
	if cl := app.Spec.Cluster; cl != nil {
		names = append(names, cl.KubeConfig.SecretRef.Name)
	}
	for _, s := range app.Spec.SubstituteFrom {
		if s.Kind == config.SubstituteSecret {
			names = append(names, s.Name)
		}
	}
	return names
}

// watchReferencesOf watches the namespaces of the Secrets and ConfigMaps
// an App and its source name.
func (c *Controller) watchReferencesOf(app *v1alpha1.App, src Source) {
	if len(sourceSecrets(src)) > 0 {
		c.watchSecrets(src.Meta().Namespace)
	}
	if len(appSecrets(app)) > 0 {
		c.watchSecrets(app.Namespace)
	}
	if len(appConfigMaps(app)) > 0 {
		c.watchConfigMaps(app.Namespace)
	}
}
