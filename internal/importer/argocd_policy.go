package importer

import (
	"net/url"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"syncd.dev/syncd/internal/api/v1alpha1"
	"syncd.dev/syncd/internal/config"
)

// argoDestination maps spec.destination: the namespace, and another
// cluster than Argo CD's own as the App's cluster, whose kubeconfig the
// user puts in a Secret (Argo CD's cluster Secrets are not kubeconfigs).
func (im *importer) argoDestination(dest *fields) (string, *v1alpha1.ClusterReference) {
	ns, server, name := dest.str("namespace"), dest.str("server"), dest.str("name")
	dest.done()
	if server == inClusterServer || name == inClusterName || (server == "" && name == "") {
		return ns, nil
	}
	cluster := name
	if cluster == "" {
		if u, err := url.Parse(server); err == nil {
			cluster = u.Hostname()
		}
	}
	cluster = truncate(dnsLabel(cluster), 40)
	secret := cluster + "-kubeconfig"
	dest.im.warn(dest.d, dest.path, "another cluster than Argo CD's own: the App applies to it with the kubeconfig in key value of Secret %s (its namespace's); Argo CD's cluster Secret is not a kubeconfig, so create that Secret with a kubeconfig for %s", secret, cmpOr(server, name))
	return ns, &v1alpha1.ClusterReference{Name: cluster, KubeConfig: v1alpha1.KubeConfigSource{SecretRef: v1alpha1.SecretKeyReference{Name: secret}}}
}

// cmpOr returns the first non-empty string.
func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// argoSyncPolicy maps spec.syncPolicy. Without automated sync Argo CD
// only reports differences: the App does the same (drift mode detect).
// Argo CD prunes only with automated.prune.
func argoSyncPolicy(sp *fields) config.AppSpec {
	var spec config.AppSpec
	auto := sp.sub("automated")
	enabled, set := auto.boolean("enabled")
	if auto.m == nil || (set && !enabled) {
		sp.im.warn(sp.d, auto.path, "no automated sync: syncd has no manual sync, so the App only reports drift and never writes (drift.mode: detect); set drift.mode: correct (or remove it) to apply")
		spec.Drift.Mode = config.DriftDetect
	}
	prune, _ := auto.boolean("prune")
	spec.Prune = boolPtr(prune)
	spec.AllowEmpty, _ = auto.boolean("allowEmpty")
	if heal, _ := auto.boolean("selfHeal"); auto.m != nil && !heal {
		auto.im.warn(auto.d, auto.field("selfHeal"), "not set: syncd corrects drift at each poll of the source, and there is no mode that applies Git's changes but leaves drift (drift.mode: detect reports only)")
	}
	auto.done()
	for _, o := range sp.strings("syncOptions") {
		argoSyncOption(sp, o, &spec)
	}
	sp.none("retry", "a failed App is retried with exponential backoff (not configurable per App)")
	sp.none("managedNamespaceMetadata", "syncd does not create the destination namespace: add a Namespace object, with these labels and annotations, to the App's path")
	sp.done()
	return spec
}

// argoSyncOption maps one syncOptions entry ("Name=value").
func argoSyncOption(sp *fields, option string, spec *config.AppSpec) {
	name, value, _ := strings.Cut(option, "=")
	switch {
	case name == "ServerSideApply" || name == "RespectIgnoreDifferences" || name == "ApplyOutOfSyncOnly":
		// What syncd always does.
	case name == "FailOnSharedResource":
		// A field another manager owns is a conflict by default.
	case name == "Validate" && value == "false":
		sp.warn("syncOptions", "%s: syncd validates each stage with a server-side dry run; validate: false (set on the App) applies each object on its own, but schema validation by the server stays", option)
	case name == "Replace" || name == "Force":
		sp.warn("syncOptions", "%s: syncd always applies server-side and never replaces; recreate: true re-creates an object when a change touches an immutable field", option)
	case name == "CreateNamespace" && value == "true":
		sp.warn("syncOptions", "%s: syncd does not create the destination namespace; add a Namespace object to the App's path, or create it before", option)
	case name == "PruneLast":
		sp.warn("syncOptions", "%s: syncd prunes after the App's objects are applied; there is no per-object order", option)
	default:
		sp.warn("syncOptions", "%s has no syncd equivalent; not imported", option)
	}
}

// mustDuration parses a constant duration.
func mustDuration(s string) *metav1.Duration {
	d, err := time.ParseDuration(s)
	if err != nil {
		panic(err)
	}
	return &metav1.Duration{Duration: d}
}

// argoApplicationUnmapped warns about an Application's fields and
// metadata syncd has no equivalent of.
func argoApplicationUnmapped(spec *fields, d Document) {
	if p := spec.str("project"); p != "" && p != "default" {
		spec.warn("project", "%q: syncd has no projects; an App's namespace and its serviceAccountName (RBAC) bound what it may write (docs/security.md)", p)
	}
	spec.none("info", "informational only; not imported")
	spec.none("revisionHistoryLimit", "syncd keeps no history of syncs: each App's status has its last applied revision")
	spec.none("sourceHydrator", "manifest hydration is not supported: point the App at the hydrated branch")
	if w := d.Object.GetAnnotations()["argocd.argoproj.io/sync-wave"]; w != "" {
		spec.im.warn(d, "metadata.annotations", "argocd.argoproj.io/sync-wave %s: syncd has no waves; to apply this App after others, list them in its spec.dependsOn (with wait: true on them)", w)
	}
}

// hasFinalizer reports whether d's object has a finalizer whose name
// starts with name (Argo CD's may end with /foreground or /background).
func hasFinalizer(d Document, name string) bool {
	for _, f := range d.Object.GetFinalizers() {
		if strings.HasPrefix(f, name) {
			return true
		}
	}
	return false
}
