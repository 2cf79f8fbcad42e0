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

// GitSource is a Git repository syncd polls, and the revision of it to
// follow (a branch, a tag, a semver range of tags or a commit). Apps in
// the same namespace render directories of it (App.spec.sourceRef).
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=gs,categories=syncd
// +kubebuilder:printcolumn:name="URL",type=string,JSONPath=`.spec.url`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Revision",type=string,JSONPath=`.status.revision`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:printcolumn:name="Status",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].message`,priority=1
type GitSource struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is where the repository is, which revision to follow and how
	// often to look.
	Spec GitSourceSpec `json:"spec"`
	// Status is what the controller last observed of the GitSource.
	Status GitSourceStatus `json:"status,omitempty"`
}

// GitSourceSpec is a GitSource's desired state: the sources[].git fields
// of syncd.yaml, with credentials in a Secret instead of files.
//
// The URL rule is on the spec, not on url, with fieldPath: a refusal
// shows the value of the field the rule is on, and this one would show
// the secret.
//
// +kubebuilder:validation:XValidation:rule=`has(self.branch) || has(self.tag) || has(self.semver) || has(self.commit)`,message=`no revision to follow; set one of branch, tag, semver or commit`
// +kubebuilder:validation:XValidation:rule=`[has(self.branch), has(self.tag), has(self.semver), has(self.commit)].filter(x, x).size() <= 1`,message=`more than one of branch, tag, semver and commit is set; keep exactly one of branch, tag, semver and commit`
// +kubebuilder:validation:XValidation:rule=`has(self.interval) || has(self.schedule)`,message=`no polling schedule; set interval (e.g. 5m) or schedule (cron, e.g. "*/5 * * * *")`
// +kubebuilder:validation:XValidation:rule=`!(has(self.interval) && has(self.schedule))`,message=`interval and schedule are both set; keep one`
// +kubebuilder:validation:XValidation:rule=`!self.url.matches('^[A-Za-z][A-Za-z0-9+.-]*://[^/@]*:[^/@]*@')`,fieldPath=`.url`,message=`the URL embeds a password or token; remove it from the URL and put it in the Secret named by secretRef (key token)`
// +kubebuilder:validation:XValidation:rule=`!self.url.matches('^[A-Za-z][A-Za-z0-9+.-]*://') || self.url.lowerAscii().matches('^(https?|ssh|git|file)://')`,fieldPath=`.url`,message=`the URL scheme is not one Git fetches over; use https://host/org/repo.git, ssh://git@host/org/repo.git or git@host:org/repo.git (an oci:// artifact is an OCISource, a chart repository a HelmSource)`
// +kubebuilder:validation:XValidation:rule=`!has(self.verify) || self.verify.mode != 'tag' || has(self.tag) || has(self.semver)`,message=`mode tag verifies the signature of the tag being followed, but this source follows a branch or a commit; use mode head, or follow a tag or semver`
// +kubebuilder:validation:XValidation:rule=`!has(self.verify) || !has(self.verify.allowRewrites) || !self.verify.allowRewrites || has(self.branch)`,message=`allowRewrites applies to branch sources only (only a branch head is checked to descend from the last verified head); remove it`
type GitSourceSpec struct {
	// URL of the repository: https://host/org/repo.git,
	// ssh://git@host/org/repo.git or git@host:org/repo.git (scp-like,
	// ssh). It must not embed a password or token; put credentials in the
	// Secret named by secretRef. A file URL or a local path is refused:
	// it would read syncd's own disk, where other Apps' clones are (a
	// local repository is for the operator's config file only).
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=2048
	// +kubebuilder:validation:XValidation:rule=`!self.startsWith('git://')`,message=`the git:// protocol is neither authenticated nor encrypted; use https or ssh`
	// +kubebuilder:validation:XValidation:rule=`!self.lowerAscii().trim().startsWith('file:')`,message=`a file URL reads syncd's own disk, where other Apps' clones are, not a repository of yours: a GitSource fetches over the network; use https://host/org/repo.git or ssh (git@host:org/repo.git). A local repository is for the operator's config file only`
	// +kubebuilder:validation:XValidation:rule=`self.matches('^[^/:]+:.')`,message=`the URL is a local path, which reads syncd's own disk: a GitSource fetches over the network; use https://host/org/repo.git or ssh (git@host:org/repo.git)`
	URL string `json:"url"`

	// GitRef (branch, tag, semver, commit, interval, schedule) is the
	// file config's own type, so the two cannot drift apart.
	config.GitRef `json:",inline"`

	// SecretRef names a Secret in the GitSource's namespace holding the
	// credentials: for https, key token (sent as HTTP basic auth, with
	// key username, default "git"); for ssh, keys identity (the private
	// key) and known_hosts (syncd always checks the server's host key).
	// The Secret is read again on every reconcile, so a rotated
	// credential takes effect without a restart.
	SecretRef *LocalObjectReference `json:"secretRef,omitempty"`
	// Verify turns on OpenPGP signature verification of the resolved
	// revision.
	Verify *GitVerify `json:"verify,omitempty"`
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
	// Name of the Secret.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`
}

