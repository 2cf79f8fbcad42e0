package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"syncd.dev/syncd/internal/config"
)

// OCISource is an OCI artifact in a registry that syncd follows by tag,
// semver range of tags or digest: plain manifests or a kustomization as
// one tar+gzip layer (the format flux push artifact writes), or a Helm
// chart. Apps in the same namespace render a directory of it
// (App.spec.sourceRef with kind OCISource, and spec.path). It is the
// in-cluster form of a sources[].oci entry of syncd.yaml, like Flux's
// OCIRepository.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=os,categories=syncd
// +kubebuilder:printcolumn:name="URL",type=string,JSONPath=`.spec.url`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Revision",type=string,JSONPath=`.status.revision`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:printcolumn:name="Status",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].message`,priority=1
type OCISource struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is where the artifact is, which version to follow, how often
	// to look and where its credentials are.
	Spec OCISourceSpec `json:"spec"`
	// Status is what the controller last observed of the OCISource.
	Status SourceStatus `json:"status,omitempty"`
}

// OCISourceSpec is an OCISource's desired state: the sources[].oci
// fields of syncd.yaml, with the credentials and CA in a Secret instead
// of files. The version fields are config.OCIRef, the file's own type;
// TestSpecFieldsMatchConfig keeps the rest in step.
//
// The URL rule is on the spec, not on url, with fieldPath: a refusal
// shows the value of the field the rule is on, and this one would show
// the secret.
//
// +kubebuilder:validation:XValidation:rule=`has(self.tag) || has(self.semver) || has(self.digest)`,message=`no version to follow; set one of tag, semver or digest`
// +kubebuilder:validation:XValidation:rule=`[has(self.tag), has(self.semver), has(self.digest)].filter(x, x).size() <= 1`,message=`more than one of tag, semver and digest is set; keep exactly one of tag, semver and digest`
// +kubebuilder:validation:XValidation:rule=`has(self.interval)`,message=`no polling interval; set interval, how often the tag is resolved (e.g. 5m)`
// +kubebuilder:validation:XValidation:rule=`!self.url.matches('^[A-Za-z][A-Za-z0-9+.-]*://[^/@]*@')`,fieldPath=`.url`,message=`the URL embeds credentials; remove them from the URL and put them in the Secret named by secretRef (keys username and password, token, or .dockerconfigjson)`
type OCISourceSpec struct {
	// URL of the repository in the registry, oci://host[:port]/repository,
	// without a tag or digest (they go in tag, semver or digest). It
	// must not embed credentials; put them in the Secret named by
	// secretRef.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=2048
	// +kubebuilder:validation:XValidation:rule=`self.matches('^oci://[^/]')`,message=`the URL is not an oci:// URL: an OCISource fetches from a registry over the network (a file URL or a local path would read syncd's own disk, where other Apps' sources are); write oci://host[:port]/repository, e.g. oci://ghcr.io/org/manifests`
	URL string `json:"url"`

	// OCIRef (tag, semver, digest, interval) is the file config's own
	// type, so the two cannot drift apart.
	config.OCIRef `json:",inline"`

	// Insecure allows plain HTTP to a registry that is not on loopback
	// (an in-cluster registry without TLS); default false: plain HTTP
	// only to localhost. Credentials are never sent over it.
	Insecure bool `json:"insecure,omitempty"`
	// SecretRef names a Secret in the OCISource's namespace holding the
	// registry credentials and CA: one of .dockerconfigjson (a
	// kubernetes.io/dockerconfigjson Secret's key; the auths entry for
	// the registry's host is used, credential helpers never run), keys
	// username and password (HTTP basic auth), or token (a bearer
	// token), and ca.crt (PEM CA certificates trusted for the registry,
	// beside the system's) with any of them or alone. The Secret is read
	// again on every reconcile, so a rotated credential takes effect
	// without a restart.
	SecretRef *LocalObjectReference `json:"secretRef,omitempty"`
}

// Keys of the Secret a HelmSource's or an OCISource's secretRef names,
// beside SecretKeyUsername and SecretKeyToken.
const (
	// SecretKeyPassword is the HTTP basic auth password (with username).
	SecretKeyPassword = "password"
	// SecretKeyDockerConfig is a Docker config.json, the key of a
	// kubernetes.io/dockerconfigjson Secret.
	SecretKeyDockerConfig = ".dockerconfigjson"
	// SecretKeyCA holds PEM CA certificates trusted for the server's TLS.
	SecretKeyCA = "ca.crt"
)

// SourceStatus is what the controller last observed of a HelmSource or
// an OCISource.
type SourceStatus struct {
	// ObservedGeneration is the metadata.generation the conditions
	// describe.
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// Conditions are Ready (the spec is valid and its Secret has the keys
	// it needs), Reconciling and Stalled (the source cannot be used until
	// it or its Secret is edited), with kstatus meaning.
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
	// Revision is the revision an App of the source last fetched: for an
	// OCISource the tag and the manifest digest (v1.2.0@sha256:...; the
	// digest alone for a digest pin), for a HelmSource the chart and its
	// version (podinfo-6.5.0). With several Apps of one HelmSource, the
	// chart of the App that fetched last.
	Revision string `json:"revision,omitempty"`
	// ArtifactDigest is the digest of that artifact: the OCI manifest
	// digest, or the sha256 of the chart archive (sha256:...).
	ArtifactDigest string `json:"artifactDigest,omitempty"`
	// LastFetchTime is when that revision was fetched (written when the
	// revision changes; a poll that finds the same revision writes
	// nothing).
	LastFetchTime *metav1.Time `json:"lastFetchTime,omitempty"`
}

// KindOCISource is the kind of an OCISource.
const KindOCISource = "OCISource"

// OCISourceResource is the resource of OCISources, as the dynamic
// client addresses them.
var OCISourceResource = GroupVersion.WithResource("ocisources")
