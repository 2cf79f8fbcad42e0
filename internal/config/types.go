package config

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// APIVersion is the only apiVersion a syncd config file may declare.
const APIVersion = "syncd/v1alpha1"

// Kind is the only kind a syncd config file may declare.
const Kind = "Config"

// Config is the content of a syncd.yaml file: where manifests come from
// (Sources), what is applied and how (Apps), and who is told (Alerts).
type Config struct {
	APIVersion string   `json:"apiVersion"`
	Kind       string   `json:"kind"`
	Sources    []Source `json:"sources,omitempty"`
	Apps       []App    `json:"apps,omitempty"`
	Alerts     []Alert  `json:"alerts,omitempty"`

	// File is the path the config was loaded from; it is not part of the
	// YAML and is set by Load so errors can name the file.
	File string `json:"-"`
}

// Source is one place syncd polls: a Git repository (Git), an OCI
// artifact in a registry (OCI, see OCISource) or a Helm chart repository
// (Helm, see HelmSource). Exactly one is set.
type Source struct {
	Name string     `json:"name"`
	Git  GitSource  `json:"git,omitzero"`
	OCI  *OCISource `json:"oci,omitempty"`
	// Helm is a Helm chart repository; apps pick a chart from it with
	// helm.chart and helm.version.
	Helm *HelmSource `json:"helm,omitempty"`
}

// GitSource says where a Git repository is, which revision to follow and
// how often to look.
type GitSource struct {
	// URL is an https, http, ssh or file URL (scp-like "git@host:path" is
	// accepted as ssh).
	URL string `json:"url"`

	GitRef `json:",inline"`

	Auth   *GitAuth   `json:"auth,omitempty"`
	Verify *GitVerify `json:"verify,omitempty"`
}

// GitRef says which revision of a repository to follow and when to look.
// It is the one definition of these fields: sources[].git embeds it, and
// so does the GitSource custom resource's spec (package api/v1alpha1),
// so the file and the object cannot drift apart. Exactly one of Branch,
// Tag, Semver and Commit is set, and exactly one of Interval and
// Schedule.
//
// The +kubebuilder markers are the GitSource CRD's validation
// (controller-gen, hack/generate.sh); the file's is validate.go.
//
// +kubebuilder:object:generate=true
type GitRef struct {
	// Branch to follow, without refs/heads/ (e.g. main). Exactly one of
	// branch, tag, semver and commit is set.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=1024
	// +kubebuilder:validation:XValidation:rule=`!self.startsWith('refs/')`,message=`write the branch name without "refs/heads/"`
	Branch string `json:"branch,omitempty"`
	// Tag to follow, without refs/tags/ (e.g. v1.2.0). A re-tagged tag is
	// followed.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=1024
	// +kubebuilder:validation:XValidation:rule=`!self.startsWith('refs/')`,message=`write the tag name without "refs/tags/"`
	Tag string `json:"tag,omitempty"`
	// Semver is a constraint over the repository's tags; the highest
	// matching tag is followed (e.g. ">=1.2.0 <2.0.0", "~1.4" or "^2").
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=1024
	Semver string `json:"semver,omitempty"`
	// Commit is a full commit hash to pin to (40 hex digits for SHA-1, 64
	// for SHA-256).
	// +kubebuilder:validation:MaxLength=1024
	// +kubebuilder:validation:XValidation:rule=`self.matches('^([0-9a-fA-F]{40}|[0-9a-fA-F]{64})$')`,messageExpression=`'"' + self + '" is not a full commit hash; write all 40 (SHA-1) or 64 (SHA-256) hex digits, abbreviated hashes are ambiguous'`
	Commit string `json:"commit,omitempty"`

	// Interval is how often the repository is polled, as a duration (e.g.
	// 1m, 5m). Exactly one of interval and schedule is set.
	// +kubebuilder:validation:MaxLength=1024
	// +kubebuilder:validation:XValidation:rule=`duration(self) > duration('0s')`,message=`interval must be positive, e.g. 1m or 5m`
	// +kubebuilder:validation:Type=string
	Interval *metav1.Duration `json:"interval,omitempty"`
	// Schedule is when the repository is polled, as five cron fields
	// ("*/5 * * * *"), a descriptor (@hourly, @daily) or @every with a
	// duration (@every 5m). Exactly one of interval and schedule is set.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=1024
	Schedule string `json:"schedule,omitempty"`
}

