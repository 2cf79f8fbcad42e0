package reconcile

import (
	"context"
	"errors"
	"fmt"
	"time"

	"k8s.io/client-go/discovery"

	"syncd.dev/syncd/internal/applier"
	"syncd.dev/syncd/internal/config"
	"syncd.dev/syncd/internal/egress"
	"syncd.dev/syncd/internal/identity"
	"syncd.dev/syncd/internal/inventory"
	"syncd.dev/syncd/internal/planner"
	"syncd.dev/syncd/internal/source"

	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
)

// Target is the cluster an app talks to: the clients of its applies, dry
// runs, reads and watches, the inventory it keeps there, and the name
// /status and the metrics give it. Runner.Target decides which one an app
// gets: syncd's own (config.LocalCluster) or the one of its cluster
// section (Targets).
type Target struct {
	// Name is the cluster's name (config.App.ClusterName).
	Name string
	// Server is the API server's address, for errors (empty when
	// unknown).
	Server  string
	Cluster Cluster
	// Inventory keeps the inventories of the apps on this cluster; nil:
	// no inventory, no prune.
	Inventory *inventory.Manager

	// schemas and discovery read the cluster's OpenAPI and capabilities,
	// and metadata is the client of requests whose answer is read for its
	// metadata only (all nil without Cluster.Config).
	schemas   *planner.ClusterSchemas
	discovery discovery.DiscoveryInterface
	metadata  metadata.Interface
	// probe asks a remote cluster whether it answers (nil for syncd's own).
	probe discovery.ServerVersionInterface
}

// newTarget returns the target of a cluster's clients and inventory; the
// inventory must be the cluster's (its live cache holds that cluster's
// informers).
func newTarget(name string, cl Cluster, inv *inventory.Manager) (*Target, error) {
	if inv != nil && inv.Cluster() != name {
		return nil, fmt.Errorf("cluster %s: the inventory given is cluster %s's: each cluster's target keeps its own inventory and live cache", name, inv.Cluster())
	}
	t := &Target{Name: name, Cluster: cl, Inventory: inv}
	if cl.Config == nil {
		return t, nil
	}
	t.Server = cl.Config.Host
	dc, err := discovery.NewDiscoveryClientForConfig(cl.Config)
	if err != nil {
		return nil, fmt.Errorf("cluster %s: discovery client: %w", name, err)
	}
	t.schemas = planner.NewClusterSchemas(dc.OpenAPIV3WithContext(context.Background()))
	t.discovery = dc
	if t.metadata, err = applier.NewMetadataClient(cl.Config); err != nil {
		return nil, fmt.Errorf("cluster %s: metadata client: %w", name, err)
	}
	return t, nil
}

// Dynamic returns the client an app's requests for its objects go
// through on this cluster: the target's own, or, with
// serviceAccountName, one impersonating that service account there
// (package identity).
func (t *Target) Dynamic(app config.App) (dynamic.Interface, error) {
	ten := TenantOf(app)
	if identity.User(ten) == "" {
		return t.Cluster.Dynamic, nil
	}
	cfg, err := identity.Config(t.Cluster.Config, ten)
	if err != nil {
		return nil, err
	}
	return dynamic.NewForConfig(cfg)
}

// Metadata returns the client, for the same identity as Dynamic's, of an
// app's requests whose answer is read for its metadata only
// (applier.Options.Metadata); nil when the target has no Cluster.Config.
func (t *Target) Metadata(app config.App) (metadata.Interface, error) {
	ten := TenantOf(app)
	if t.Cluster.Config == nil || identity.User(ten) == "" {
		return t.metadata, nil
	}
	cfg, err := identity.Config(t.Cluster.Config, ten)
	if err != nil {
		return nil, err
	}
	md, err := applier.NewMetadataClient(cfg)
	if err != nil {
		return nil, err
	}
	return md, nil
}

// DefaultProbeTimeout bounds the request that asks a remote cluster
// whether it answers before each of its apps' runs.
const DefaultProbeTimeout = 10 * time.Second

// ErrClusterUnreachable is wrapped by the error of an app whose cluster
// did not answer (UnreachableError).
var ErrClusterUnreachable = errors.New("cluster unreachable")

