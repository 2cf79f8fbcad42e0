package importer

import (
	"fmt"
	"path"
	"regexp"
	"strings"

	"syncd.dev/syncd/internal/api/v1alpha1"
	"syncd.dev/syncd/internal/config"
)

// Field managers of the tools whose objects are imported: an imported
// App takes over their fields (spec.migrate), so that its first apply
// does not conflict with the tool that applied the objects before.
const (
	kustomizeControllerManager = "kustomize-controller"
	helmControllerManager      = "helm-controller"
	argoCDControllerManager    = "argocd-controller"
)

// appNameRE is what an App's name must match (a DNS label).
var appNameRE = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)

// newApp starts the App made from d: its name (made a valid App name,
// with a warning, when it is not one) and its source.
func (im *importer) newApp(d Document, name string, source v1alpha1.SourceReference) *v1alpha1.App {
	return &v1alpha1.App{
		TypeMeta:   typeMeta(v1alpha1.KindApp),
		ObjectMeta: im.objectMeta(d, im.appName(d, name)),
		Spec:       v1alpha1.AppSpec{SourceRef: source},
	}
}

// appName is name when it is a valid App name, else a valid name made
// from it, with a warning.
func (im *importer) appName(d Document, name string) string {
	if appNameRE.MatchString(name) && len(name) <= 63 {
		return name
	}
	fixed := strings.Trim(regexp.MustCompile(`[^a-z0-9-]+`).ReplaceAllString(strings.ToLower(name), "-"), "-")
	if len(fixed) > 63 {
		fixed = strings.TrimRight(fixed[:63], "-")
	}
	im.warn(d, "metadata.name", "%q is not a valid App name (lowercase letters, digits and -, at most 63); the App is named %q (the dependsOn of other Apps name it by its old name: fix them)", name, fixed)
	return fixed
}

// addApp adds app unless its name is taken; it reports whether it did.
func (im *importer) addApp(d Document, app *v1alpha1.App) bool {
	if !im.claim(d, v1alpha1.KindApp, app.ObjectMeta) {
		return false
	}
	im.res.Apps = append(im.res.Apps, app)
	im.appDocs[app] = d
	return true
}

// takeOver sets the App to take over manager's fields of the objects it
// applies, the tool's field manager before the migration.
func takeOver(app *v1alpha1.App, manager string) {
	app.Spec.Migrate = &config.Migrate{From: []string{manager}}
}

// treePath is a Flux or Argo CD path as an App's path: relative to the
// repository root, without "./", "" for the root.
func treePath(p string) string {
	p = strings.TrimPrefix(path.Clean("/"+strings.TrimSpace(p)), "/")
	if p == "." {
		return ""
	}
	return p
}

// sourceRef names a GitSource.
func gitSourceRef(name, namespace string) v1alpha1.SourceReference {
	return v1alpha1.SourceReference{Kind: v1alpha1.KindGitSource, Name: name, Namespace: namespace}
}

// boolPtr returns a pointer to b.
func boolPtr(b bool) *bool { return &b }

// quoted joins names as "a", "b".
func quoted(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = fmt.Sprintf("%q", n)
	}
	return strings.Join(q, ", ")
}

// stringOf prints a YAML scalar.
func stringOf(v any) string { return fmt.Sprint(v) }
