package appconvert

import (
	"errors"
	"fmt"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"syncd.dev/syncd/internal/api/v1alpha1"
	"syncd.dev/syncd/internal/config"
	"syncd.dev/syncd/internal/controller"
)

// app converts one app. The fields the file and the App share
// (config.AppSpec) are copied as one; the file's own fields are mapped
// here, each by name: name and source (the object's name and
// spec.sourceRef), namespace (spec.targetNamespace), substituteFrom,
// decryption and cluster (references in the App's namespace instead of
// files), installsSyncd (refused). fileFields lists them for the test
// that keeps this list complete.
//
// kind is the kind of the source's object (GitSource, HelmSource or
// OCISource).
func (c *Conversion) app(a config.App, ns, kind string) (*v1alpha1.App, error) {
	if err := refused(a); err != nil {
		return nil, err
	}
	app := &v1alpha1.App{
		TypeMeta:   typeMeta(v1alpha1.KindApp),
		ObjectMeta: metav1.ObjectMeta{Name: objectName(a.Name, ns), Namespace: ns},
		Spec: v1alpha1.AppSpec{
			SourceRef:       v1alpha1.SourceReference{Kind: kind, Name: a.Source},
			TargetNamespace: c.targetNamespace(a, ns),
			SubstituteFrom:  substituteReferences(a.SubstituteFrom),
			AppSpec:         a.AppSpec,
		},
	}
	app.Spec.DependsOn = dependsOnObjects(a.DependsOn, ns)
	c.decryption(a, app)
	c.cluster(a, app)
	c.keepManager(a, app)
	return app, nil
}

// fileFields are the JSON names of config.App's own fields (those not in
// config.AppSpec), each of which app maps or refuses.
var fileFields = []string{"name", "source", "namespace", "installsSyncd", "substituteFrom", "decryption", "cluster"}

// refused names what an App cannot have: installing syncd is reserved to
// the operator's config file, and an App reads substitution values from
// its namespace, never files.
func refused(a config.App) error {
	var errs []string
	if a.InstallsSyncd {
		errs = append(errs, "installsSyncd: no App may install syncd itself (docs/apps.md); only the config file's app can")
	}
	if a.Helm != nil && a.Helm.ValuesSource != "" {
		errs = append(errs, fmt.Sprintf("helm.valuesSource %s: an App reads values files from its chart or its own source only (docs/apps.md); move the values into helm.values or the chart, or keep the app in the config file", a.Helm.ValuesSource))
	}
	for i, s := range a.SubstituteFrom {
		if s.File != "" {
			errs = append(errs, fmt.Sprintf("substituteFrom[%d].file %s: an App reads substitution values from ConfigMaps and Secrets of its namespace only; put the values in one and name it (kind, name)", i, s.File))
		}
	}
	if len(errs) > 0 {
		return errors.New(strings.Join(errs, "; "))
	}
	return nil
}

// targetNamespace is the App's spec.targetNamespace for the app's
// namespace: unset when it is the App's own. An app without one gets a
// warning: as an App, its namespaced objects that set none go to the
// App's namespace, where the file app refused them.
func (c *Conversion) targetNamespace(a config.App, ns string) string {
	if a.Namespace == "" {
		c.Warnings = append(c.Warnings, fmt.Sprintf("app %s sets no namespace: as an App, namespaced objects that set none go to the App's namespace %s (the file app refused them)", a.Name, ns))
	}
	if a.Namespace == ns {
		return ""
	}
	return a.Namespace
}

// substituteReferences are the app's substituteFrom ConfigMaps and
// Secrets (refused already files).
func substituteReferences(from []config.SubstituteSource) []v1alpha1.SubstituteReference {
	if from == nil {
		return nil
	}
	out := make([]v1alpha1.SubstituteReference, 0, len(from))
	for _, s := range from {
		out = append(out, v1alpha1.SubstituteReference{Kind: s.Kind, Name: s.Name, Optional: s.Optional, Sensitive: s.Sensitive})
	}
	return out
}