// GitVerify turns on OpenPGP signature verification of the resolved
// revision; the trusted keys are in a Secret.
type GitVerify struct {
	// Mode is head (verify the signature of the commit) or tag (verify
	// the signature of the tag being followed; tag and semver sources
	// only).
	// +kubebuilder:validation:MaxLength=1024
	// +kubebuilder:validation:XValidation:rule=`self in ['head', 'tag']`,messageExpression=`'"' + self + '" is not a verification mode; use head or tag'`
	Mode string `json:"mode"`
	// SecretRef names a Secret in the GitSource's namespace whose key
	// keys holds the armored OpenPGP public keys trusted to sign.
	SecretRef LocalObjectReference `json:"secretRef"`
	// AllowRewrites lets a branch source follow a new head that does not
	// descend from the last verified head (a force-push). Default false:
	// such a head is refused. Branch sources only.
	AllowRewrites bool `json:"allowRewrites,omitempty"`
}

// GitSourceStatus is what the controller last observed of a GitSource.
type GitSourceStatus struct {
	// ObservedGeneration is the metadata.generation the conditions
	// describe.
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// Conditions are Ready (the spec is valid and its Secrets exist).
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
	// Revision is the commit an App of the source last fetched, with
	// the ref that led to it (main@sha1:0123..., v1.2.0@sha1:...).
	Revision string `json:"revision,omitempty"`
	// LastFetchTime is when that revision was fetched (written when the
	// revision changes; a poll that finds the same commit writes
	// nothing).
	LastFetchTime *metav1.Time `json:"lastFetchTime,omitempty"`
}

// App is one directory of a GitSource (a kustomization or plain
// YAML/JSON manifests) that syncd applies to the cluster with
// server-side apply under a stable set of field managers, keeps in sync,
// and prunes when objects leave Git. It is the in-cluster form of one
// apps[] entry of syncd.yaml.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:categories=syncd
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Revision",type=string,JSONPath=`.status.lastAppliedRevision`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:printcolumn:name="Status",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].message`
// +kubebuilder:validation:XValidation:rule=`self.metadata.name.size() <= 63 && self.metadata.name.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?$')`,message=`the App's name is not a valid app name (lowercase letters, digits and -, at most 63); it becomes part of the app's manager and object names`
// +kubebuilder:validation:XValidation:rule=`!has(self.spec.dependsOn) || !(self.metadata.name in self.spec.dependsOn)`,messageExpression=`'App "' + self.metadata.name + '" depends on itself; remove it from its own spec.dependsOn'`
type App struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is what to apply, from where, and how.
	Spec AppSpec `json:"spec"`
	// Status is what the controller last did for the App.
	Status AppStatus `json:"status,omitempty"`
}

// SourceReference names the source an App renders: a GitSource, a
// HelmSource or an OCISource.
type SourceReference struct {
	// Kind of the source: GitSource (render spec.path of the
	// repository), HelmSource (render the chart spec.helm.chart of the
	// chart repository) or OCISource (render spec.path of the artifact).
	// +kubebuilder:validation:MaxLength=1024
	// +kubebuilder:validation:XValidation:rule=`self in ['GitSource', 'HelmSource', 'OCISource']`,messageExpression=`'"' + self + '" is not a source kind; use GitSource, HelmSource or OCISource'`
	Kind string `json:"kind"`
	// Name of the source.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=1024
	Name string `json:"name"`
	// Namespace of the source; default the App's namespace. A source in
	// another namespace is refused unless syncd runs with
	// --allow-cross-namespace-sources (the App would use that source's
	// credentials).
	// +kubebuilder:validation:MaxLength=1024
	Namespace string `json:"namespace,omitempty"`
}

