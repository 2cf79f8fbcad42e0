package e2e

import (
	"context"
	"encoding/json"
	"regexp"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
)

func clientset(t *testing.T) kubernetes.Interface {
	t.Helper()
	cs, err := kubernetes.NewForConfig(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

// ensureNamespace creates ns unless it exists.
func ensureNamespace(t *testing.T, ns string) {
	t.Helper()
	_, err := clientset(t).CoreV1().Namespaces().Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatalf("create namespace %s: %v", ns, err)
	}
}

// objectRef is an object as syncd's reports name it: "[group/]Kind
// [namespace/]name".
type objectRef struct {
	group, kind, namespace, name string
}

func (r objectRef) String() string {
	k := r.kind
	if r.group != "" {
		k = r.group + "/" + r.kind
	}
	if r.namespace == "" {
		return k + " " + r.name
	}
	return k + " " + r.namespace + "/" + r.name
}

// outcomeLine is one line of apply's output: "<kind> <ns/name> <action>".
var outcomeLine = regexp.MustCompile(`^(\S+) (\S+) (created|configured|unchanged|yielded|forced|handoff-pending|recreated|conflicted|failed|skipped|excluded|pruned|deleted)\b`)

// appliedObjects are the objects apply's output names, with their
// outcome.
func appliedObjects(out string) map[objectRef]string {
	objs := map[objectRef]string{}
	for _, line := range strings.Split(out, "\n") {
		m := outcomeLine.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		ref := objectRef{kind: m[1], name: m[2]}
		if g, k, ok := strings.Cut(m[1], "/"); ok {
			ref.group, ref.kind = g, k
		}
		if ns, n, ok := strings.Cut(m[2], "/"); ok {
			ref.namespace, ref.name = ns, n
		}
		objs[ref] = m[3]
	}
	return objs
}

// cluster reads live objects by the names syncd's reports use.
type cluster struct {
	dyn    dynamic.Interface
	mapper meta.ResettableRESTMapper
}

// newCluster reads the local cluster, the one syncd's kubeconfig names.
func newCluster(t *testing.T) *cluster {
	t.Helper()
	return newClusterFor(t, env.Config)
}

// newClusterFor reads the cluster of cfg (a second control plane).
func newClusterFor(t *testing.T, cfg *rest.Config) *cluster {
	t.Helper()
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return &cluster{dyn: dyn, mapper: restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(dc))}
}

// get reads one object.
func (c *cluster) get(ref objectRef) (*unstructured.Unstructured, error) {
	m, err := c.mapper.RESTMapping(schema.GroupKind{Group: ref.group, Kind: ref.kind})
	if err != nil {
		c.mapper.Reset()
		if m, err = c.mapper.RESTMapping(schema.GroupKind{Group: ref.group, Kind: ref.kind}); err != nil {
			return nil, err
		}
	}
	var ri dynamic.ResourceInterface = c.dyn.Resource(m.Resource)
	if ref.namespace != "" {
		ri = c.dyn.Resource(m.Resource).Namespace(ref.namespace)
	}
	return ri.Get(context.Background(), ref.name, metav1.GetOptions{})
}

// syncdEntries returns, for each object, its managedFields entries of
// syncd's managers (manager, operation, subresource, time and fields, as
// JSON). An apply that changed nothing leaves them as they were; the
// resourceVersion is no such witness, since controllers write status.
func (c *cluster) syncdEntries(t *testing.T, refs map[objectRef]string) map[objectRef]string {
	t.Helper()
	out := map[objectRef]string{}
	for ref := range refs {
		obj, err := c.get(ref)
		if err != nil {
			t.Fatalf("%s: %v", ref, err)
		}
		var mine []metav1.ManagedFieldsEntry
		for _, e := range obj.GetManagedFields() {
			if strings.HasPrefix(e.Manager, "syncd") {
				mine = append(mine, e)
			}
		}
		b, err := json.Marshal(mine)
		if err != nil {
			t.Fatal(err)
		}
		out[ref] = string(b)
	}
	return out
}