// UnreachableError says that an app's cluster did not answer: nothing of
// the app was applied or pruned.
type UnreachableError struct {
	App, Cluster, Server string
	Err                  error
}

// Error names the failure by its kind (egress.Failure), never by what
// the server answered: the kubeconfig may name any server, and the
// message reaches the App's status, its Events, the logs and alerts.
func (e *UnreachableError) Error() string {
	return fmt.Sprintf("app %s: cluster %s (API server %s) is unreachable: %s; nothing is applied or pruned on it until it answers (retried with backoff): check that its API server runs and that the kubeconfig's server address, CA and credentials are current",
		e.App, e.Cluster, e.Server, egress.Failure(e.Err))
}

// Unwrap returns ErrClusterUnreachable and the cause.
func (e *UnreachableError) Unwrap() []error { return []error{ErrClusterUnreachable, e.Err} }

// reachable asks a remote cluster for its version; syncd's own cluster
// is not asked (its failures show as they always have).
func (t *Target) reachable(app string) error {
	if t.probe == nil {
		return nil
	}
	if _, err := t.probe.ServerVersion(); err != nil {
		return &UnreachableError{App: app, Cluster: t.Name, Server: t.Server, Err: err}
	}
	return nil
}

// probeConfig is cfg with the probe's timeout.
func probeConfig(cfg *rest.Config, timeout time.Duration) *rest.Config {
	c := rest.CopyConfig(cfg)
	c.Timeout = timeout
	return c
}

// Target returns the cluster an app talks to, the one place that decides
// it: syncd's own for an app without a cluster section, else the remote
// target its last render resolved (resolved now when it has none yet).
func (r *Runner) Target(ctx context.Context, app config.App) (*Target, error) {
	if !app.IsRemote() {
		return r.local, nil
	}
	r.mu.Lock()
	t := r.remote[app.Name]
	r.mu.Unlock()
	if t != nil {
		return t, nil
	}
	return r.remoteTarget(ctx, app)
}

// remoteTarget resolves a remote app's target (Targets.Resolve) and
// keeps it as the app's.
func (r *Runner) remoteTarget(ctx context.Context, app config.App) (*Target, error) {
	if r.opts.Targets == nil {
		return nil, fmt.Errorf("app %s: cluster %s: this command applies to syncd's own cluster only", app.Name, app.ClusterName())
	}
	t, err := r.opts.Targets.Resolve(ctx, app)
	if err != nil {
		return nil, err
	}
	r.mu.Lock()
	r.remote[app.Name] = t
	r.mu.Unlock()
	return t, nil
}

// resolveTarget is the target of a run of the app rendered from tree:
// a remote app's kubeconfig is read again (rotated credentials take
// effect), refused when it is inside the tree (the repository would hold
// the cluster's credentials), and the cluster is asked whether it
// answers, so an unreachable one fails the run before anything is sent
// and nothing is pruned (UnreachableError).
func (r *Runner) resolveTarget(ctx context.Context, app config.App, tree planner.Tree) (*Target, error) {
	if !app.IsRemote() {
		return r.local, nil
	}
	if f := app.Cluster.KubeconfigFile; f != "" && inside(tree, f) {
		return nil, fmt.Errorf("app %s: cluster.kubeconfigFile %s is inside the repository the app renders: keep the cluster's credentials outside Git, on syncd's side (or in a Secret, cluster.secretRef)", app.Name, f)
	}
	t, err := r.remoteTarget(ctx, app)
	if err != nil {
		return nil, err
	}
	if err := t.reachable(app.Name); err != nil {
		return nil, err
	}
	return t, nil
}

// RefusalOf returns the reason an app's prune is refused after err ended
// its run before the apply: its source failed, its cluster did not
// answer, or its render failed.
func RefusalOf(err error) inventory.Reason {
	switch {
	case errors.As(err, new(*source.Error)):
		return inventory.ReasonSourceFailed
	case errors.Is(err, ErrClusterUnreachable):
		return inventory.ReasonClusterUnreachable
	}
	return inventory.ReasonRenderFailed
}
