package importer

import (
	"reflect"

	"syncd.dev/syncd/internal/api/v1alpha1"
	"syncd.dev/syncd/internal/config"
)

// helmRelease maps a Flux HelmRelease onto an App rendering the chart:
// of a HelmSource (chart and version), of a GitSource (the chart's
// directory) or of an OCISource (chartRef).
func (im *importer) helmRelease(d Document) {
	spec := im.fields(d, "spec")
	app, ok := im.helmReleaseChart(d, spec)
	if !ok {
		spec.skipRest()
		return
	}
	takeOver(app, helmControllerManager)
	app.Spec.Wait = true
	app.Spec.Helm.ReleaseName = spec.str("releaseName")
	app.Spec.TargetNamespace = im.releaseNamespace(d, spec.str("targetNamespace"))
	app.Spec.Suspend, _ = spec.boolean("suspend")
	app.Spec.ServiceAccountName = spec.str("serviceAccountName")
	app.Spec.DependsOn = fluxDependsOn(spec, d.Object.GetNamespace())
	app.Spec.Cluster = fluxKubeConfig(spec.sub("kubeConfig"))
	if v := spec.mapAt("values"); len(v) > 0 {
		app.Spec.Helm.Values = v
	}
	helmValuesFrom(spec)
	helmInstall(spec.sub("install"), app)
	helmUpgrade(spec.sub("upgrade"), app)
	helmTimeout(spec, app)
	helmDriftDetection(spec.sub("driftDetection"), app)
	helmReleaseUnmapped(spec)
	spec.done()
	if reflect.ValueOf(*app.Spec.Helm).IsZero() {
		app.Spec.Helm = nil
	}
	im.addApp(d, app)
}

// releaseNamespace is the App's target namespace: targetNamespace, else
// the HelmRelease's own namespace (where Flux installs the release) when
// the App is put elsewhere (-n).
func (im *importer) releaseNamespace(d Document, target string) string {
	if target != "" {
		return target
	}
	if ns := d.Object.GetNamespace(); ns != "" && ns != im.namespace(d) {
		return ns
	}
	return ""
}

// helmReleaseChart reads spec.chart (a template naming a source and a
// chart) or spec.chartRef (an OCIRepository) into a new App.
func (im *importer) helmReleaseChart(d Document, spec *fields) (*v1alpha1.App, bool) {
	if spec.has("chartRef") {
		return im.helmChartRef(d, spec)
	}
	outer := spec.sub("chart")
	chart := outer.sub("spec")
	defer outer.done()
	ref := chart.sub("sourceRef")
	kind, name, ns := ref.str("kind"), ref.str("name"), ref.str("namespace")
	ref.str("apiVersion")
	ref.done()
	if im.opts.Namespace != "" || ns == d.Object.GetNamespace() {
		ns = ""
	}
	helm := &config.HelmSpec{ValuesFiles: chart.strings("valuesFiles")}
	var source v1alpha1.SourceReference
	var chartPath string
	switch kind {
	case "HelmRepository":
		source = v1alpha1.SourceReference{Kind: v1alpha1.KindHelmSource, Name: name, Namespace: ns}
		helm.Chart, helm.Version = chart.str("chart"), chart.str("version")
	case "GitRepository":
		source = gitSourceRef(name, ns)
		chartPath = treePath(chart.str("chart"))
		chart.none("version", "a chart in Git is rendered at the GitSource's revision")
	default:
		chart.warn("sourceRef", "kind %q has no syncd source kind (HelmRepository and GitRepository are imported); %s is not imported", kind, d.ref())
		chart.skipRest()
		return nil, false
	}
	chart.none("interval", "the chart is looked up at each poll of its source")
	chart.none("reconcileStrategy", "a chart of a HelmSource is rendered anew when its version changes; a chart in Git at each revision")
	chart.none("verify", "chart signatures are not verified")
	chart.none("ignoreMissingValuesFiles", "a values file that does not exist fails the App")
	chart.done()
	app := im.newApp(d, d.Object.GetName(), source)
	app.Spec.Path = chartPath
	app.Spec.Helm = helm
	return app, true
}

// helmChartRef maps spec.chartRef: an OCIRepository's artifact is the
// chart.
func (im *importer) helmChartRef(d Document, spec *fields) (*v1alpha1.App, bool) {
	ref := spec.sub("chartRef")
	kind, name, ns := ref.str("kind"), ref.str("name"), ref.str("namespace")
	ref.str("apiVersion")
	ref.done()
	if kind != "OCIRepository" {
		spec.warn("chartRef", "kind %q has no syncd source kind (OCIRepository is imported as an OCISource); %s is not imported", kind, d.ref())
		return nil, false
	}
	if im.opts.Namespace != "" || ns == d.Object.GetNamespace() {
		ns = ""
	}
	app := im.newApp(d, d.Object.GetName(), v1alpha1.SourceReference{Kind: v1alpha1.KindOCISource, Name: name, Namespace: ns})
	app.Spec.Helm = &config.HelmSpec{}
	return app, true
}

// helmValuesFrom warns about spec.valuesFrom, with the closest syncd
// equivalent of each entry: an App reads no values from ConfigMaps or
// Secrets.
func helmValuesFrom(spec *fields) {
	for i, v := range spec.list("valuesFrom") {
		f := spec.item("valuesFrom", i, v)
		kind, name, key, target := f.str("kind"), f.str("name"), f.str("valuesKey"), f.str("targetPath")
		f.boolean("optional")
		f.done()
		if target != "" {
			f.im.warn(f.d, f.path, "an App reads no values from a %s: set helm.values.%s to \"${%s}\" and list %s %s in the App's substituteFrom (the chart must pass the value through unchanged), or write the value in a values file in Git", kind, target, variableOf(key), kind, name)
			continue
		}
		f.im.warn(f.d, f.path, "an App reads no values from a %s: put the values of %s %s (key %s) in a values file in Git and list it in helm.valuesFiles, or in helm.values", kind, kind, name, orDefault(key, "values.yaml"))
	}
}