// AppSpec is an App's desired state: the apps[] fields of syncd.yaml.
// What the two share is config.AppSpec, embedded; the fields here are
// the App's own: sourceRef (the file's source), targetNamespace (the
// file's namespace: it would read as the App's own), suspend, and
// substituteFrom, decryption and cluster, which name objects of the
// App's namespace where the file names files. installsSyncd is
// file-only (no tenant may install syncd).
//
// The Helm rules tying chart, version and valuesSource to the source's
// kind are here, not on config.HelmSpec: they read spec.sourceRef,
// which the file config does not have.
//
// +kubebuilder:validation:XValidation:rule=`!has(self.timeout) || (has(self.wait) && self.wait)`,message=`timeout only applies with wait: true; set wait: true or drop timeout`
// +kubebuilder:validation:XValidation:rule=`!has(self.dryRunAll) || !self.dryRunAll || !has(self.validate) || self.validate`,message=`dryRunAll only applies with validation on; remove validate: false or drop dryRunAll`
// +kubebuilder:validation:XValidation:rule=`!has(self.substituteStrict) || has(self.substitute) || has(self.substituteFrom)`,message=`substituteStrict has no effect without substitute or substituteFrom; remove it, or set variables`
// +kubebuilder:validation:XValidation:rule=`!has(self.helm) || !has(self.helm.namespace) || !has(self.targetNamespace) || self.helm.namespace == self.targetNamespace`,message=`helm.namespace differs from targetNamespace: objects that set no namespace go to the target namespace, so set the namespace once (targetNamespace)`
// +kubebuilder:validation:XValidation:rule=`self.sourceRef.kind == 'HelmSource' || !has(self.helm) || (!has(self.helm.chart) && !has(self.helm.version))`,fieldPath=`.helm`,message=`chart and version pick a chart of a HelmSource, and this App's source is not one: set sourceRef.kind HelmSource, or put the chart directory in the source and set path to it`
// +kubebuilder:validation:XValidation:rule=`self.sourceRef.kind != 'HelmSource' || (has(self.helm) && has(self.helm.chart))`,fieldPath=`.helm`,message=`the App's source is a HelmSource: name the chart to render from it in helm.chart (e.g. podinfo), and optionally helm.version`
// +kubebuilder:validation:XValidation:rule=`self.sourceRef.kind != 'HelmSource' || !has(self.path)`,fieldPath=`.path`,message=`path is for GitSources and OCISources; the chart of a HelmSource is named by helm.chart: remove path`
// +kubebuilder:validation:XValidation:rule=`!has(self.helm) || !has(self.helm.valuesSource)`,fieldPath=`.helm`,message=`valuesSource names a source of syncd.yaml and is for the config file only; an App reads valuesFiles from its chart (a HelmSource's or an OCISource's) or from its GitSource's tree`
type AppSpec struct {
	// SourceRef names the source whose tree (GitSource, OCISource) or
	// chart (HelmSource) the App renders.
	SourceRef SourceReference `json:"sourceRef"`
	// TargetNamespace is given to namespaced objects that set none;
	// default the App's namespace. (In syncd.yaml this field is
	// apps[].namespace.)
	// +kubebuilder:validation:MaxLength=1024
	// +kubebuilder:validation:XValidation:rule=`self.size() <= 63 && self.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?$')`,messageExpression=`'"' + self + '" is not a valid namespace'`
	TargetNamespace string `json:"targetNamespace,omitempty"`
	// Suspend stops reconciling the App: nothing is applied, corrected or
	// pruned until it is false again. The status keeps its last values.
	Suspend bool `json:"suspend,omitempty"`
	// SubstituteFrom lists ConfigMaps and Secrets of the App's namespace
	// whose data keys are more variables, later entries winning over
	// earlier ones (Flux's spec.postBuild.substituteFrom). syncd reads
	// them with its own identity, so it needs get on them (docs/apps.md).
	// A file config's apps may also name files; an App may not.
	// +kubebuilder:validation:MaxItems=100
	SubstituteFrom []SubstituteReference `json:"substituteFrom,omitempty"`
	// Decryption decrypts the App's SOPS-encrypted files (YAML, JSON,
	// dotenv; age and OpenPGP recipients) in memory as the render reads
	// them, with the private keys of a Secret in the App's namespace.
	// Without it, a SOPS-encrypted file fails the render.
	Decryption *Decryption `json:"decryption,omitempty"`
	// Cluster applies the App to another cluster than syncd's own, with
	// the kubeconfig held in a Secret of the App's namespace (never
	// syncd's): the App's objects and its inventory are on that cluster;
	// the App, its status and its Events stay on syncd's. The kubeconfig
	// may not run exec plugins or name files. Without it, the App is
	// applied to syncd's own cluster ("local"). See docs/clusters.md.
	Cluster *ClusterReference `json:"cluster,omitempty"`

	// AppSpec (path, prune, conflicts, helm, ...) is the file config's
	// own type, so an App and an apps[] entry cannot drift apart.
	config.AppSpec `json:",inline"`
}