// GitAuth names files holding credentials; the files are re-read on every
// poll so rotated secrets take effect without a restart.
type GitAuth struct {
	// Username for HTTP basic auth with TokenFile; default "git".
	Username       string `json:"username,omitempty"`
	TokenFile      string `json:"tokenFile,omitempty"`
	SSHKeyFile     string `json:"sshKeyFile,omitempty"`
	KnownHostsFile string `json:"knownHostsFile,omitempty"`
}

// Verification modes for GitVerify.Mode.
const (
	VerifyHead = "head"
	VerifyTag  = "tag"
)

// GitVerify turns on OpenPGP signature verification of the resolved
// revision.
type GitVerify struct {
	Mode     string `json:"mode"`
	KeysFile string `json:"keysFile"`
	// AllowRewrites lets a branch source follow a new head that does not
	// descend from the last verified head (a force-push); default false:
	// such a head is refused. Only for branch sources.
	AllowRewrites bool `json:"allowRewrites,omitempty"`
}

// App is one set of manifests applied to the cluster under a stable set of
// field managers: an apps[] entry of syncd.yaml. What it shares with the
// App custom resource is its AppSpec; the fields here are the file's own.
type App struct {
	Name   string `json:"name"`
	Source string `json:"source"`

	// Namespace is given to namespaced objects that set none.
	Namespace string `json:"namespace,omitempty"`
	// InstallsSyncd marks the one app that installs syncd itself (its
	// namespace, Deployment, config, RBAC): only it may write syncd's own
	// objects, which every other app is refused (see docs/security.md).
	// Other apps' inventory Secrets stay off-limits to it too.
	InstallsSyncd bool `json:"installsSyncd,omitempty"`
	// SubstituteFrom lists where more variables come from, later entries
	// winning over earlier ones (Flux's spec.postBuild.substituteFrom).
	SubstituteFrom []SubstituteSource `json:"substituteFrom,omitempty"`
	// Decryption decrypts the app's SOPS-encrypted files with keys syncd
	// holds; without it a SOPS-encrypted file fails the render.
	Decryption *Decryption `json:"decryption,omitempty"`
	// Cluster applies the app to another cluster than syncd's own (see
	// ClusterSpec and docs/clusters.md); nil: syncd's own (LocalCluster).
	Cluster *ClusterSpec `json:"cluster,omitempty"`

	// AppSpec holds how the app is rendered and applied; the App
	// custom resource's spec embeds it too.
	AppSpec `json:",inline"`
}