// variableOf is the variable a data key becomes in substituteFrom.
func variableOf(key string) string {
	if key == "" {
		return "values.yaml"
	}
	return key
}

// orDefault is s, or def when s is empty.
func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// helmInstall maps spec.install: crds Skip is includeCRDs false; the
// rest is Helm's release machinery, which syncd does not run.
func helmInstall(in *fields, app *v1alpha1.App) {
	if crds := in.str("crds"); crds == "Skip" {
		app.Spec.Helm.IncludeCRDs = boolPtr(false)
	}
	if disable, _ := in.boolean("disableWait"); disable {
		app.Spec.Wait = false
	}
	in.none("createNamespace", "syncd does not create the target namespace: add a Namespace object to a source, or create it")
	in.none("remediation", "syncd keeps no Helm release to roll back: a failed App is retried with backoff, and the previous objects stay as they were")
	in.none("strategy", "a failed App is retried with exponential backoff")
	helmReleaseMachinery(in, "install")
}

// helmUpgrade maps spec.upgrade.
func helmUpgrade(up *fields, app *v1alpha1.App) {
	if crds := up.str("crds"); crds == "Skip" {
		app.Spec.Helm.IncludeCRDs = boolPtr(false)
	}
	if force, _ := up.boolean("force"); force {
		up.warn("force", "became recreate: true (an object is re-created when a change touches an immutable field); conflicts with other managers still follow the App's conflict policy")
		app.Spec.Recreate = true
	}
	up.none("remediation", "syncd keeps no Helm release to roll back: a failed App is retried with backoff, and the previous objects stay as they were")
	up.none("strategy", "a failed App is retried with exponential backoff")
	up.none("preserveValues", "values come from the App only")
	helmReleaseMachinery(up, "upgrade")
}

// helmReleaseMachinery warns about the install or upgrade fields that
// drive Helm's release machinery, which syncd does not run.
func helmReleaseMachinery(f *fields, what string) {
	f.boolean("disableWait")
	f.none("disableWaitForJobs", "the App waits for every object it applies (wait: true), Jobs included")
	f.none("disableHooks", "hooks are mapped to stages as docs/helm.md says; they cannot be turned off")
	f.none("disableOpenAPIValidation", "objects are validated by the API server's dry run")
	f.none("disableSchemaValidation", "the chart's values schema is always checked")
	f.none("replace", "syncd never replaces: it applies server-side")
	f.none("cleanupOnFail", "a failed App's objects stay as they were")
	f.none("timeout", "the App's timeout bounds the wait of every %s; spec.timeout is imported", what)
	f.done()
}

// helmTimeout maps spec.timeout: Helm waits for the release by default,
// so the App waits (unless install.disableWait), up to the timeout.
func helmTimeout(spec *fields, app *v1alpha1.App) {
	timeout := spec.duration("timeout")
	if !app.Spec.Wait {
		return
	}
	app.Spec.Timeout = timeout
}

// helmDriftDetection maps spec.driftDetection: enabled is syncd's
// default; warn is drift mode detect; its ignore rules are the App's.
func helmDriftDetection(dd *fields, app *v1alpha1.App) {
	switch mode := dd.str("mode"); mode {
	case "", "enabled":
	case "warn":
		app.Spec.Drift.Mode = config.DriftDetect
		dd.warn("mode", "warn became drift.mode: detect, which also never applies a new chart version or values: set drift.mode: correct once the App is trusted")
	default:
		dd.warn("mode", "%s: syncd always reports drift and corrects it at each poll (drift.mode: correct)", mode)
	}
	for i, v := range dd.list("ignore") {
		f := dd.item("ignore", i, v)
		rule := config.IgnoreRule{}
		for _, p := range f.strings("paths") {
			path, lossy := pointerPath(p)
			if lossy {
				f.warn("paths", "%q indexes a list: the rule ignores every item (%s)", p, path)
			}
			rule.Paths = append(rule.Paths, path)
		}
		target := f.sub("target")
		rule.Kinds = argoKinds(target.str("group"), target.str("kind"))
		rule.Names, rule.Namespaces = nonEmpty(target.str("name")), nonEmpty(target.str("namespace"))
		target.str("version")
		target.none("labelSelector", "ignore rules match by kind, name and namespace")
		target.none("annotationSelector", "ignore rules match by kind, name and namespace")
		target.done()
		f.done()
		if len(rule.Paths) > 0 {
			app.Spec.Ignore = append(app.Spec.Ignore, rule)
		}
	}
	dd.done()
}

// helmReleaseUnmapped warns about a HelmRelease's fields syncd has no
// equivalent of.
func helmReleaseUnmapped(spec *fields) {
	spec.none("interval", "an App has no interval of its own: it is rendered, applied and corrected at each poll of its source")
	spec.none("storageNamespace", "syncd keeps no Helm release: its inventory is a Secret of its own")
	spec.none("maxHistory", "syncd keeps no Helm release history")
	spec.none("persistentClient", "not needed")
	spec.none("test", "Helm tests are never run")
	spec.none("rollback", "syncd keeps no Helm release to roll back to")
	spec.none("uninstall", "deleting an App prunes its objects when prune is true")
	spec.none("postRenderers", "a render runs no post-renderer: put the patches in the chart, or render it into a kustomization in Git")
	spec.none("commonMetadata", "labels and annotations on every object: set them through the chart's values")
}