// dependsOnObjects maps the file app names an app depends on to the
// names of their Apps (objectName).
func dependsOnObjects(deps []string, ns string) []string {
	if deps == nil {
		return nil
	}
	out := make([]string, 0, len(deps))
	for _, d := range deps {
		out = append(out, objectName(d, ns))
	}
	return out
}

// objectName is the App's name for a file app: <name> when the app is
// called <namespace>-<name>, so the app name the controller derives
// (controller.AppName) is the file app's; else the file app's name.
func objectName(name, ns string) string {
	if rest, ok := strings.CutPrefix(name, ns+"-"); ok && rest != "" {
		return rest
	}
	return name
}

// decryption turns the app's SOPS keys file into a secretRef to a Secret
// to create from it (the file is not read).
func (c *Conversion) decryption(a config.App, app *v1alpha1.App) {
	if a.Decryption == nil {
		return
	}
	name := app.Name + decryptionSecretSuffix
	app.Spec.Decryption = &v1alpha1.Decryption{Provider: a.Decryption.Provider, SecretRef: v1alpha1.LocalObjectReference{Name: name}}
	c.secretNote(v1alpha1.KindApp, app.ObjectMeta, name, []secretKey{{key: decryptionSecretKey, file: a.Decryption.KeysFile}})
}

// cluster turns the app's cluster section into spec.cluster: the
// kubeconfig comes from a Secret of the App's namespace, never syncd's.
// A kubeconfigFile becomes a Secret <App>-kubeconfig to create from it
// (the file is not read); a secretRef keeps its name and key, and must
// be copied from syncd's namespace into the App's. The cluster keeps its
// name (the metrics' cluster label), which the App would otherwise
// derive from the Secret's.
func (c *Conversion) cluster(a config.App, app *v1alpha1.App) {
	cl := a.Cluster
	if cl == nil {
		return
	}
	ref := v1alpha1.SecretKeyReference{Name: app.Name + kubeconfigSecretSuffix}
	if cl.SecretRef != nil {
		ref = v1alpha1.SecretKeyReference{Name: cl.SecretRef.Name, Key: cl.SecretRef.Key}
	}
	app.Spec.Cluster = &v1alpha1.ClusterReference{
		Name: a.ClusterName(), Context: cl.Context, InventoryNamespace: cl.InventoryNamespace,
		KubeConfig: v1alpha1.KubeConfigSource{SecretRef: ref},
	}
	if cl.KubeconfigFile != "" {
		c.secretNote(v1alpha1.KindApp, app.ObjectMeta, ref.Name, []secretKey{{key: config.DefaultKubeconfigKey, file: cl.KubeconfigFile}})
		return
	}
	c.Warnings = append(c.Warnings, fmt.Sprintf("App %s/%s reads its kubeconfig from Secret %s/%s (key %s), in the App's namespace: the file app read it in syncd's namespace; copy it to namespace %s before the App is used", app.Namespace, app.Name, app.Namespace, ref.Name, cl.SecretRef.KeyOrDefault(), app.Namespace))
}

// keepManager keeps a renamed app's default field manager: without it
// the App's objects would get a second owner (syncd-<namespace>-<name>)
// and the old one would keep owning every field, so a field Git drops
// would never be removed.
func (c *Conversion) keepManager(a config.App, app *v1alpha1.App) {
	newName := controller.AppName(app.Namespace, app.Name)
	if newName == a.Name {
		return
	}
	if app.Spec.Manager == "" {
		app.Spec.Manager = a.DefaultManager()
	}
	c.Warnings = append(c.Warnings, fmt.Sprintf("app %s becomes App %s/%s, whose app name is %s: its inventory Secret is syncd-applyset-%s (syncd-applyset-%s is not read: objects only the file app applied are not pruned by the App), and spec.manager is set to %s to keep the fields' owner", a.Name, app.Namespace, app.Name, newName, newName, a.Name, app.Spec.Manager))
}