// AppSpec is how an app is rendered, applied, pruned and watched: the
// fields an apps[] entry of syncd.yaml and the spec of an App custom
// resource (package api/v1alpha1) share. It is defined once so that a
// field added here is in both: the file's parser and validation, the
// App CRD's schema (generated from these types, their comments and
// +kubebuilder markers by hack/generate.sh), the controller's
// translation and syncd convert. The markers are the CRD's admission
// rules; the file's validation (validate.go) checks the same and more.
//
// +kubebuilder:object:generate=true
type AppSpec struct {
	// Path is the directory in the source's tree holding a kustomization
	// or plain YAML/JSON manifests, relative to the repository root and
	// slash-separated (e.g. deploy/prod); default the root.
	// +kubebuilder:validation:MaxLength=1024
	// +kubebuilder:validation:XValidation:rule=`!self.contains('\\')`,messageExpression=`'"' + self + '": use forward slashes in paths'`
	// +kubebuilder:validation:XValidation:rule=`!self.startsWith('/')`,messageExpression=`'"' + self + '" is absolute; write the directory relative to the repository root, e.g. deploy/prod'`
	// +kubebuilder:validation:XValidation:rule=`!self.matches('(^|/)[.][.](/|$)')`,messageExpression=`'"' + self + '" leaves the repository (..); write a directory inside it, relative to the root'`
	Path string `json:"path,omitempty"`
	// Prune deletes objects that left Git, through the prune guards
	// (budget, adopted objects, protected kinds); for an App, it also
	// deletes the App's objects when the App is deleted. Default true;
	// false leaves them.
	// +kubebuilder:default=true
	Prune *bool `json:"prune,omitempty"`
	// AllowEmpty lets a render with no objects prune every object of the
	// app; default false: an empty render prunes nothing.
	AllowEmpty bool `json:"allowEmpty,omitempty"`
	// AllowRewinds lets a revision that does not descend from the last
	// applied one (a force-push, a rollback of a pin) prune; default
	// false: it is applied and reported, and its prune is refused.
	AllowRewinds bool `json:"allowRewinds,omitempty"`
	// PruneBudget is the largest share of the app's objects, in percent
	// (0-100), that one prune may delete; default 25.
	// +kubebuilder:validation:XValidation:rule=`self >= 0 && self <= 100`,message=`pruneBudget is not a percentage; use 0 to 100 (the largest share of the app's objects one prune may delete; default 25)`
	PruneBudget *int `json:"pruneBudget,omitempty"`
	// Adopted says what prune does with objects that existed before
	// syncd first applied them: orphan (the default: leave the object,
	// remove syncd's label and managers) or delete.
	// +kubebuilder:validation:MaxLength=1024
	// +kubebuilder:validation:XValidation:rule=`self in ['orphan', 'delete']`,messageExpression=`'"' + self + '" is not an adopted action; use orphan (default: leave the object, remove syncd\'s label and managers) or delete'`
	Adopted string `json:"adopted,omitempty"`
	// Handoff says what happens to a field a manager stops declaring that
	// nobody else owns and the server would reset to a default: hold
	// (the default) keeps it at its live value under "<manager>-handoff"
	// until another manager owns it; release lets it go at once.
	// +kubebuilder:validation:MaxLength=1024
	// +kubebuilder:validation:XValidation:rule=`self in ['hold', 'release']`,messageExpression=`'"' + self + '" is not a handoff mode; use hold (default) or release'`
	Handoff string `json:"handoff,omitempty"`
	// Recreate allows deleting and re-creating an object when a change
	// touches an immutable field; default false (the change fails with
	// the field named).
	Recreate bool `json:"recreate,omitempty"`
	// Validate dry-runs every object of a stage that will be written
	// before the first write of that stage; a refusal by the API server
	// writes nothing of the stage or of later ones. Default true; false
	// applies each object on its own (for very large first syncs).
	Validate *bool `json:"validate,omitempty"`
	// DryRunAll dry-runs every object the validation judges, including
	// the new ConfigMaps of a large first sync that syncd otherwise
	// judges itself when no admission webhook, admission policy or quota
	// of the cluster can see them; default false. Set it on a cluster
	// whose API server has admission plugins built in that judge
	// ConfigMaps. Only with validate.
	DryRunAll bool `json:"dryRunAll,omitempty"`
	// Wait waits after applying each stage until its objects are Current
	// (kstatus), up to Timeout from the end of the stage.
	Wait bool `json:"wait,omitempty"`
	// Timeout bounds each stage's wait (a duration, default 5m); only
	// with wait.
	// +kubebuilder:validation:MaxLength=1024
	// +kubebuilder:validation:XValidation:rule=`duration(self) > duration('0s')`,message=`timeout must be a positive duration such as 5m`
	// +kubebuilder:validation:Type=string
	Timeout *metav1.Duration `json:"timeout,omitempty"`
	// ServiceAccountName makes every request for the app's objects run as
	// that service account (system:serviceaccount:<namespace>:<name>, by
	// impersonation), so the app cannot write outside the account's RBAC.
	// A file app needs a namespace for it. An App's account is of its
	// target namespace, which must then be unset or the App's own; an App
	// without one runs as the service account syncd's
	// --default-service-account names (of the App's namespace), or as
	// syncd when that flag is unset.
	// +kubebuilder:validation:MaxLength=1024
	// +kubebuilder:validation:XValidation:rule=`self.size() <= 253 && self.matches('^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$')`,messageExpression=`'"' + self + '" is not a valid service account name'`
	ServiceAccountName string `json:"serviceAccountName,omitempty"`
	// Manager is the default field manager; default "syncd-<name>" for a
	// file app and "syncd-<namespace>-<name>" for an App (when
	// <namespace>-<name> is longer than 63 characters, its first 54 and a
	// hash: docs/apps.md, Names). At most 128 characters.
	// +kubebuilder:validation:MaxLength=128
	Manager string `json:"manager,omitempty"`
	// Split hands the fields at some paths of some kinds to additional
	// field managers.
	// +kubebuilder:validation:MaxItems=100
	Split []SplitRule `json:"split,omitempty"`
	// Conflicts decides, per field another manager owns, whether the
	// apply fails, forces or yields.
	Conflicts ConflictPolicy `json:"conflicts,omitzero"`
	// Migrate takes over objects other tools applied before syncd (teams
	// moving to syncd): the fields of the managers it names move to the
	// app's managers. Without it, only client-side kubectl apply's fields
	// whose value Git does not change move; everything else another
	// manager owns is shared or a conflict under Conflicts.
	Migrate *Migrate `json:"migrate,omitempty"`
	// Drift says whether syncd corrects drift or only reports it.
	Drift DriftPolicy `json:"drift,omitzero"`
	// Sensitive marks fields whose values syncd never prints (drift
	// reports, alerts, plan previews, logs), like Secret data.
	// +kubebuilder:validation:MaxItems=100
	Sensitive []SensitiveRule `json:"sensitive,omitempty"`
	// Substitute sets variables that replace ${NAME} and ${NAME:=default}
	// in every rendered object (Flux's spec.postBuild.substitute); it
	// wins over substituteFrom. An object opts out with the annotation
	// syncd.dev/substitute: disabled.
	// +kubebuilder:validation:MaxProperties=1000
	// +kubebuilder:validation:XValidation:rule=`self.all(k, k.matches('^[_a-zA-Z][_a-zA-Z0-9]*$'))`,message=`a key of substitute is not a variable name: use letters, digits and underscores, not starting with a digit`
	Substitute map[string]SubstituteValue `json:"substitute,omitempty"`
	// SubstituteStrict refuses an object that uses a variable set
	// nowhere and without a default; default true. False replaces such
	// a variable with the empty string, as Flux does without its
	// StrictPostBuildSubstitutions feature gate.
	SubstituteStrict *bool `json:"substituteStrict,omitempty"`
	// DependsOn names the apps this app is applied after. A file app is
	// applied only once each of them has reconciled its current revision
	// successfully (healthy too, when that app waits); the names are of
	// other apps of the config, none in drift mode detect, and the
	// dependencies form no cycle. An App names Apps of its namespace: it
	// is applied only once each of them is Ready for its current
	// generation at the revision it last attempted; until then it is
	// Ready=False with reason DependencyNotReady (kstatus InProgress),
	// naming what it waits for, and Apps whose dependsOn lead back to
	// themselves are Stalled with reason DependencyCycle, naming the
	// cycle.
	// +kubebuilder:validation:MaxItems=100
	// +listType=set
	// +kubebuilder:validation:items:MaxLength=63
	// +kubebuilder:validation:items:XValidation:rule=`self.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?$')`,messageExpression=`'"' + self + '" is not an App name (lowercase letters, digits and -, at most 63)'`
	DependsOn []string `json:"dependsOn,omitempty"`
	// Ignore names fields whose difference from Git is neither reported
	// as drift, nor alerted, nor corrected (a webhook or an operator
	// mutates them without a manager of its own). A field matches a rule
	// when every list the rule sets matches; an empty list matches
	// everything, except paths, which is required.
	// +kubebuilder:validation:MaxItems=100
	Ignore []IgnoreRule `json:"ignore,omitempty"`
	// Helm says how the Helm chart in Path (a directory holding
	// Chart.yaml) is rendered (docs/helm.md). It is refused for an app
	// whose path is not a chart.
	// +kubebuilder:validation:XValidation:rule=`!has(self.releaseName) || (self.releaseName.size() <= 63 && self.releaseName.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?$'))`,message=`the release name is not a valid release name (lowercase letters, digits and -, at most 63)`
	Helm *HelmSpec `json:"helm,omitempty"`
}

