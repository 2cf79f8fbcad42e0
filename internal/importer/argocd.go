package importer

import (
	"fmt"

	"syncd.dev/syncd/internal/api/v1alpha1"
	"syncd.dev/syncd/internal/config"
)

// inClusterServer and inClusterName are Argo CD's names of its own
// cluster.
const (
	inClusterServer = "https://kubernetes.default.svc"
	inClusterName   = "in-cluster"
)

// argoDefaultInterval is how often Argo CD compares an Application with
// Git (timeout.reconciliation of argocd-cm, default 3m).
const argoDefaultInterval = "3m"

// argoApp is what an Application's fields other than its sources give
// each App made from it.
type argoApp struct {
	spec    *fields
	policy  config.AppSpec
	target  string
	cluster *v1alpha1.ClusterReference
	// values are the ref sources ("ref: values"), by name.
	values map[string]argoSource
}

// argoSource is a source of an Application.
type argoSource struct {
	f *fields
	// repoURL is without the credentials it may have held
	// (hadCredentials).
	repoURL, revision, chart string
	path, ref                string
	hasPlugin                bool
	hadCredentials           bool
}

// application maps an Argo CD Application onto one App per source that
// renders (a Git directory or chart, a Helm chart), and a GitSource per
// repository and revision.
func (im *importer) application(d Document) {
	spec := im.fields(d, "spec")
	a := &argoApp{spec: spec, values: map[string]argoSource{}}
	a.target, a.cluster = im.argoDestination(spec.sub("destination"))
	a.policy = argoSyncPolicy(spec.sub("syncPolicy"))
	a.policy.Ignore, a.policy.Conflicts.Rules = argoIgnoreDifferences(spec)
	sources := argoSources(spec)
	argoApplicationUnmapped(spec, d)
	if a.policy.PruneEnabled() && !hasFinalizer(d, "resources-finalizer.argocd.argoproj.io") {
		im.warn(d, "metadata.finalizers", "no resources finalizer: Argo CD leaves the objects when the Application is deleted, and syncd prunes them when an App that prunes is deleted (set prune: false to leave them)")
	}
	spec.done()
	rendering := a.sortSources(sources)
	if len(rendering) > 1 {
		spec.warn("sources", "Argo CD renders the %d sources as one Application; syncd applies each as an App of its own (%s)", len(rendering), quoted(argoAppNames(d.Object.GetName(), len(rendering))))
	}
	for i, s := range rendering {
		im.argoSourceApp(d, a, s, argoAppNames(d.Object.GetName(), len(rendering))[i])
	}
}

// argoAppNames are the names of the Apps of an Application with n
// rendering sources: its own name, then name-2, name-3, ...
func argoAppNames(name string, n int) []string {
	names := []string{name}
	for i := 2; i <= n; i++ {
		names = append(names, fmt.Sprintf("%s-%d", name, i))
	}
	return names
}

// argoSources reads spec.source or spec.sources.
func argoSources(spec *fields) []argoSource {
	if spec.has("source") {
		return []argoSource{readArgoSource(spec.sub("source"))}
	}
	var out []argoSource
	for i, v := range spec.list("sources") {
		out = append(out, readArgoSource(spec.item("sources", i, v)))
	}
	return out
}

// readArgoSource reads the fields of a source that decide what it is.
// The credentials a repoURL may hold are removed here, so that no
// warning can print them.
func readArgoSource(f *fields) argoSource {
	url, hadCredentials := withoutCredentials(f.str("repoURL"))
	return argoSource{f: f, repoURL: url, hadCredentials: hadCredentials, revision: f.str("targetRevision"), chart: f.str("chart"),
		path: f.str("path"), ref: f.str("ref"), hasPlugin: f.has("plugin")}
}

// sortSources keeps the sources that render, and records the others
// (ref sources, whose files other sources read) in a.values.
func (a *argoApp) sortSources(sources []argoSource) []argoSource {
	var rendering []argoSource
	for _, s := range sources {
		if s.ref != "" && s.path == "" && s.chart == "" {
			a.values[s.ref] = s
			s.f.done()
			continue
		}
		rendering = append(rendering, s)
	}
	return rendering
}

// argoSourceApp makes the App of one rendering source.
func (im *importer) argoSourceApp(d Document, a *argoApp, s argoSource, name string) {
	defer s.f.done()
	s.f.none("name", "a source's display name; the App is named %q", name)
	if s.ref != "" {
		s.f.warn("ref", "this source renders and is also read by others ($%s); the Apps of the other sources read its files only if they are in their own repository", s.ref)
	}
	if s.hasPlugin {
		s.f.none("plugin", "config management plugins do not run in syncd: render the manifests into the repository (or use kustomize or Helm); %s is not imported", name)
		s.f.skipRest()
		return
	}
	var app *v1alpha1.App
	if s.chart != "" {
		app = im.newApp(d, name, v1alpha1.SourceReference{Kind: v1alpha1.KindHelmSource, Name: im.argoHelmSource(d, s)})
		app.Spec.AppSpec = a.policy
		app.Spec.Helm = argoHelm(s, a.values)
		if app.Spec.Helm == nil {
			app.Spec.Helm = &config.HelmSpec{}
		}
		app.Spec.Helm.Chart, app.Spec.Helm.Version = s.chart, s.revision
	} else {
		app = im.newApp(d, name, im.argoTreeSource(d, s))
		app.Spec.AppSpec = a.policy
		app.Spec.Path = treePath(s.path)
		app.Spec.Helm = argoHelm(s, a.values)
	}
	app.Spec.TargetNamespace = a.target
	app.Spec.Cluster = a.cluster
	argoKustomize(s.f.sub("kustomize"))
	argoDirectory(s)
	takeOver(app, argoCDControllerManager)
	im.addApp(d, app)
}

// argoTreeSource is the source of a source whose path is rendered: an
// OCISource for an oci:// repoURL (an artifact of manifests), else a
// GitSource.
func (im *importer) argoTreeSource(d Document, s argoSource) v1alpha1.SourceReference {
	if isOCIURL(s.repoURL) {
		return v1alpha1.SourceReference{Kind: v1alpha1.KindOCISource, Name: im.argoOCISource(d, s)}
	}
	return gitSourceRef(im.argoGitSource(d, s), "")
}
