package controller

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"syncd.dev/syncd/internal/api/v1alpha1"
	"syncd.dev/syncd/internal/config"
)

// A push webhook (package webhook) polls the GitSources that Sources
// lists and whose repository and followed ref the push names; the
// matching is the webhook's. The controller has no poll of a GitSource
// of its own: every App keeps its own clone (cachedir.go) and polls its
// source when it reconciles, and the source's interval comes due as a
// requeue of the App (pollAfter). So polling a GitSource now is queueing
// the Apps that use it now, on the controller's own queue, as an edit of
// the source or `syncd reconcile app` does; nothing is written to the
// GitSource or the Apps.

// errNotRunning: the controller's caches have not synced yet, or it
// stopped.
var errNotRunning = errors.New("App controller: not running")

// Sources returns the GitSources that the Apps this controller runs use
// (runsHere), for a push webhook to match: each as its sources[].git
// entry without credentials (the URL and the revision it follows), named
// "GitSource namespace/name", sorted by name. A GitSource that no such
// App uses is not listed: there would be nothing to poll it for, and a
// replica that runs none of its Apps (another shard's) must not say it
// polled. Nothing is listed while the controller does not run (a
// standby runs none).
func (c *Controller) Sources() []config.Source {
	var out []config.Source
	for key := range c.gitSourceUsers() {
		src, err := c.gitSource(key)
		if err != nil {
			continue // gone or unreadable: its Apps say so when they reconcile
		}
		out = append(out, config.Source{Name: key.String(), Git: gitOf(src.Spec, Credentials{})})
	}
	slices.SortFunc(out, func(a, b config.Source) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// Trigger polls now the GitSource that Sources names source: it queues
// every App this controller runs that uses it, as a request (it runs at
// once, even while the App backs off from a failure, as a Trigger of the
// file daemon's source does). It is an error when no such App is left.
func (c *Controller) Trigger(source string) error {
	if !c.running() {
		return errNotRunning
	}
	for key, apps := range c.gitSourceUsers() {
		if key.String() != source {
			continue
		}
		for _, app := range apps {
			c.enqueueKey(app)
		}
		return nil
	}
	return fmt.Errorf("%s: no App this replica runs uses it", source)
}

// gitSourceUsers returns the keys of the Apps this controller runs, by
// the GitSource each uses; none while the controller does not run.
func (c *Controller) gitSourceUsers() map[sourceKey][]string {
	if !c.running() {
		return nil
	}
	objs, err := c.apps.List(everything)
	if err != nil {
		return nil
	}
	users := map[sourceKey][]string{}
	for _, o := range objs {
		app, err := appFrom(o)
		if err != nil || app.Spec.SourceRef.Kind != v1alpha1.KindGitSource || !c.runsHere(app) {
			continue
		}
		key := sourceKey{Kind: v1alpha1.KindGitSource, Namespace: sourceNamespace(app), Name: app.Spec.SourceRef.Name}
		users[key] = append(users[key], app.Namespace+"/"+app.Name)
	}
	return users
}

// runsHere reports whether a reconcile of the App on this replica would
// poll its source: the App is in this replica's shard, neither suspended
// nor being deleted, and its source reference is one the operator
// allows. (Whether the source exists and is valid is the reconcile's to
// find out, and to report.)
func (c *Controller) runsHere(app *v1alpha1.App) bool {
	switch {
	case c.opts.InShard != nil && !c.opts.InShard(AppName(app.Namespace, app.Name)):
		return false
	case app.Spec.Suspend || app.DeletionTimestamp != nil:
		return false
	}
	return c.opts.Tenancy.checkSourceRef(app) == nil
}

// gitSource reads the GitSource of key from the informer's cache.
func (c *Controller) gitSource(key sourceKey) (*v1alpha1.GitSource, error) {
	obj, err := c.sourceListers[v1alpha1.KindGitSource].ByNamespace(key.Namespace).Get(key.Name)
	if err != nil {
		return nil, err
	}
	return fromInformer[v1alpha1.GitSource](obj)
}

// running reports whether the controller runs: its caches synced and
// its context has not ended.
func (c *Controller) running() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.runCtx != nil && c.runCtx.Err() == nil
}