// SubstituteValue is the value of a variable of AppSpec.Substitute.
// +kubebuilder:validation:MaxLength=65536
type SubstituteValue string

// Values of Decryption.Provider.
const (
	DecryptionSOPS = "sops"
)

// Decryption says how to decrypt an app's encrypted files (Flux's
// spec.decryption).
type Decryption struct {
	// Provider is DecryptionSOPS, the only one: files encrypted by
	// `sops --encrypt` for age or OpenPGP recipients.
	Provider string `json:"provider"`
	// KeysFile holds the private keys: age identities (age-keygen's
	// AGE-SECRET-KEY-1… lines) and armored OpenPGP private keys. A
	// relative name is taken from the config file's directory; it must
	// not be inside the repository the app renders.
	KeysFile string `json:"keysFile"`
}

// Kinds of SubstituteSource.
const (
	SubstituteConfigMap = "ConfigMap"
	SubstituteSecret    = "Secret"
)

// SubstituteSource is one place variables come from: a file on syncd's
// side, or a ConfigMap or Secret in syncd's own namespace. Exactly one of
// File and Kind is set.
type SubstituteSource struct {
	// File is a YAML file holding a mapping of variable names to values,
	// relative to the config file.
	File string `json:"file,omitempty"`
	// Kind is SubstituteConfigMap or SubstituteSecret; Name names it. Its
	// data keys are the variables.
	Kind string `json:"kind,omitempty"`
	Name string `json:"name,omitempty"`
	// Optional skips a file, ConfigMap or Secret that does not exist;
	// default false: the app fails.
	Optional bool `json:"optional,omitempty"`
	// Sensitive marks a file's or ConfigMap's values as secret (a
	// Secret's always are): syncd never prints them.
	Sensitive bool `json:"sensitive,omitempty"`
}

