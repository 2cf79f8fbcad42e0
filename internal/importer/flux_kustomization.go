package importer

import (
	"maps"
	"slices"

	"syncd.dev/syncd/internal/api/v1alpha1"
	"syncd.dev/syncd/internal/config"
)

// kustomization maps a Flux Kustomization onto an App of the same name.
func (im *importer) kustomization(d Document) {
	spec := im.fields(d, "spec")
	source, ok := im.fluxSourceRef(spec)
	if !ok {
		spec.skipRest()
		return
	}
	app := im.newApp(d, d.Object.GetName(), source)
	app.Spec.Path = treePath(spec.str("path"))
	takeOver(app, kustomizeControllerManager)
	if prune, _ := spec.boolean("prune"); !prune {
		app.Spec.Prune = boolPtr(false)
	}
	app.Spec.Suspend, _ = spec.boolean("suspend")
	app.Spec.TargetNamespace = spec.str("targetNamespace")
	app.Spec.ServiceAccountName = spec.str("serviceAccountName")
	app.Spec.Recreate, _ = spec.boolean("force")
	app.Spec.DependsOn = fluxDependsOn(spec, d.Object.GetNamespace())
	kustomizationWait(spec, app)
	postBuild(spec.sub("postBuild"), app)
	app.Spec.Decryption = fluxDecryption(spec.sub("decryption"))
	app.Spec.Cluster = fluxKubeConfig(spec.sub("kubeConfig"))
	kustomizationUnmapped(spec)
	spec.done()
	if im.addApp(d, app) {
		im.pathApps = append(im.pathApps, pathApp{d: d, app: app})
	}
}

// fluxSourceRef maps spec.sourceRef (of a Kustomization, or of a
// HelmRelease's chart) onto the App's sourceRef; false, with a warning,
// for a kind syncd has no object of.
func (im *importer) fluxSourceRef(spec *fields) (v1alpha1.SourceReference, bool) {
	ref := spec.sub("sourceRef")
	kind, name, ns := ref.str("kind"), ref.str("name"), ref.str("namespace")
	ref.str("apiVersion")
	ref.done()
	if im.opts.Namespace != "" || ns == spec.d.Object.GetNamespace() {
		ns = ""
	}
	switch kind {
	case "GitRepository":
		return gitSourceRef(name, ns), true
	case "OCIRepository":
		return v1alpha1.SourceReference{Kind: v1alpha1.KindOCISource, Name: name, Namespace: ns}, true
	}
	spec.warn("sourceRef", "kind %q has no syncd source kind (GitRepository and OCIRepository are imported as a GitSource and an OCISource); %s is not imported", kind, spec.d.ref())
	return v1alpha1.SourceReference{}, false
}

// fluxDependsOn maps spec.dependsOn: an App depends on Apps of its own
// namespace, by name.
func fluxDependsOn(spec *fields, ns string) []string {
	var names []string
	for i, v := range spec.list("dependsOn") {
		dep := spec.item("dependsOn", i, v)
		name, depNS := dep.str("name"), dep.str("namespace")
		dep.none("readyExpr", "no CEL readiness: a dependency is ready when it is Ready at the revision it last attempted")
		dep.done()
		if depNS != "" && depNS != ns {
			spec.warn("dependsOn", "%s/%s is in another namespace; an App depends only on Apps of its own namespace, so it is not imported", depNS, name)
			continue
		}
		names = append(names, name)
	}
	return names
}

// kustomizationWait maps wait, timeout and healthChecks: syncd's timeout
// bounds the wait only, so it is kept only with wait.
func kustomizationWait(spec *fields, app *v1alpha1.App) {
	app.Spec.Wait, _ = spec.boolean("wait")
	if spec.has("healthChecks") {
		spec.list("healthChecks")
		spec.warn("healthChecks", "no list of objects to check: the App waits for every object it applies to be Current (wait: true), and objects it does not apply are not checked")
		app.Spec.Wait = true
	}
	timeout := spec.duration("timeout")
	if timeout != nil && !app.Spec.Wait {
		spec.warn("timeout", "syncd's timeout bounds the wait for the objects only, and this Kustomization does not wait; not imported")
		return
	}
	app.Spec.Timeout = timeout
}

