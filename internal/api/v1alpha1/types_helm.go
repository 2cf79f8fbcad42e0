package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// HelmSource is a Helm chart repository syncd reads charts from: an
// HTTP(S) server holding index.yaml and the chart archives it lists
// (helm repo add), or a registry prefix charts were pushed below with
// helm push (oci://). Apps in the same namespace render a chart of it
// (App.spec.sourceRef with kind HelmSource, and spec.helm.chart and
// spec.helm.version). It is the in-cluster form of a sources[].helm
// entry of syncd.yaml, like Flux's HelmRepository.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=hs,categories=syncd
// +kubebuilder:printcolumn:name="URL",type=string,JSONPath=`.spec.url`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Revision",type=string,JSONPath=`.status.revision`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:printcolumn:name="Status",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].message`,priority=1
type HelmSource struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is where the repository is, how often to look and where its
	// credentials are.
	Spec HelmSourceSpec `json:"spec"`
	// Status is what the controller last observed of the HelmSource.
	Status SourceStatus `json:"status,omitempty"`
}

// HelmSourceSpec is a HelmSource's desired state: the sources[].helm
// fields of syncd.yaml (config.HelmSource), with the credentials and CA
// in a Secret instead of files. TestSpecFieldsMatchConfig keeps the two
// in step.
//
// The URL rule is on the spec, not on url, with fieldPath: a refusal
// shows the value of the field the rule is on, and this one would show
// the secret.
//
// +kubebuilder:validation:XValidation:rule=`has(self.interval)`,message=`no polling interval; set interval, how often index.yaml is read (e.g. 10m)`
// +kubebuilder:validation:XValidation:rule=`!self.url.matches('^[A-Za-z][A-Za-z0-9+.-]*://[^/@]*@')`,fieldPath=`.url`,message=`the URL embeds credentials; remove them from the URL and put them in the Secret named by secretRef (keys username and password, or token)`
type HelmSourceSpec struct {
	// URL of the repository: its base URL, https://charts.example.com/stable
	// (index.yaml is read below it), or oci://registry/path for charts
	// pushed there with helm push (a chart's versions are the tags of
	// <path>/<chart>). Plain http:// is allowed, but credentials go over
	// it only to localhost. It must not embed credentials; put them in
	// the Secret named by secretRef. A file URL or a local path is
	// refused: it would read syncd's own disk, where other Apps' sources
	// are.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=2048
	// +kubebuilder:validation:XValidation:rule=`self.matches('^(?i)(https?|oci)://[^/]')`,message=`the URL is not an https://, http:// or oci:// URL: a HelmSource fetches over the network (a file URL or a local path would read syncd's own disk, where other Apps' sources are); write the repository's base URL, e.g. https://charts.example.com/stable, or oci://registry/path for charts pushed with helm push`
	URL string `json:"url"`
	// Interval is how often index.yaml is read (one conditional GET; for
	// an oci:// repository, one tag listing per chart), as a duration
	// (e.g. 10m); required.
	// +kubebuilder:validation:MaxLength=1024
	// +kubebuilder:validation:XValidation:rule=`duration(self) > duration('0s')`,message=`interval must be positive, e.g. 10m`
	// +kubebuilder:validation:Type=string
	Interval *metav1.Duration `json:"interval,omitempty"`
	// SecretRef names a Secret in the HelmSource's namespace holding the
	// credentials and CA: keys username and password (HTTP basic auth),
	// or token (sent as "Authorization: Bearer"; to a registry, the
	// registry token), or .dockerconfigjson (a kubernetes.io/dockerconfigjson
	// Secret's key, whose auths entry for the registry's host is used;
	// oci:// repositories only), and ca.crt (PEM certificates trusted
	// for the repository's TLS in place of the system's roots) with any
	// of them or alone. At most one kind of credentials. The Secret is
	// read again on every reconcile, so a rotated credential takes effect
	// without a restart.
	SecretRef *LocalObjectReference `json:"secretRef,omitempty"`
}

// KindHelmSource is the kind of a HelmSource.
const KindHelmSource = "HelmSource"

// HelmSourceResource is the resource of HelmSources, as the dynamic
// client addresses them.
var HelmSourceResource = GroupVersion.WithResource("helmsources")
