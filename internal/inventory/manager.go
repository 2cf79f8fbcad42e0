package inventory

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"

	"syncd.dev/syncd/internal/config"
	"syncd.dev/syncd/internal/livecache"
)

// DefaultConcurrency bounds the reads and deletes the inventory sends at
// once when Options.Concurrency is zero.
const DefaultConcurrency = 16

// DefaultSyncTimeout is how long a new watch may take to list before
// reads of its objects fall back to GETs.
const DefaultSyncTimeout = 30 * time.Second

// Options tune a Manager.
type Options struct {
	// Namespace holds the apps' parent Secrets (syncd's own namespace);
	// required.
	Namespace string
	// Cluster is the name of the cluster the Manager's clients talk to,
	// the Cluster of its live cache's keys (livecache.Key); default
	// config.LocalCluster, syncd's own.
	Cluster string
	// Version is syncd's version for the tooling annotation
	// ("syncd/<version>"); default "v0".
	Version string
	// Registerer receives the prune metrics; nil registers them nowhere.
	Registerer prometheus.Registerer
	// PruneBudget, when set, overrides every app's pruneBudget for this
	// process (the --prune-budget flag), in percent.
	PruneBudget *int
	// Concurrency bounds the reads and deletes sent at once (default
	// DefaultConcurrency).
	Concurrency int
	// NoWatch turns the watch cache off: every object is read with a GET
	// before it is applied.
	NoWatch bool
	// SyncTimeout bounds a new watch's first list (default
	// DefaultSyncTimeout).
	SyncTimeout time.Duration
	// Cache is the live cache the members are watched in (package
	// livecache), shared with whoever else watches them (the drift
	// watchers of the same cluster); it must be Cluster's. Nil: a cache of
	// the Manager's own, stopped by Stop.
	Cache livecache.Informers
	// Reserved are syncd's own objects, which prune never deletes; its
	// InventoryNamespace is always Namespace.
	Reserved Reserved
	// Config, when set, is the client config apps with
	// serviceAccountName read, watch, delete and patch their objects
	// through, impersonating that account (package identity); without it
	// such apps' runs fail. The live cache's lists and watches, syncd's
	// own and tenants', go through clients made from it without gzip
	// (watchConfig); without it syncd's own go through dyn. The parent
	// Secrets are always read and written with the Manager's own
	// clients.
	Config *rest.Config
}

// Manager keeps the inventories of the apps of one cluster: it reads and
// writes their parents, watches their members, and prunes.
type Manager struct {
	// watchDyn is the client syncd's own watches of members list and
	// watch through (watchClient).
	watchDyn dynamic.Interface
	md       metadata.Interface
	mapper   meta.RESTMapper
	opts     Options
	store    *store
	tracker  *tracker
	metrics  *metrics
	// tenants are the clients of apps with serviceAccountName.
	tenants appClients
}

// New returns a Manager. dyn, md and mapper are required.
func New(dyn dynamic.Interface, md metadata.Interface, mapper meta.RESTMapper, opts Options) (*Manager, error) {
	switch {
	case dyn == nil:
		return nil, errors.New("inventory: dynamic client is nil")
	case md == nil:
		return nil, errors.New("inventory: metadata client is nil")
	case mapper == nil:
		return nil, errors.New("inventory: REST mapper is nil")
	case opts.Namespace == "":
		return nil, errors.New("inventory: Namespace is required: the namespace that holds the apps' parent Secrets (syncd's own)")
	case opts.Concurrency < 0:
		return nil, fmt.Errorf("inventory: Concurrency must be positive, got %d", opts.Concurrency)
	case opts.PruneBudget != nil && (*opts.PruneBudget < 0 || *opts.PruneBudget > 100):
		return nil, fmt.Errorf("inventory: PruneBudget must be a percentage from 0 to 100, got %d", *opts.PruneBudget)
	}
	if opts.Cluster == "" {
		opts.Cluster = config.LocalCluster
	}
	if opts.Cache != nil && opts.Cache.Cluster() != opts.Cluster {
		return nil, fmt.Errorf("inventory: Cache is the live cache of cluster %q, but Cluster is %q: give the Manager its own cluster's cache", opts.Cache.Cluster(), opts.Cluster)
	}
	if opts.Version == "" {
		opts.Version = "v0"
	}
	if opts.Concurrency == 0 {
		opts.Concurrency = DefaultConcurrency
	}
	if opts.SyncTimeout <= 0 {
		opts.SyncTimeout = DefaultSyncTimeout
	}
	opts.Reserved.InventoryNamespace = opts.Namespace
	reg := opts.Registerer
	if reg == nil {
		reg = prometheus.NewRegistry()
	}
	m, err := newMetrics(reg)
	if err != nil {
		return nil, fmt.Errorf("inventory: register metrics: %w", err)
	}
	watchDyn, err := watchClient(dyn, opts.Config)
	if err != nil {
		return nil, fmt.Errorf("inventory: watch client: %w", err)
	}
	return &Manager{
		watchDyn: watchDyn,
		md:       md,
		mapper:   mapper,
		opts:     opts,
		store:    &store{dyn: dyn, md: md, namespace: opts.Namespace, tooling: ToolName + "/" + opts.Version, grace: chunkGrace},
		tracker:  newTracker(opts.Cluster, opts.SyncTimeout, opts.Cache),
		metrics:  m,
	}, nil
}

// Stop stops the watches. The Manager must not be used afterwards.
func (m *Manager) Stop() { m.tracker.stop() }

// LiveCache returns the live cache the members are watched in
// (Options.Cache, or the Manager's own), the one of the Manager's
// cluster, for the drift watchers of the same apps to share its
// informers: one list and watch, one copy of each member in memory.
func (m *Manager) LiveCache() livecache.Informers { return m.tracker.cache }

// Cluster returns the name of the Manager's cluster (Options.Cluster).
func (m *Manager) Cluster() string { return m.opts.Cluster }

// ID returns the ApplySet ID of an app.
func (m *Manager) ID(app string) string { return AppID(app, m.opts.Namespace) }

// Namespace returns the namespace of the parent Secrets.
func (m *Manager) Namespace() string { return m.opts.Namespace }

// Load reads an app's inventory (empty when the app has none yet).
func (m *Manager) Load(ctx context.Context, app string) (*Inventory, error) {
	l, err := m.store.load(ctx, app)
	if err != nil {
		return nil, err
	}
	return l.inv, nil
}

// Refuse records that an app's prune did not run because its source or
// render failed or its cluster did not answer (reason ReasonSourceFailed,
// ReasonRenderFailed or ReasonClusterUnreachable), and
// returns the report saying so. Nothing is sent to the cluster.
func (m *Manager) Refuse(app string, reason Reason, cause error) *Report {
	m.metrics.blocked.WithLabelValues(string(reason)).Inc()
	return &Report{App: app, Refused: &Refusal{Reason: reason, Message: refusalMessage(reason, cause)}}
}
