package importer

import (
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"syncd.dev/syncd/internal/api/v1alpha1"
	"syncd.dev/syncd/internal/config"
)

// fluxHelmOrOCI maps Flux's other source and Helm kinds.
func (im *importer) fluxHelmOrOCI(d Document) {
	switch d.Object.GetKind() {
	case "HelmRepository":
		im.helmRepository(d)
	case "OCIRepository":
		im.ociRepository(d)
	case "HelmRelease":
		im.helmRelease(d)
	default:
		im.warn(d, "", "has no syncd equivalent (syncd imports GitRepository, HelmRepository, OCIRepository, Kustomization and HelmRelease); not imported")
	}
}

// helmRepository maps a Flux HelmRepository onto a HelmSource of the
// same name; an oci one keeps its oci:// URL.
func (im *importer) helmRepository(d Document) {
	spec := im.fields(d, "spec")
	url, hadCredentials := withoutCredentials(spec.str("url"))
	src := &v1alpha1.HelmSource{
		TypeMeta:   typeMeta(v1alpha1.KindHelmSource),
		ObjectMeta: im.objectMeta(d, d.Object.GetName()),
		Spec:       v1alpha1.HelmSourceSpec{URL: url},
	}
	src.Spec.Interval = im.sourceInterval(spec)
	src.Spec.SecretRef = sourceSecrets(spec)
	if hadCredentials {
		im.moveCredentials(d, spec.field("url"), source{kind: v1alpha1.KindHelmSource, namespace: src.Namespace, name: src.Name, url: url}, &src.Spec.SecretRef)
	}
	if t := spec.str("type"); t == "oci" && !strings.HasPrefix(src.Spec.URL, "oci://") {
		spec.warn("type", "oci with a URL that is not oci://; the HelmSource keeps the URL as written")
	}
	spec.none("passCredentials", "credentials go to the repository's own host only")
	spec.none("insecure", "plain HTTP is allowed by the URL's scheme (http://); credentials go over it only to localhost")
	spec.none("timeout", "syncd bounds each fetch itself; there is no per-source timeout")
	cloudProvider(spec, "put the registry's credentials in the Secret named by secretRef")
	spec.none("suspend", "a HelmSource cannot be suspended; suspend its Apps (spec.suspend) instead")
	spec.none("accessFrom", "an App uses a source of its own namespace (or, with --allow-cross-namespace-sources, of another)")
	spec.done()
	if im.claim(d, v1alpha1.KindHelmSource, src.ObjectMeta) {
		im.res.HelmSources = append(im.res.HelmSources, src)
	}
}

// ociRepository maps a Flux OCIRepository onto an OCISource of the same
// name.
func (im *importer) ociRepository(d Document) {
	spec := im.fields(d, "spec")
	url, hadCredentials := withoutCredentials(spec.str("url"))
	src := &v1alpha1.OCISource{
		TypeMeta:   typeMeta(v1alpha1.KindOCISource),
		ObjectMeta: im.objectMeta(d, d.Object.GetName()),
		Spec:       v1alpha1.OCISourceSpec{URL: url},
	}
	src.Spec.OCIRef = fluxOCIRef(spec.sub("ref"))
	src.Spec.Interval = im.sourceInterval(spec)
	src.Spec.Insecure, _ = spec.boolean("insecure")
	src.Spec.SecretRef = sourceSecrets(spec)
	if hadCredentials {
		im.moveCredentials(d, spec.field("url"), source{kind: v1alpha1.KindOCISource, namespace: src.Namespace, name: src.Name, url: url}, &src.Spec.SecretRef)
	}
	spec.none("verify", "signatures are not verified (no cosign or notation): pin a digest instead")
	spec.none("layerSelector", "the one tar+gzip layer of the artifact is extracted; a layer cannot be chosen")
	spec.none("ignore", "the artifact is used as pushed; there are no ignore patterns")
	cloudProvider(spec, "put a Docker config in the Secret named by secretRef (.dockerconfigjson)")
	spec.none("serviceAccountName", "image pull secrets of a service account are not read: name the Secret in secretRef")
	spec.none("proxySecretRef", "no per-source proxy: syncd uses the HTTPS_PROXY of its environment")
	spec.none("timeout", "syncd bounds each fetch itself; there is no per-source timeout")
	spec.none("suspend", "an OCISource cannot be suspended; suspend its Apps (spec.suspend) instead")
	spec.done()
	if im.claim(d, v1alpha1.KindOCISource, src.ObjectMeta) {
		im.res.OCISources = append(im.res.OCISources, src)
	}
}

// fluxOCIRef maps an OCIRepository's spec.ref, in Flux's order of
// precedence (digest, semver, tag); Flux's default is tag latest.
func fluxOCIRef(ref *fields) config.OCIRef {
	digest, semver, tag := ref.str("digest"), ref.str("semver"), ref.str("tag")
	ref.none("semverFilter", "no filter: the semver range alone picks the tags")
	ref.done()
	switch {
	case digest != "":
		return config.OCIRef{Digest: digest}
	case semver != "":
		return config.OCIRef{Semver: semver}
	case tag != "":
		return config.OCIRef{Tag: tag}
	}
	ref.im.warn(ref.d, ref.path, "not set: Flux follows tag latest, and so does the OCISource (pin a tag, a semver range or a digest)")
	return config.OCIRef{Tag: "latest"}
}

// sourceInterval reads a source's spec.interval, with a default and a
// warning when it is unset.
func (im *importer) sourceInterval(spec *fields) *metav1.Duration {
	if d := spec.duration("interval"); d != nil {
		return d
	}
	im.warn(spec.d, "spec.interval", "not set: the source polls every %s", defaultInterval)
	return &metav1.Duration{Duration: defaultInterval}
}

// sourceSecrets maps spec.secretRef and spec.certSecretRef of a Helm or
// OCI repository: syncd reads the credentials (username and password,
// or .dockerconfigjson, as Flux) and the CA (ca.crt) from one Secret.
func sourceSecrets(spec *fields) *v1alpha1.LocalObjectReference {
	name := spec.sub("secretRef").str("name")
	cert := spec.sub("certSecretRef").str("name")
	switch {
	case cert != "" && name == "":
		name = cert
	case cert != "" && cert != name:
		spec.warn("certSecretRef", "syncd reads the CA (ca.crt) from the Secret named by secretRef: copy key ca.crt of Secret %s into Secret %s (client certificates, tls.crt and tls.key, are not supported)", cert, name)
	}
	if name == "" {
		return nil
	}
	return &v1alpha1.LocalObjectReference{Name: name}
}
