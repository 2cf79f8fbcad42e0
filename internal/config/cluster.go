package config

import (
	"path/filepath"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
)

// LocalCluster is the cluster name of an app without a cluster section:
// the cluster syncd itself connects to (--kubeconfig and --context, or
// the service account of its pod). /status and the metrics' cluster label
// show it; no remote cluster may be named so.
const LocalCluster = "local"

// DefaultKubeconfigKey is the key of ClusterSpec.SecretRef read when
// none is given, as Flux's spec.kubeConfig.secretRef.
const DefaultKubeconfigKey = "value"

// ClusterSpec says which cluster an app is applied to, when not syncd's
// own: a kubeconfig in a file on syncd's side or in a Secret of syncd's
// namespace (read through syncd's own cluster), and one of its contexts.
// Exactly one of KubeconfigFile and SecretRef is set.
type ClusterSpec struct {
	// Name is the cluster's name in /status, logs and the metrics'
	// cluster label; default Context, else the kubeconfig's file name
	// without extension, else the Secret's name. It is not "local".
	Name string `json:"name,omitempty"`
	// KubeconfigFile is a kubeconfig file, relative to the config file's
	// directory; it must not be inside the repository the app renders.
	KubeconfigFile string `json:"kubeconfigFile,omitempty"`
	// SecretRef is a Secret in syncd's namespace holding a kubeconfig
	// (only where syncd talks to its own cluster: the daemon and the
	// apply, plan and drift commands).
	SecretRef *SecretKeyRef `json:"secretRef,omitempty"`
	// Context is the kubeconfig context; default its current-context.
	Context string `json:"context,omitempty"`
	// InventoryNamespace is the namespace on the target cluster holding
	// the app's inventory Secret; default the one syncd keeps its own
	// cluster's inventories in (--inventory-namespace). It must exist.
	InventoryNamespace string `json:"inventoryNamespace,omitempty"`
}

// SecretKeyRef names one key of a Secret in syncd's namespace.
type SecretKeyRef struct {
	Name string `json:"name"`
	// Key defaults to DefaultKubeconfigKey.
	Key string `json:"key,omitempty"`
}

// KeyOrDefault returns the key to read: Key, or DefaultKubeconfigKey.
func (r SecretKeyRef) KeyOrDefault() string {
	if r.Key == "" {
		return DefaultKubeconfigKey
	}
	return r.Key
}

// ClusterName returns the name of the cluster the app is applied to:
// LocalCluster without a cluster section, else ClusterSpec.DisplayName.
func (a App) ClusterName() string {
	if a.Cluster == nil {
		return LocalCluster
	}
	return a.Cluster.DisplayName()
}

// IsRemote reports whether the app is applied to a cluster other than
// syncd's own.
func (a App) IsRemote() bool { return a.Cluster != nil }

// DisplayName returns Name, else Context, else the kubeconfig file's name
// without its extension, else the Secret's name.
func (c ClusterSpec) DisplayName() string {
	switch {
	case c.Name != "":
		return c.Name
	case c.Context != "":
		return c.Context
	case c.KubeconfigFile != "":
		base := filepath.Base(c.KubeconfigFile)
		return strings.TrimSuffix(base, filepath.Ext(base))
	case c.SecretRef != nil:
		return c.SecretRef.Name
	}
	return ""
}

// sameTarget reports whether two cluster sections name the same
// kubeconfig, context and inventory namespace.
func (c ClusterSpec) sameTarget(o ClusterSpec) bool {
	sameSecret := (c.SecretRef == nil) == (o.SecretRef == nil) &&
		(c.SecretRef == nil || (c.SecretRef.Name == o.SecretRef.Name && c.SecretRef.KeyOrDefault() == o.SecretRef.KeyOrDefault()))
	return sameSecret && c.KubeconfigFile == o.KubeconfigFile && c.Context == o.Context && c.InventoryNamespace == o.InventoryNamespace
}

// cluster checks an app's cluster section; cp is its field.
func (v *validator) cluster(p, cp string, a App) {
	c := a.Cluster
	if c == nil {
		return
	}
	switch {
	case c.KubeconfigFile == "" && c.SecretRef == nil:
		v.errorf(cp, "app %s: cluster needs kubeconfigFile or secretRef: name the kubeconfig of the cluster to apply the app to, or remove cluster to apply it to syncd's own", a.Name)
	case c.KubeconfigFile != "" && c.SecretRef != nil:
		v.errorf(cp, "app %s: cluster sets both kubeconfigFile and secretRef: keep one", a.Name)
	}
	if s := c.SecretRef; s != nil {
		if s.Name == "" {
			v.errorf(cp+".secretRef.name", "app %s: secretRef.name is required: the Secret in syncd's namespace holding the kubeconfig", a.Name)
		} else if errs := validation.IsDNS1123Subdomain(s.Name); len(errs) > 0 {
			v.errorf(cp+".secretRef.name", "app %s: %q is not a valid Secret name: %s", a.Name, s.Name, strings.Join(errs, "; "))
		}
		if errs := validation.IsConfigMapKey(s.KeyOrDefault()); len(errs) > 0 {
			v.errorf(cp+".secretRef.key", "app %s: %q is not a valid Secret key: %s", a.Name, s.Key, strings.Join(errs, "; "))
		}
	}
	if c.InventoryNamespace != "" {
		v.dnsLabel(cp+".inventoryNamespace", "namespace", c.InventoryNamespace)
	}
	v.clusterName(cp, a)
	if a.InstallsSyncd {
		v.errorf(p+".installsSyncd", "app %s: installsSyncd is for the app that installs syncd on its own cluster: remove cluster, or installsSyncd", a.Name)
	}
}

// clusterName checks the name an app's cluster goes by.
func (v *validator) clusterName(cp string, a App) {
	name := a.Cluster.DisplayName()
	field := cp + ".name"
	switch {
	case name == LocalCluster:
		v.errorf(field, "app %s: the cluster name %q stands for syncd's own cluster: set cluster.name to another name", a.Name, LocalCluster)
	case name == "" && a.Cluster.Name == "":
		return // reported with the missing kubeconfig
	case len(validation.IsValidLabelValue(name)) > 0:
		v.errorf(field, "app %s: cluster name %q cannot be a metrics label value (at most 63 letters, digits, '-', '_' and '.'): set cluster.name", a.Name, name)
	}
}

// clusters checks that apps giving their cluster the same name describe
// the same cluster: /status and the metrics could not tell them apart.
func (v *validator) clusters(c *Config) {
	first := map[string]int{}
	for i, a := range c.Apps {
		if a.Cluster == nil {
			continue
		}
		name := a.Cluster.DisplayName()
		j, seen := first[name]
		if !seen {
			first[name] = i
			continue
		}
		if !c.Apps[j].Cluster.sameTarget(*a.Cluster) {
			v.errorf(index("apps", i)+".cluster", "app %s: cluster %q is also the name of app %s's cluster (apps[%d]), with another kubeconfig, context or inventory namespace: give one of them another cluster.name", a.Name, name, c.Apps[j].Name, j)
		}
	}
}