// IgnoreRule matches fields by the object's kind, name and namespace,
// the field path and the managers that own the field; an empty list
// matches everything, except Paths, which is required.
//
// +kubebuilder:object:generate=true
type IgnoreRule struct {
	// Kinds are "group/Kind" ("apps/Deployment") or "Kind" for the core
	// group; empty means every kind.
	// +kubebuilder:validation:MaxItems=100
	// +kubebuilder:validation:items:MaxLength=1024
	Kinds []string `json:"kinds,omitempty"`
	// Names are globs on the object's name; empty means every name.
	// +kubebuilder:validation:MaxItems=100
	// +kubebuilder:validation:items:MaxLength=1024
	Names []string `json:"names,omitempty"`
	// Namespaces are globs on the object's namespace; empty means every
	// namespace.
	// +kubebuilder:validation:MaxItems=100
	// +kubebuilder:validation:items:MaxLength=1024
	Namespaces []string `json:"namespaces,omitempty"`
	// Paths use the API server's notation with wildcards
	// (.spec.replicas, .metadata.annotations[*]); a field below a matched
	// path is ignored too. At least one is required: an ignore rule
	// ignores fields, never whole objects (use the annotation
	// syncd.dev/reconcile: disabled for that).
	// +kubebuilder:validation:MaxItems=100
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:items:MaxLength=1024
	Paths []string `json:"paths"`
	// Managers are globs on the managers other than the app's that own
	// the field; set, the rule matches only fields such a manager owns.
	// +kubebuilder:validation:MaxItems=100
	// +kubebuilder:validation:items:MaxLength=1024
	Managers []string `json:"managers,omitempty"`
}

