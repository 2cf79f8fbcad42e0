package reconcile

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"os"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"

	"syncd.dev/syncd/internal/config"
	"syncd.dev/syncd/internal/egress"
	"syncd.dev/syncd/internal/identity"
	"syncd.dev/syncd/internal/inventory"
)

// TargetsOptions say how the clients of remote clusters are made.
type TargetsOptions struct {
	// Local reads the Secrets holding kubeconfigs (cluster.secretRef) on
	// syncd's own cluster; nil: an app naming one fails.
	Local dynamic.Interface
	// LocalConfig is Local's client config: the targets of App objects
	// (ForAppObject) read the kubeconfig Secret of an app with a service
	// account through a copy impersonating it. Nil: such an app fails;
	// its Secret is never read as syncd.
	LocalConfig *rest.Config
	// Namespace is syncd's own namespace, where those Secrets are.
	Namespace string
	// Inventory, when set, are the options of the remote clusters'
	// inventories (syncd's own inventory's: version, metrics, prune
	// budget, watch cache); each gets its cluster's clients, its own live
	// cache, and the app's cluster.inventoryNamespace when set. Nil: no
	// inventory, no prune (syncd drift).
	Inventory *inventory.Options
	// Configure adjusts each remote client config before use (user
	// agent, transport, rate limit); nil: none.
	Configure func(*rest.Config)
	// ProbeTimeout bounds the reachability check before each run
	// (default DefaultProbeTimeout).
	ProbeTimeout time.Duration
	// AllowKubeconfigProxy lets a kubeconfig from a Secret name a
	// proxy-url (syncd's --allow-kubeconfig-proxy); false: refused, as
	// whoever writes the Secret would choose where syncd connects.
	AllowKubeconfigProxy bool

	// secretsAsTenant reads the kubeconfig Secret of an app with a
	// service account as that account (ForAppObject).
	secretsAsTenant bool
}

// Targets makes and keeps the targets of remote clusters: one per
// cluster name, made again when its kubeconfig, context or inventory
// namespace changes (the kubeconfig is read before each run, so rotated
// credentials are used at the next one). The zero value is not usable:
// use NewTargets. Close stops their inventories' watches.
type Targets struct {
	opts   TargetsOptions
	mu     sync.Mutex
	byName map[string]keptTarget
}

// keptTarget is a target and what it was made from.
type keptTarget struct {
	fingerprint [32]byte
	target      *Target
}

// NewTargets returns an empty set of remote targets.
func NewTargets(opts TargetsOptions) *Targets {
	if opts.ProbeTimeout <= 0 {
		opts.ProbeTimeout = DefaultProbeTimeout
	}
	return &Targets{opts: opts, byName: map[string]keptTarget{}}
}

// ForAppObject returns an empty set of targets made with the same
// options for the apps of one App object of namespace: they read the
// Secret of cluster.secretRef in namespace instead of syncd's, and, for
// an app with a service account (serviceAccountName, or the default
// one), as that account (impersonating it through LocalConfig), never
// as syncd: the App's team names the Secret, and through syncd's
// identity it would reach a Secret its own account may not read. Its
// cluster names are its own (no target is shared with another App's).
// Nil stays nil.
func (ts *Targets) ForAppObject(namespace string) *Targets {
	if ts == nil {
		return nil
	}
	opts := ts.opts
	opts.Namespace, opts.secretsAsTenant = namespace, true
	return NewTargets(opts)
}

// Close stops the inventories of every target made.
func (ts *Targets) Close() {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	for name, k := range ts.byName {
		k.target.stop()
		delete(ts.byName, name)
	}
}

func (t *Target) stop() {
	if t.Inventory != nil {
		t.Inventory.Stop()
	}
}

