package controller

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"syncd.dev/syncd/internal/api/v1alpha1"
	"syncd.dev/syncd/internal/config"
)

// Source is the source object an App references: exactly one of Git,
// Helm and OCI is set. Every kind is translated into one config.Source
// (translate.go) and run by the same reconcile.
type Source struct {
	Git  *v1alpha1.GitSource
	Helm *v1alpha1.HelmSource
	OCI  *v1alpha1.OCISource
}

// sourceKinds are the kinds of source objects, with their resources.
var sourceKinds = []struct {
	kind     string
	resource schema.GroupVersionResource
}{
	{v1alpha1.KindGitSource, v1alpha1.GitSourceResource},
	{v1alpha1.KindHelmSource, v1alpha1.HelmSourceResource},
	{v1alpha1.KindOCISource, v1alpha1.OCISourceResource},
}

// Kind is the source's kind: GitSource, HelmSource or OCISource.
func (s Source) Kind() string {
	switch {
	case s.Helm != nil:
		return v1alpha1.KindHelmSource
	case s.OCI != nil:
		return v1alpha1.KindOCISource
	}
	return v1alpha1.KindGitSource
}

// Meta is the source object's metadata.
func (s Source) Meta() *metav1.ObjectMeta {
	switch {
	case s.Helm != nil:
		return &s.Helm.ObjectMeta
	case s.OCI != nil:
		return &s.OCI.ObjectMeta
	}
	return &s.Git.ObjectMeta
}

// String names the object, "HelmSource namespace/name", as errors and
// Events do.
func (s Source) String() string {
	m := s.Meta()
	return s.Kind() + " " + m.Namespace + "/" + m.Name
}

// secretRef is the Secret of the source's credentials (nil: none).
func (s Source) secretRef() *v1alpha1.LocalObjectReference {
	switch {
	case s.Helm != nil:
		return s.Helm.Spec.SecretRef
	case s.OCI != nil:
		return s.OCI.Spec.SecretRef
	}
	return s.Git.Spec.SecretRef
}

// conditions are the source's status conditions.
func (s Source) conditions() []metav1.Condition {
	switch {
	case s.Helm != nil:
		return s.Helm.Status.Conditions
	case s.OCI != nil:
		return s.OCI.Status.Conditions
	}
	return s.Git.Status.Conditions
}

// artifactStatus is a HelmSource's or an OCISource's status; nil for a
// GitSource.
func (s Source) artifactStatus() *v1alpha1.SourceStatus {
	switch {
	case s.Helm != nil:
		return &s.Helm.Status
	case s.OCI != nil:
		return &s.OCI.Status
	}
	return nil
}

// lastFetched is what the source's status says an App fetched last.
func (s Source) lastFetched() fetched {
	switch {
	case s.Helm != nil:
		return fetched{Revision: s.Helm.Status.Revision, Digest: s.Helm.Status.ArtifactDigest}
	case s.OCI != nil:
		return fetched{Revision: s.OCI.Status.Revision, Digest: s.OCI.Status.ArtifactDigest}
	}
	return fetched{Revision: s.Git.Status.Revision}
}

// sourceSecrets are the Secrets a source names.
func sourceSecrets(src Source) []string {
	var names []string
	if ref := src.secretRef(); ref != nil {
		names = append(names, ref.Name)
	}
	if src.Git != nil && src.Git.Spec.Verify != nil {
		names = append(names, src.Git.Spec.Verify.SecretRef.Name)
	}
	return names
}

// configSource is the sources[] entry of a source, named name, with its
// credentials' files.
func configSource(name string, src Source, creds Credentials) config.Source {
	switch {
	case src.Helm != nil:
		return config.Source{Name: name, Helm: helmOf(src.Helm.Spec, creds)}
	case src.OCI != nil:
		return config.Source{Name: name, OCI: ociOf(src.OCI.Spec, creds)}
	}
	return config.Source{Name: name, Git: gitOf(src.Git.Spec, creds)}
}

// configKey is the config field of a source kind: sources[0].git,
// sources[0].helm or sources[0].oci.
func configKey(src Source) string {
	switch {
	case src.Helm != nil:
		return "sources[0].helm"
	case src.OCI != nil:
		return "sources[0].oci"
	}
	return "sources[0].git"
}

// decodeSource converts an informer's object of kind into a Source.
func decodeSource(kind string, obj runtime.Object) (Source, error) {
	switch kind {
	case v1alpha1.KindHelmSource:
		h, err := fromInformer[v1alpha1.HelmSource](obj)
		return Source{Helm: h}, err
	case v1alpha1.KindOCISource:
		o, err := fromInformer[v1alpha1.OCISource](obj)
		return Source{OCI: o}, err
	case v1alpha1.KindGitSource:
		g, err := fromInformer[v1alpha1.GitSource](obj)
		return Source{Git: g}, err
	}
	return Source{}, fmt.Errorf("%q is not a source kind", kind)
}

// sourceKey is a source object's key in the source queue.
type sourceKey struct {
	Kind, Namespace, Name string
}

func (k sourceKey) String() string { return k.Kind + " " + k.Namespace + "/" + k.Name }

// keyOf is the queue key of a source.
func keyOf(src Source) sourceKey {
	m := src.Meta()
	return sourceKey{Kind: src.Kind(), Namespace: m.Namespace, Name: m.Name}
}
