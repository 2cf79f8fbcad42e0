package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"syncd.dev/syncd/internal/config"
)

// Group is the API group of syncd's custom resources.
const Group = "syncd.dev"

// Version is the API version of the types of this package.
const Version = "v1alpha1"

// Kinds of this API version.
const (
	KindGitSource = "GitSource"
	KindApp       = "App"
)

// GroupVersion is syncd.dev/v1alpha1.
var GroupVersion = schema.GroupVersion{Group: Group, Version: Version}

// Resources of this API version, as the dynamic client addresses them.
var (
	GitSourceResource = GroupVersion.WithResource("gitsources")
	AppResource       = GroupVersion.WithResource("apps")
)

// RequestedAtAnnotation on an App asks for a reconcile now: any new
// value (a timestamp, by convention) queues the App, and the status
// records the value handled (lastHandledReconcileAt), like Flux's
// reconcile.fluxcd.io/requestedAt.
const RequestedAtAnnotation = "syncd.dev/requestedAt"

// Finalizer is set on every App that prunes: deleting the App prunes its
// objects first, then the finalizer is removed.
const Finalizer = "syncd.dev/prune"

// GitSource is a Git repository syncd polls, and which revision of it to
// follow.
type GitSource struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   GitSourceSpec   `json:"spec"`
	Status GitSourceStatus `json:"status,omitempty"`
}

// GitSourceSpec is a GitSource's desired state: the sources[].git fields
// of syncd.yaml, with credentials in a Secret instead of files.
type GitSourceSpec struct {
	URL string `json:"url"`

	// GitRef (branch, tag, semver, commit, interval, schedule) is the
	// file config's own type, so the two cannot drift apart.
	config.GitRef `json:",inline"`

	// SecretRef names a Secret in the GitSource's namespace holding the
	// credentials: keys SecretKeyToken (and SecretKeyUsername) for
	// https, SecretKeyIdentity and SecretKeyKnownHosts for ssh.
	SecretRef *LocalObjectReference `json:"secretRef,omitempty"`
	Verify    *GitVerify            `json:"verify,omitempty"`
}

// Keys of the Secret a GitSource's secretRef names.
const (
	SecretKeyUsername   = "username"
	SecretKeyToken      = "token"
	SecretKeyIdentity   = "identity"
	SecretKeyKnownHosts = "known_hosts"
)

// SecretKeyKeys is the key of the Secret verify.secretRef names: armored
// OpenPGP public keys trusted to sign.
const SecretKeyKeys = "keys"

// LocalObjectReference names an object in the referrer's namespace.
type LocalObjectReference struct {
	Name string `json:"name"`
}

// GitVerify turns on OpenPGP signature verification of the resolved
// revision; the trusted keys are in a Secret.
type GitVerify struct {
	Mode          string               `json:"mode"`
	SecretRef     LocalObjectReference `json:"secretRef"`
	AllowRewrites bool                 `json:"allowRewrites,omitempty"`
}

// GitSourceStatus is what the controller last observed of a GitSource.
type GitSourceStatus struct {
	ObservedGeneration int64              `json:"observedGeneration,omitempty"`
	Conditions         []metav1.Condition `json:"conditions,omitempty"`
}

// App is one directory of a GitSource applied to the cluster under a
// stable set of field managers.
type App struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   AppSpec   `json:"spec"`
	Status AppStatus `json:"status,omitempty"`
}

// SourceReference names the GitSource an App renders.
type SourceReference struct {
	Kind string `json:"kind"`
	Name string `json:"name"`
	// Namespace defaults to the App's; another namespace is not allowed
	// yet (cross-namespace references are not implemented).
	Namespace string `json:"namespace,omitempty"`
}

// AppSpec is an App's desired state: the apps[] fields of syncd.yaml.
// Its field names are those of the file where they mean the same;
// namespace became targetNamespace (it would read as the App's own) and
// installsSyncd is file-only (no tenant may install syncd).
type AppSpec struct {
	SourceRef       SourceReference `json:"sourceRef"`
	TargetNamespace string          `json:"targetNamespace,omitempty"`
	Suspend         bool            `json:"suspend,omitempty"`
	// SubstituteFrom are ConfigMaps and Secrets of the App's namespace
	// (a file config's apps may also name files; an App may not).
	SubstituteFrom []SubstituteReference `json:"substituteFrom,omitempty"`
	// Decryption takes its keys from a Secret of the App's namespace
	// instead of a file.
	Decryption *Decryption `json:"decryption,omitempty"`
	// Cluster applies the App to another cluster than syncd's own, with
	// a kubeconfig from a Secret of the App's namespace (the file
	// config's apps[].cluster; docs/clusters.md).
	Cluster *ClusterReference `json:"cluster,omitempty"`

	// AppSpec (path, prune, conflicts, helm, ...) is the file config's
	// own type, so an App and an apps[] entry cannot drift apart.
	config.AppSpec `json:",inline"`
}

// ClusterReference names the cluster an App is applied to: the
// kubeconfig in a Secret of the App's namespace, one of its contexts,
// and where the inventory is kept there.
type ClusterReference struct {
	// Name is the cluster's name in /status, logs and metrics; default
	// Context, else the Secret's name. It is not "local".
	Name       string           `json:"name,omitempty"`
	KubeConfig KubeConfigSource `json:"kubeConfig"`
	// Context is the kubeconfig context; default its current-context.
	Context string `json:"context,omitempty"`
	// InventoryNamespace is the namespace on that cluster holding the
	// App's inventory Secret; default syncd's inventory namespace.
	InventoryNamespace string `json:"inventoryNamespace,omitempty"`
}