// postBuild maps spec.postBuild: substitute and substituteFrom as they
// are.
func postBuild(pb *fields, app *v1alpha1.App) {
	if pb.m == nil {
		return
	}
	sub := pb.sub("substitute")
	for _, k := range slices.Sorted(maps.Keys(sub.m)) {
		if app.Spec.Substitute == nil {
			app.Spec.Substitute = map[string]config.SubstituteValue{}
		}
		app.Spec.Substitute[k] = config.SubstituteValue(sub.fmtValue(sub.m[k]))
	}
	for i, v := range pb.list("substituteFrom") {
		from := pb.item("substituteFrom", i, v)
		ref := v1alpha1.SubstituteReference{Kind: from.str("kind"), Name: from.str("name")}
		ref.Optional, _ = from.boolean("optional")
		from.done()
		app.Spec.SubstituteFrom = append(app.Spec.SubstituteFrom, ref)
	}
	if s := pb.str("substituteStrategy"); s != "" && s != "Always" {
		pb.warn("substituteStrategy", "%s: syncd substitutes whenever substitute or substituteFrom is set, as Always does", s)
	}
	if app.Spec.Substitute != nil || app.Spec.SubstituteFrom != nil {
		pb.im.warn(pb.d, pb.path, "syncd fails an object that uses a variable set nowhere and without a default, where Flux (without its StrictPostBuildSubstitutions feature gate) makes it empty; set substituteStrict: false on the App if the repository relies on that")
	}
	pb.done()
}

// fmtValue prints a substitute value: Flux's values are strings, but a
// YAML number or boolean reads as one.
func (f *fields) fmtValue(v any) string {
	if s, ok := v.(string); ok {
		return s
	}
	f.im.warn(f.d, f.path, "a value is not a string (%v); it is imported as the string %q", v, stringOf(v))
	return stringOf(v)
}

// fluxDecryption maps spec.decryption: the same provider and Secret.
func fluxDecryption(dec *fields) *v1alpha1.Decryption {
	if dec.m == nil {
		return nil
	}
	provider, name := dec.str("provider"), dec.sub("secretRef").str("name")
	dec.none("serviceAccountName", "cloud KMS is not supported: re-encrypt the files for an age or OpenPGP recipient whose private key is in the Secret")
	dec.done()
	if name == "" {
		dec.im.warn(dec.d, dec.path, "no secretRef: syncd has no controller-wide keys; create a Secret holding the age or OpenPGP private keys and name it in the App's spec.decryption.secretRef")
		return nil
	}
	if provider != config.DecryptionSOPS {
		dec.warn("provider", "%q is not a decryption provider of syncd (sops is); not imported", provider)
		return nil
	}
	return &v1alpha1.Decryption{Provider: provider, SecretRef: v1alpha1.LocalObjectReference{Name: name}}
}

// fluxKubeConfig maps spec.kubeConfig.secretRef onto the App's cluster.
func fluxKubeConfig(kc *fields) *v1alpha1.ClusterReference {
	if kc.m == nil {
		return nil
	}
	kc.none("configMapRef", "cloud workload identity is not supported: put a kubeconfig with a token or a client certificate in a Secret and name it in spec.cluster.kubeConfig.secretRef")
	ref := kc.sub("secretRef")
	name, key := ref.str("name"), ref.str("key")
	ref.done()
	kc.done()
	if name == "" {
		return nil
	}
	return &v1alpha1.ClusterReference{KubeConfig: v1alpha1.KubeConfigSource{SecretRef: v1alpha1.SecretKeyReference{Name: name, Key: key}}}
}

// kustomizationUnmapped warns about a Kustomization's fields syncd has
// no equivalent of.
func kustomizationUnmapped(spec *fields) {
	const inRepo = "write it in the kustomization.yaml of the App's path: syncd renders the directory as kustomize build does"
	spec.none("interval", "an App has no interval of its own: it is applied, and its drift corrected, at each poll of its source (the GitSource's interval)")
	spec.none("retryInterval", "a failed App is retried with exponential backoff")
	spec.none("patches", inRepo)
	spec.none("patchesStrategicMerge", inRepo)
	spec.none("patchesJson6902", inRepo)
	spec.none("images", inRepo)
	spec.none("components", inRepo)
	spec.none("ignoreMissingComponents", inRepo)
	spec.none("commonMetadata", inRepo+" (labels, commonAnnotations)")
	spec.none("namePrefix", inRepo)
	spec.none("nameSuffix", inRepo)
	spec.none("healthCheckExprs", "no CEL health checks: the App waits with kstatus (wait: true)")
	spec.none("deletionPolicy", "not chosen per App: deleting an App prunes its objects when prune is true (Flux's MirrorPrune) and leaves them when it is false")
}