// ClusterReference names the cluster an App is applied to: the
// kubeconfig in a Secret of the App's namespace, one of its contexts,
// and where the inventory is kept there.
type ClusterReference struct {
	// Name is the cluster's name in syncd's /status, logs and the
	// metrics' cluster label; default context, else the Secret's name.
	// It may not be "local" (syncd's own cluster).
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:XValidation:rule=`self != 'local'`,message=`the cluster name "local" stands for syncd's own cluster; set cluster.name to another name`
	// +kubebuilder:validation:XValidation:rule=`self.matches('^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$')`,messageExpression=`'cluster name "' + self + '" cannot be a metrics label value (at most 63 letters, digits, \'-\', \'_\' and \'.\'): set cluster.name'`
	Name string `json:"name,omitempty"`
	// KubeConfig is where the cluster's kubeconfig is.
	KubeConfig KubeConfigSource `json:"kubeConfig"`
	// Context is the kubeconfig context to use; default its
	// current-context.
	// +kubebuilder:validation:MaxLength=253
	Context string `json:"context,omitempty"`
	// InventoryNamespace is the namespace on that cluster holding the
	// App's inventory Secret; default syncd's inventory namespace. It
	// must exist.
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:XValidation:rule=`self.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?$')`,messageExpression=`'"' + self + '" is not a namespace name (lowercase letters, digits and -, at most 63)'`
	InventoryNamespace string `json:"inventoryNamespace,omitempty"`
}

// KubeConfigSource is where an App's kubeconfig is, like Flux's
// spec.kubeConfig.
type KubeConfigSource struct {
	// SecretRef names a Secret in the App's namespace and its key holding
	// the kubeconfig (as Flux's spec.kubeConfig.secretRef). It is read
	// before each reconcile, so rotated credentials are used at the next.
	SecretRef SecretKeyReference `json:"secretRef"`
}

// SecretKeyReference names one key of a Secret in the referrer's
// namespace.
type SecretKeyReference struct {
	// Name of the Secret.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`
	// Key of the Secret holding the kubeconfig; default value.
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:default=value
	// +kubebuilder:validation:XValidation:rule=`self.matches('^[-._a-zA-Z0-9]+$')`,messageExpression=`'"' + self + '" is not a valid Secret key (letters, digits, -, _ and .)'`
	Key string `json:"key,omitempty"`
}

// SubstituteReference is a ConfigMap or Secret of the App's namespace
// holding variables: its data keys are substitution variables.
type SubstituteReference struct {
	// Kind is ConfigMap or Secret.
	// +kubebuilder:validation:MaxLength=1024
	// +kubebuilder:validation:XValidation:rule=`self in ['ConfigMap', 'Secret']`,messageExpression=`'"' + self + '" is not a kind variables come from; use ConfigMap or Secret'`
	Kind string `json:"kind"`
	// Name of the ConfigMap or Secret, in the App's namespace.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`
	// Optional skips a ConfigMap or Secret that does not exist; default
	// false (the App fails).
	Optional bool `json:"optional,omitempty"`
	// Sensitive marks a ConfigMap's values as secret (a Secret's always
	// are); syncd never prints them.
	Sensitive bool `json:"sensitive,omitempty"`
}

// Decryption decrypts an App's SOPS-encrypted files with the private
// keys held in a Secret of the App's namespace: every key of the Secret
// holds age identities or armored OpenPGP private keys.
type Decryption struct {
	// Provider is sops, the only one.
	// +kubebuilder:validation:MaxLength=1024
	// +kubebuilder:validation:XValidation:rule=`self == 'sops'`,messageExpression=`'"' + self + '" is not a decryption provider; use sops'`
	Provider string `json:"provider"`
	// SecretRef names a Secret in the App's namespace; each of its keys
	// holds age identities (age-keygen's AGE-SECRET-KEY-1... lines) or
	// armored OpenPGP private keys (keys ending .agekey and .asc, as Flux
	// names them, work as they are).
	SecretRef LocalObjectReference `json:"secretRef"`
}