// Resolve returns the target of a remote app: it reads the app's
// kubeconfig (file or Secret) and reuses the target made from the same
// kubeconfig, context and inventory namespace, or makes a new one.
// Nothing is sent to the remote cluster.
func (ts *Targets) Resolve(ctx context.Context, app config.App) (*Target, error) {
	spec := app.Cluster
	kc, err := ts.read(ctx, app)
	if err != nil {
		return nil, err
	}
	fp := fingerprint(kc.data, spec)
	name := app.ClusterName()
	ts.mu.Lock()
	defer ts.mu.Unlock()
	if k, ok := ts.byName[name]; ok && k.fingerprint == fp {
		return k.target, nil
	}
	cfg, err := kc.restConfig(spec.Context)
	if err != nil {
		return nil, fmt.Errorf("app %s: cluster %s: %w", app.Name, name, err)
	}
	t, err := ts.build(name, cfg, spec)
	if err != nil {
		return nil, fmt.Errorf("app %s: cluster %s: %w", app.Name, name, err)
	}
	if old, ok := ts.byName[name]; ok {
		old.target.stop()
	}
	ts.byName[name] = keptTarget{fingerprint: fp, target: t}
	return t, nil
}

// fingerprint identifies what a target is made from.
func fingerprint(data []byte, spec *config.ClusterSpec) [32]byte {
	h := sha256.New()
	h.Write(data)
	fmt.Fprintf(h, "\x00%s\x00%s", spec.Context, spec.InventoryNamespace)
	var out [32]byte
	copy(out[:], h.Sum(nil))
	return out
}

// build makes a remote cluster's clients, its inventory and its probe.
// Every one of them gets the server's error answers without a body that
// is not the API server's own status (egress.WithholdErrorBodies), so
// no error, status, Event, log or alert shows what another server sent.
func (ts *Targets) build(name string, cfg *rest.Config, spec *config.ClusterSpec) (*Target, error) {
	if ts.opts.Configure != nil {
		ts.opts.Configure(cfg)
	}
	cfg.Wrap(egress.WithholdErrorBodies)
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return nil, err
	}
	cl := Cluster{Dynamic: dyn, Mapper: restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(dc)), Config: cfg}
	inv, err := ts.inventory(name, cl, spec)
	if err != nil {
		return nil, err
	}
	t, err := newTarget(name, cl, inv)
	if err != nil {
		return nil, err
	}
	probe, err := discovery.NewDiscoveryClientForConfig(probeConfig(cfg, ts.opts.ProbeTimeout))
	if err != nil {
		return nil, err
	}
	t.probe = probe
	return t, nil
}

// inventory makes the remote cluster's inventory (nil when syncd runs
// without one): the parent Secrets live on that cluster, in the app's
// cluster.inventoryNamespace or syncd's inventory namespace, and its
// members are watched in a live cache of that cluster's own (name).
func (ts *Targets) inventory(name string, cl Cluster, spec *config.ClusterSpec) (*inventory.Manager, error) {
	if ts.opts.Inventory == nil {
		return nil, nil
	}
	md, err := metadata.NewForConfig(cl.Config)
	if err != nil {
		return nil, err
	}
	opts := *ts.opts.Inventory
	if spec.InventoryNamespace != "" {
		opts.Namespace = spec.InventoryNamespace
	}
	opts.Config, opts.Cluster, opts.Cache = cl.Config, name, nil
	return inventory.New(cl.Dynamic, md, cl.Mapper, opts)
}

// read reads an app's kubeconfig from its file or its Secret.
func (ts *Targets) read(ctx context.Context, app config.App) (kubeconfig, error) {
	spec := app.Cluster
	if spec.KubeconfigFile != "" {
		data, err := os.ReadFile(spec.KubeconfigFile)
		if err != nil {
			return kubeconfig{}, fmt.Errorf("app %s: cluster.kubeconfigFile: %w (write the cluster's kubeconfig there, beside the config file, not in Git)", app.Name, err)
		}
		return kubeconfig{data: data, path: spec.KubeconfigFile, where: "kubeconfigFile " + spec.KubeconfigFile}, nil
	}
	ref := spec.SecretRef
	where := fmt.Sprintf("Secret %s/%s key %s", ts.opts.Namespace, ref.Name, ref.KeyOrDefault())
	if ts.opts.Local == nil || ts.opts.Namespace == "" {
		return kubeconfig{}, fmt.Errorf("app %s: cluster.secretRef: this command does not read Secrets of syncd's namespace: use cluster.kubeconfigFile", app.Name)
	}
	r, err := ts.secretReader(app)
	if err != nil {
		return kubeconfig{}, err
	}
	data, err := r.value(ctx, ref)
	if err != nil {
		return kubeconfig{}, fmt.Errorf("app %s: cluster.secretRef (%s): %w", app.Name, where, err)
	}
	return kubeconfig{data: data, where: where, fromSecret: true, allowProxy: ts.opts.AllowKubeconfigProxy}, nil
}