// Values of DriftPolicy.Mode.
const (
	DriftCorrect = "correct"
	DriftDetect  = "detect"
)

// DriftPolicy says what syncd does about an app's drift.
//
// +kubebuilder:object:generate=true
type DriftPolicy struct {
	// Mode is correct (the default): syncd applies the app and corrects
	// drift under the conflict policy, which decides what happens to
	// fields others took; or detect: syncd never writes to the cluster
	// for the app, it only renders, watches and reports drift.
	// +kubebuilder:validation:MaxLength=1024
	// +kubebuilder:validation:XValidation:rule=`self in ['correct', 'detect']`,messageExpression=`'"' + self + '" is not a drift mode; use correct (default: apply and correct drift under the conflict policy) or detect (never write to the cluster, only report drift)'`
	Mode string `json:"mode,omitempty"`
}

// SensitiveRule marks the fields at Paths of objects of Kinds as
// sensitive: their values are shown as "<redacted>".
//
// +kubebuilder:object:generate=true
type SensitiveRule struct {
	// Kinds are "group/Kind" ("apps/Deployment") or "Kind" for the core
	// group; empty means every kind.
	// +kubebuilder:validation:MaxItems=100
	// +kubebuilder:validation:items:MaxLength=1024
	Kinds []string `json:"kinds,omitempty"`
	// Paths use the API server's notation with wildcards, as split
	// rules do (".data.password", ".spec.template.spec.containers[*].env").
	// A field below a matched path is sensitive too.
	// +kubebuilder:validation:MaxItems=100
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:items:MaxLength=1024
	Paths []string `json:"paths"`
}

// SplitRule gives the fields at Paths of objects of Kinds to Manager.
//
// +kubebuilder:object:generate=true
type SplitRule struct {
	// Manager owns the fields this rule splits off; it must differ from
	// the app's default manager.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=128
	Manager string `json:"manager"`
	// Kinds are "group/Kind" ("apps/Deployment") or "Kind" for the core
	// group; empty means every kind.
	// +kubebuilder:validation:MaxItems=100
	// +kubebuilder:validation:items:MaxLength=1024
	Kinds []string `json:"kinds,omitempty"`
	// Paths use the API server's notation with wildcards:
	// ".spec.template.spec.containers[*].image".
	// +kubebuilder:validation:MaxItems=100
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:items:MaxLength=1024
	Paths []string `json:"paths"`
}

// Action is what the applier does about a field conflict.
type Action string

// Conflict actions.
const (
	ActionFail  Action = "fail"
	ActionForce Action = "force"
	ActionYield Action = "yield"
)

// ConflictPolicy decides, per conflicting field, what the applier does.
//
// +kubebuilder:object:generate=true
type ConflictPolicy struct {
	// Default applies when no rule matches: fail (the default), force or
	// yield.
	// +kubebuilder:validation:MaxLength=1024
	// +kubebuilder:validation:XValidation:rule=`self in ['fail', 'force', 'yield']`,messageExpression=`'"' + self + '" is not a conflict action; use fail, force or yield'`
	Default Action `json:"default,omitempty"`
	// Rules match conflicts by object kind and name, field path and the
	// other manager; the first matching rule wins.
	// +kubebuilder:validation:MaxItems=100
	Rules []ConflictRule `json:"rules,omitempty"`
}