// AppStatus is what the controller last did for an App.
type AppStatus struct {
	// ObservedGeneration is the metadata.generation the status describes.
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// Conditions are Ready (the last reconcile of this generation applied
	// everything), Reconciling (a new generation is being worked on) and
	// Stalled (the last attempt failed to render, apply or prune; it is
	// retried with backoff). A source that cannot be polled makes Ready
	// False with reason SourceFailed, not Stalled: the poll heals by
	// itself and the last applied revision stays in force.
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
	// LastAppliedRevision is the commit (tag@commit for tags) last
	// applied in full.
	LastAppliedRevision string `json:"lastAppliedRevision,omitempty"`
	// LastAttemptedRevision is the commit of the last attempt, successful
	// or not.
	LastAttemptedRevision string `json:"lastAttemptedRevision,omitempty"`
	// LastReconcileTime is when the last attempt ended.
	LastReconcileTime *metav1.Time `json:"lastReconcileTime,omitempty"`
	// LastHandledReconcileAt is the value of the annotation
	// syncd.dev/requestedAt the last reconcile handled; set the
	// annotation to a new value (e.g. the time) to reconcile the App now.
	LastHandledReconcileAt string `json:"lastHandledReconcileAt,omitempty"`
	// Objects counts the objects of the last apply.
	Objects *ObjectCounts `json:"objects,omitempty"`
	// LastPrune is the last prune that removed or refused something.
	LastPrune *PruneSummary `json:"lastPrune,omitempty"`
	// Drift is what the drift watcher last found: it compares the App's
	// objects with the plan last applied (or rendered, in drift mode
	// detect) as they change, suspended Apps included. It is written on
	// its own, as the watcher sees changes.
	Drift *DriftSummary `json:"drift,omitempty"`
	// Handoffs lists the object slices of the last apply whose fields
	// left Git and are held at their live value by the handoff manager
	// until another manager owns them (docs/handoff.md); at most
	// 20 entries (MaxStatusHandoffs), objects.handoffsPending counts
	// them all.
	// +kubebuilder:validation:MaxItems=20
	Handoffs []PendingHandoff `json:"handoffs,omitempty"`
	// Warnings are the warnings of the last render ("file: message":
	// kustomize's deprecated fields, objects the planner fixed); they
	// never stop a sync. At most 20 (MaxStatusWarnings).
	// +kubebuilder:validation:MaxItems=20
	Warnings []string `json:"warnings,omitempty"`
}

// DriftSummary counts the fields of an App's objects that differ from
// the plan the drift watcher follows.
type DriftSummary struct {
	// Findings is the number of fields that drifted (ignored and yielded
	// fields are not drift); 0 when the cluster matches Git.
	// +optional
	Findings int `json:"findings"`
	// Overlaps counts the objects another syncd app declares with the
	// same values as this App, once per object and app: information, not
	// drift (docs/drift.md).
	// +optional
	Overlaps int `json:"overlaps,omitempty"`
	// Revision is the revision of the plan compared against.
	Revision string `json:"revision,omitempty"`
	// Time is when the count last changed.
	// +optional
	Time metav1.Time `json:"time"`
}

// ObjectCounts counts the objects of an App's last apply.
type ObjectCounts struct {
	// Total is the number of objects the render declared.
	// +optional
	Total int `json:"total"`
	// Changed is the number the API server wrote (created or
	// configured).
	// +optional
	Changed int `json:"changed"`
	// Conflicts is the number blocked by field conflicts.
	// +optional
	Conflicts int `json:"conflicts"`
	// Failed is the number whose apply failed.
	// +optional
	Failed int `json:"failed"`
	// HandoffsPending is the number of object slices whose fields left
	// Git and are held at their live value by the handoff manager until
	// another manager owns them.
	// +optional
	HandoffsPending int `json:"handoffsPending"`
}

// MaxStatusHandoffs bounds status.handoffs so that an App's status stays
// small whatever the number of objects.
const MaxStatusHandoffs = 20

// MaxStatusWarnings bounds status.warnings.
const MaxStatusWarnings = 20

// PendingHandoff is one object slice whose fields are held for another
// manager to take.
type PendingHandoff struct {
	// Object is the object as "group/Kind namespace/name".
	Object string `json:"object"`
	// Manager is the slice's field manager whose fields are held.
	Manager string `json:"manager"`
	// Fields are the held field paths, e.g. .spec.replicas.
	Fields []string `json:"fields"`
}

// PruneSummary is the last prune that removed or refused something.
type PruneSummary struct {
	// Time is when the prune ran.
	// +optional
	Time metav1.Time `json:"time"`
	// Revision is the commit whose apply the prune followed.
	Revision string `json:"revision,omitempty"`
	// Deleted is the number of objects deleted.
	// +optional
	Deleted int `json:"deleted"`
	// Orphaned is the number of adopted objects left in the cluster
	// without syncd's label and managers.
	// +optional
	Orphaned int `json:"orphaned"`
	// Spared is the number of objects a guard kept; they are retried.
	// +optional
	Spared int `json:"spared"`
	// Message summarises the prune in one line.
	Message string `json:"message,omitempty"`
}