// secretReader is whom an app's kubeconfig Secret is read as: its
// service account when the targets are an App object's and it has one,
// else syncd (Local).
func (ts *Targets) secretReader(app config.App) (secretReader, error) {
	r := secretReader{client: ts.opts.Local, namespace: ts.opts.Namespace}
	ten := TenantOf(app)
	user := identity.User(ten)
	if !ts.opts.secretsAsTenant || user == "" {
		return r, nil
	}
	cfg, err := identity.Config(ts.opts.LocalConfig, ten)
	if err != nil {
		return r, fmt.Errorf("app %s: cluster.secretRef: %w", app.Name, err)
	}
	if r.client, err = dynamic.NewForConfig(cfg); err != nil {
		return r, fmt.Errorf("app %s: cluster.secretRef: a client as %s: %w", app.Name, user, err)
	}
	r.user = user
	return r, nil
}

var secretsResource = schema.GroupVersionResource{Version: "v1", Resource: "secrets"}

// secretReader reads kubeconfig Secrets of one namespace.
type secretReader struct {
	client    dynamic.Interface
	namespace string
	// user is whom client reads as when it is not syncd (an App's
	// service account).
	user string
}

// value returns one key of a Secret, decoded.
func (r secretReader) value(ctx context.Context, ref *config.SecretKeyRef) ([]byte, error) {
	u, err := r.client.Resource(secretsResource).Namespace(r.namespace).Get(ctx, ref.Name, metav1.GetOptions{})
	switch {
	case apierrors.IsForbidden(err) && r.user != "":
		return nil, &SecretForbiddenError{Namespace: r.namespace, Secret: ref.Name, User: r.user, Err: err}
	case apierrors.IsNotFound(err):
		return nil, fmt.Errorf("not found: create it, e.g. kubectl -n %s create secret generic %s --from-file=%s=KUBECONFIG", r.namespace, ref.Name, ref.KeyOrDefault())
	case err != nil:
		return nil, err
	}
	enc, found, _ := unstructured.NestedString(u.Object, "data", ref.KeyOrDefault())
	if !found || enc == "" {
		return nil, fmt.Errorf("has no key %s: set cluster.secretRef.key to the key holding the kubeconfig", ref.KeyOrDefault())
	}
	data, err := base64.StdEncoding.DecodeString(enc)
	if err != nil {
		return nil, fmt.Errorf("key %s is not base64", ref.KeyOrDefault())
	}
	return data, nil
}

// SecretForbiddenError is a kubeconfig Secret (cluster.secretRef) that
// an App's service account may not read: the App's run stops before
// anything is sent, applied or pruned. It says what to grant, never
// anything of the Secret but its name.
type SecretForbiddenError struct {
	Namespace, Secret string
	// User is the service account the Secret was read as.
	User string
	Err  error
}

func (e *SecretForbiddenError) Error() string {
	return fmt.Sprintf("cannot be read as %s, the App's service account, which reads the kubeconfig Secret of spec.cluster: grant it get on Secret %s (a Role in namespace %s with resourceNames [%s] and a RoleBinding to the account), or name a Secret it may read; nothing is applied or pruned on the cluster until then",
		e.User, e.Secret, e.Namespace, e.Secret)
}

func (e *SecretForbiddenError) Unwrap() error { return e.Err }