// Values of Migrate.Mode.
const (
	MigrateSameValue = "same-value"
	MigrateForce     = "force"
)

// ClientSideManagers are the managers of client-side kubectl apply and
// of objects written before managedFields existed. Their fields whose
// value Git does not change always move to the app's managers.
var ClientSideManagers = []string{"kubectl-client-side-apply", "before-first-apply"}

// Migrate names the managers whose ownership an app takes over.
//
// +kubebuilder:object:generate=true
type Migrate struct {
	// From lists the managers (globs, as conflict rules' managers) whose
	// fields the app takes: "kustomize-controller", "kubectl",
	// "kubectl-client-side-apply". Required.
	// +kubebuilder:validation:MaxItems=100
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:items:MaxLength=1024
	From []string `json:"from"`
	// Mode is same-value (the default): only fields whose live value
	// already equals the declared one move, and a different value is a
	// conflict under the app's policy; or force: fields with a different
	// value are taken too, whatever the policy.
	// +kubebuilder:validation:MaxLength=1024
	// +kubebuilder:validation:XValidation:rule=`self in ['same-value', 'force']`,messageExpression=`'"' + self + '" is not a migrate mode; use same-value (default: only fields whose live value Git does not change move) or force (fields with another value are taken too)'`
	Mode string `json:"mode,omitempty"`
}

// Forces reports whether m takes fields with a different value.
func (m *Migrate) Forces() bool { return m != nil && m.Mode == MigrateForce }

// ConflictRule matches conflicts by object kind and name, field path and
// the other manager's name; the first matching rule wins. An empty list
// matches everything.
//
// +kubebuilder:object:generate=true
type ConflictRule struct {
	// Kinds are "group/Kind" or "Kind" for the core group.
	// +kubebuilder:validation:MaxItems=100
	// +kubebuilder:validation:items:MaxLength=1024
	Kinds []string `json:"kinds,omitempty"`
	// Names are object names (globs).
	// +kubebuilder:validation:MaxItems=100
	// +kubebuilder:validation:items:MaxLength=1024
	Names []string `json:"names,omitempty"`
	// Paths are field paths in the API server's notation.
	// +kubebuilder:validation:MaxItems=100
	// +kubebuilder:validation:items:MaxLength=1024
	Paths []string `json:"paths,omitempty"`
	// Managers are the other managers' names (globs).
	// +kubebuilder:validation:MaxItems=100
	// +kubebuilder:validation:items:MaxLength=1024
	Managers []string `json:"managers,omitempty"`
	// Action is fail, force or yield.
	// +kubebuilder:validation:MaxLength=1024
	// +kubebuilder:validation:XValidation:rule=`self in ['fail', 'force', 'yield']`,messageExpression=`'"' + self + '" is not a conflict action; use fail, force or yield'`
	Action Action `json:"action"`
}

// Alert sink types.
const (
	AlertSlack   = "slack"
	AlertMSTeams = "msteams"
	AlertDiscord = "discord"
	AlertWebhook = "webhook"
)

// Alert is one chat or webhook destination.
type Alert struct {
	Name string `json:"name"`
	Type string `json:"type"`
	// URLFile holds the webhook URL (it embeds a secret for most providers).
	URLFile string `json:"urlFile"`
	// HMACKeyFile holds the key that signs "webhook" payloads.
	HMACKeyFile string `json:"hmacKeyFile,omitempty"`
	// Events are the alertevent names the alert is sent for; empty
	// means every event.
	Events []string `json:"events,omitempty"`
}

// DefaultManager returns the app's default field manager name.
func (a App) DefaultManager() string {
	if a.Manager != "" {
		return a.Manager
	}
	return "syncd-" + a.Name
}

// PruneEnabled reports whether the app prunes (default true); for an App
// object, also whether deleting the App prunes its objects.
func (a AppSpec) PruneEnabled() bool {
	return a.Prune == nil || *a.Prune
}

