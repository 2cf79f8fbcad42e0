package controller

import (
	"slices"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/metadata/metadatainformer"
	"k8s.io/client-go/tools/cache"

	"syncd.dev/syncd/internal/api/v1alpha1"
	"syncd.dev/syncd/internal/config"
)

var secretsGVR = schema.GroupVersionResource{Version: "v1", Resource: "secrets"}

// watchSecrets starts, once per namespace, a metadata-only watch of the
// Secrets of namespace (names and resourceVersions, never data): a
// Secret a GitSource or an App names that is created, edited or deleted
// queues the objects using it (secretChanged). Without Options.Metadata
// nothing is watched, and a Secret change is seen on the next reconcile.
func (c *Controller) watchSecrets(namespace string) {
	if c.opts.Metadata == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.secretWatches[namespace] || c.runCtx == nil {
		return
	}
	c.secretWatches[namespace] = true
	f := metadatainformer.NewFilteredSharedInformerFactory(c.opts.Metadata, 0, namespace, nil)
	inf := f.ForResource(secretsGVR).Informer()
	changed := func(obj any) {
		if key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj); err == nil {
			if ns, name, err := cache.SplitMetaNamespaceKey(key); err == nil {
				c.secretChanged(ns, name)
			}
		}
	}
	_, err := inf.AddEventHandler(cache.ResourceEventHandlerDetailedFuncs{
		// The Secrets there at the start are those the reconcile that
		// started the watch just read.
		AddFunc: func(obj any, initial bool) {
			if !initial {
				changed(obj)
			}
		},
		UpdateFunc: func(_, n any) { changed(n) },
		DeleteFunc: changed,
	})
	if err != nil {
		c.log.Warn("Secrets of a namespace cannot be watched; their changes are seen on the next reconcile", "namespace", namespace, "error", err)
		return
	}
	f.Start(c.runCtx.Done())
}

// secretChanged queues the GitSources naming the Secret and the Apps
// using it: through their GitSource's credentials or verify keys, their
// decryption keys or their substituteFrom.
func (c *Controller) secretChanged(namespace, name string) {
	srcs, _ := c.sources.ByNamespace(namespace).List(everything)
	using := map[string]bool{} // GitSource names in namespace that name it
	for _, o := range srcs {
		src, err := sourceFrom(o)
		if err == nil && slices.Contains(sourceSecrets(src), name) {
			using[src.Name] = true
			c.sourceQueue.Add(namespace + "/" + src.Name)
		}
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
		viaSource := sourceNamespace(app) == namespace && using[app.Spec.SourceRef.Name]
		own := app.Namespace == namespace && slices.Contains(appSecrets(app), name)
		if viaSource || own {
			c.enqueue(o)
		}
	}
}

// sourceSecrets are the Secrets a GitSource names.
func sourceSecrets(src *v1alpha1.GitSource) []string {
	var names []string
	if src.Spec.SecretRef != nil {
		names = append(names, src.Spec.SecretRef.Name)
	}
	if src.Spec.Verify != nil {
		names = append(names, src.Spec.Verify.SecretRef.Name)
	}
	return names
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

// watchSecretsOf watches the namespaces of the Secrets an App and its
// GitSource name.
func (c *Controller) watchSecretsOf(app *v1alpha1.App, src *v1alpha1.GitSource) {
	if len(sourceSecrets(src)) > 0 {
		c.watchSecrets(src.Namespace)
	}
	if len(appSecrets(app)) > 0 {
		c.watchSecrets(app.Namespace)
	}
}
