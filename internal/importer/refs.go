package importer

import (
	"fmt"

	"syncd.dev/syncd/internal/api/v1alpha1"
)

// fluxSourceKinds are the Flux kinds the syncd source kinds are made
// from, for warnings that ask for the file defining one.
var fluxSourceKinds = map[string]string{
	v1alpha1.KindGitSource:  "GitRepository",
	v1alpha1.KindHelmSource: "HelmRepository",
	v1alpha1.KindOCISource:  "OCIRepository",
}

// checkRefs warns about every App whose source, or an App it depends
// on, is not among the objects imported: the objects would wait for
// something that is not there, and a syncd.yaml would not load. The
// usual case is a source kept in another file than the inputs (flux
// bootstrap's GitRepository flux-system).
func (im *importer) checkRefs() {
	sources := map[string]bool{}
	for _, s := range im.res.GitSources {
		sources[v1alpha1.KindGitSource+"/"+s.Namespace+"/"+s.Name] = true
	}
	for _, s := range im.res.HelmSources {
		sources[v1alpha1.KindHelmSource+"/"+s.Namespace+"/"+s.Name] = true
	}
	for _, s := range im.res.OCISources {
		sources[v1alpha1.KindOCISource+"/"+s.Namespace+"/"+s.Name] = true
	}
	apps := map[string]bool{}
	for _, a := range im.res.Apps {
		apps[a.Namespace+"/"+a.Name] = true
	}
	for _, a := range im.res.Apps {
		d := im.appDocs[a]
		ref := a.Spec.SourceRef
		ns := cmpOr(ref.Namespace, a.Namespace)
		if !sources[ref.Kind+"/"+ns+"/"+ref.Name] {
			im.warn(d, sourceRefField(d), "%s", im.missingSource(ref.Kind, ns, ref.Name))
		}
		for _, dep := range a.Spec.DependsOn {
			if !apps[a.Namespace+"/"+dep] {
				im.warn(d, "spec.dependsOn", "%s", im.missingDependency(a.Namespace, dep))
			}
		}
	}
}

// sourceRefField is the field of d that names its source.
func sourceRefField(d Document) string {
	switch {
	case d.Object.GetKind() != "HelmRelease":
		return "spec.sourceRef"
	case nested(d.Object.Object, "spec", "chartRef") != nil:
		return "spec.chartRef"
	}
	return "spec.chart.spec.sourceRef"
}

// missingSource says that the source kind ns/name is not among the
// objects imported, and what to do, in the words of the output form.
func (im *importer) missingSource(kind, ns, name string) string {
	from := fluxSourceKinds[kind]
	if im.tool != Flux {
		from = kind
	}
	why := fmt.Sprintf("%s %s/%s is in none of the inputs", from, ns, name)
	add := "add the file that defines it to the inputs"
	switch {
	case im.refused[kind+"/"+ns+"/"+name]:
		why = fmt.Sprintf("%s %s/%s is not imported (see its warning)", from, ns, name)
		add = "fix it and import again"
	case im.tool == Flux && kind == v1alpha1.KindGitSource:
		add += " (flux bootstrap's is clusters/<cluster>/flux-system/gotk-sync.yaml)"
	}
	if im.opts.Form == ConfigForm {
		return fmt.Sprintf("%s, and the syncd.yaml does not load without a source named %s: %s, or declare the source under sources", why, name, add)
	}
	return fmt.Sprintf("%s, so no %s %s/%s is printed, and the App fails (source not found) until one exists: %s, or create the %s", why, kind, ns, name, add, kind)
}

// missingDependency says that the App ns/name another depends on is
// not among the objects imported (in none of the inputs, or left out
// with a warning of its own), and what to do.
func (im *importer) missingDependency(ns, name string) string {
	why := fmt.Sprintf("%s/%s is in none of the inputs", ns, name)
	if _, read := im.taken[v1alpha1.KindApp+"/"+ns+"/"+name]; read || im.refused[v1alpha1.KindApp+"/"+ns+"/"+name] {
		why = fmt.Sprintf("%s/%s is not imported (see its warning)", ns, name)
	}
	if im.opts.Form == ConfigForm {
		return fmt.Sprintf("%s, and the syncd.yaml does not load while an app depends on an app it does not declare: add the file that defines it to the inputs, or remove %s from dependsOn", why, name)
	}
	return fmt.Sprintf("%s, so no App %s/%s is printed, and this App is not applied until one exists: add the file that defines it to the inputs, or remove %s from dependsOn", why, ns, name, name)
}