// KubeConfigSource is where an App's kubeconfig is, like Flux's
// spec.kubeConfig.
type KubeConfigSource struct {
	SecretRef SecretKeyReference `json:"secretRef"`
}

// SecretKeyReference names one key of a Secret in the referrer's
// namespace.
type SecretKeyReference struct {
	Name string `json:"name"`
	// Key defaults to config.DefaultKubeconfigKey ("value").
	Key string `json:"key,omitempty"`
}

// SubstituteReference is a ConfigMap or Secret in the App's namespace
// whose data keys are substitution variables.
type SubstituteReference struct {
	// Kind is config.SubstituteConfigMap or config.SubstituteSecret.
	Kind      string `json:"kind"`
	Name      string `json:"name"`
	Optional  bool   `json:"optional,omitempty"`
	Sensitive bool   `json:"sensitive,omitempty"`
}

// Decryption decrypts an App's SOPS-encrypted files with the private
// keys held in a Secret of the App's namespace: every key of the Secret
// holds age identities or armored OpenPGP private keys.
type Decryption struct {
	// Provider is config.DecryptionSOPS, the only one.
	Provider  string               `json:"provider"`
	SecretRef LocalObjectReference `json:"secretRef"`
}

// AppStatus is what the controller last did for an App.
type AppStatus struct {
	ObservedGeneration    int64              `json:"observedGeneration,omitempty"`
	Conditions            []metav1.Condition `json:"conditions,omitempty"`
	LastAppliedRevision   string             `json:"lastAppliedRevision,omitempty"`
	LastAttemptedRevision string             `json:"lastAttemptedRevision,omitempty"`
	LastReconcileTime     *metav1.Time       `json:"lastReconcileTime,omitempty"`
	// LastHandledReconcileAt is the value of the RequestedAtAnnotation
	// the last reconcile handled.
	LastHandledReconcileAt string        `json:"lastHandledReconcileAt,omitempty"`
	Objects                *ObjectCounts `json:"objects,omitempty"`
	LastPrune              *PruneSummary `json:"lastPrune,omitempty"`
	// Drift is what the drift watcher last found; it is written on its
	// own, as the watcher sees changes, suspended Apps included.
	Drift *DriftSummary `json:"drift,omitempty"`
	// Handoffs lists the objects of the last apply whose fields left Git
	// and are held at their live value by the handoff manager until
	// another manager owns them (docs/handoff.md); at most
	// MaxStatusHandoffs entries, objects.handoffsPending counts them all.
	Handoffs []PendingHandoff `json:"handoffs,omitempty"`
}

// DriftSummary counts the fields of an App's objects that differ from
// the plan the drift watcher follows.
type DriftSummary struct {
	// Findings is the number of drift findings (ignored and yielded
	// fields are not drift).
	Findings int `json:"findings"`
	// Revision is the revision of the plan compared against.
	Revision string      `json:"revision,omitempty"`
	Time     metav1.Time `json:"time"`
}

// ObjectCounts counts the objects of an App's last apply.
type ObjectCounts struct {
	Total     int `json:"total"`
	Changed   int `json:"changed"`
	Conflicts int `json:"conflicts"`
	Failed    int `json:"failed"`
	// HandoffsPending is the number of object slices whose fields are
	// held by the handoff manager.
	HandoffsPending int `json:"handoffsPending"`
}

// MaxStatusHandoffs bounds status.handoffs so that an App's status stays
// small whatever the number of objects.
const MaxStatusHandoffs = 20

// PendingHandoff is one object slice whose fields are held for another
// manager to take.
type PendingHandoff struct {
	// Object is the object as "group/Kind namespace/name".
	Object string `json:"object"`
	// Manager is the slice's field manager whose fields are held.
	Manager string `json:"manager"`
	// Fields are the held field paths.
	Fields []string `json:"fields"`
}

// PruneSummary is the last prune that removed or refused something.
type PruneSummary struct {
	Time     metav1.Time `json:"time"`
	Revision string      `json:"revision,omitempty"`
	Deleted  int         `json:"deleted"`
	Orphaned int         `json:"orphaned"`
	Spared   int         `json:"spared"`
	Message  string      `json:"message,omitempty"`
}

// DeepCopy returns a copy of the status that shares nothing with s.
func (s *AppStatus) DeepCopy() *AppStatus {
	out := *s
	out.Conditions = append([]metav1.Condition(nil), s.Conditions...)
	if s.LastReconcileTime != nil {
		t := *s.LastReconcileTime
		out.LastReconcileTime = &t
	}
	if s.Objects != nil {
		o := *s.Objects
		out.Objects = &o
	}
	if s.LastPrune != nil {
		p := *s.LastPrune
		out.LastPrune = &p
	}
	if s.Drift != nil {
		d := *s.Drift
		out.Drift = &d
	}
	out.Handoffs = nil
	for _, h := range s.Handoffs {
		h.Fields = append([]string(nil), h.Fields...)
		out.Handoffs = append(out.Handoffs, h)
	}
	return &out
}