// Validates reports whether the app validates each stage with a
// server-side dry run before writing it (default true).
func (a AppSpec) Validates() bool {
	return a.Validate == nil || *a.Validate
}

// Substitutes reports whether the app substitutes variables: it sets
// substitute or substituteFrom.
func (a App) Substitutes() bool {
	return len(a.Substitute) > 0 || len(a.SubstituteFrom) > 0
}

// StrictSubstitution reports whether a variable set nowhere and without a
// default fails the object (default true).
func (a AppSpec) StrictSubstitution() bool {
	return a.SubstituteStrict == nil || *a.SubstituteStrict
}

// DefaultPruneBudget is the share of an app's objects, in percent, one
// prune may delete when the app sets no pruneBudget.
const DefaultPruneBudget = 25

// Values of App.Adopted.
const (
	AdoptedOrphan = "orphan"
	AdoptedDelete = "delete"
)

// PruneBudgetPercent returns the app's prune budget in percent (default
// DefaultPruneBudget).
func (a AppSpec) PruneBudgetPercent() int {
	if a.PruneBudget == nil {
		return DefaultPruneBudget
	}
	return *a.PruneBudget
}

// Values of App.Handoff.
const (
	HandoffHold    = "hold"
	HandoffRelease = "release"
)

// DeleteAdopted reports whether prune deletes adopted objects instead of
// orphaning them (default false).
func (a AppSpec) DeleteAdopted() bool {
	return a.Adopted == AdoptedDelete
}

// DetectOnly reports whether the app's drift mode is DriftDetect: syncd
// never writes to the cluster for it.
func (a AppSpec) DetectOnly() bool {
	return a.Drift.Mode == DriftDetect
}

// DriftMode returns the app's drift mode (default DriftCorrect).
func (a AppSpec) DriftMode() string {
	if a.Drift.Mode == "" {
		return DriftCorrect
	}
	return a.Drift.Mode
}

// DefaultAction returns the app's conflict default (default fail).
func (p ConflictPolicy) DefaultAction() Action {
	if p.Default == "" {
		return ActionFail
	}
	return p.Default
}

// Ref kinds returned by GitSource.Ref.
const (
	RefBranch = "branch"
	RefTag    = "tag"
	RefSemver = "semver"
	RefCommit = "commit"
)

// Ref returns which kind of revision the source follows (RefBranch,
// RefTag, RefSemver or RefCommit) and its value. A validated source sets
// exactly one; Ref returns empty strings when none is set.
func (g GitSource) Ref() (kind, value string) {
	switch {
	case g.Branch != "":
		return RefBranch, g.Branch
	case g.Tag != "":
		return RefTag, g.Tag
	case g.Semver != "":
		return RefSemver, g.Semver
	case g.Commit != "":
		return RefCommit, g.Commit
	}
	return "", ""
}

// BasicUsername returns the HTTP basic auth user sent with the token
// (default "git").
func (a GitAuth) BasicUsername() string {
	if a.Username == "" {
		return "git"
	}
	return a.Username
}

// TreePath returns the app's directory in the source's tree ("." when
// unset). It is slash-separated and relative to the repository root.
func (a AppSpec) TreePath() string {
	if a.Path == "" {
		return "."
	}
	return a.Path
}

// Managers returns every field manager of the app: the default manager
// first, then the split managers in the order written.
func (a App) Managers() []string {
	ms := []string{a.DefaultManager()}
	for _, s := range a.Split {
		ms = append(ms, s.Manager)
	}
	return ms
}

// Source returns the source named name.
func (c *Config) Source(name string) (Source, bool) {
	for _, s := range c.Sources {
		if s.Name == name {
			return s, true
		}
	}
	return Source{}, false
}

// Wants reports whether the alert is sent for event (an empty Events list
// means every event).
func (a Alert) Wants(event string) bool {
	if len(a.Events) == 0 {
		return true
	}
	for _, e := range a.Events {
		if e == event {
			return true
		}
	}
	return false
}
