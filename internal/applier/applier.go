package applier

import (
	"errors"
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/metadata"
)

// DefaultConcurrency is how many objects of one stage are applied at once
// when Options.Concurrency is zero.
const DefaultConcurrency = 8

// Options are per-applier settings; the zero value is usable.
type Options struct {
	// Concurrency bounds how many objects of one stage are in flight at
	// once (default DefaultConcurrency). Results do not depend on it.
	Concurrency int
	// DryRun sends every request with dryRun=All: nothing is persisted.
	DryRun bool
	// Metadata, when set, is a client for the same cluster and identity
	// as the dynamic client. Requests whose answer syncd reads only the
	// metadata of (validation dry runs and creates) go through it and
	// come back as metadata, in protobuf: the API server does not encode
	// the whole object as JSON and syncd does not decode it, which on a
	// first sync is every request. A MetadataClient (NewMetadataClient,
	// what syncd's drivers give) also sends the validation dry run of an
	// object that does not exist as a create (dryRunsAsCreate). Nil:
	// every request goes through the dynamic client.
	Metadata metadata.Interface
	// Facts, when set, is a client for the same cluster as syncd's own
	// identity, through which the local judgement of new ConfigMaps
	// reads the facts that belong to no tenant: the cluster's admission
	// webhooks and policies, the namespace and its quotas. A driver
	// applying as a tenant's service account, which may not list
	// cluster-wide admission objects, gives it so that the tenant's first
	// syncs are judged as syncd's are. Whether the identity may create
	// and patch ConfigMaps is asked as the identity, never through it.
	// Nil: the dynamic client.
	Facts dynamic.Interface
}

// Applier applies plans to one cluster as one identity.
type Applier struct {
	dyn    dynamic.Interface
	meta   metadata.Interface
	mapper meta.RESTMapper
	opts   Options
}

// New returns an Applier. dyn and mapper are required; the mapper should
// be resettable (restmapper.DeferredDiscoveryRESTMapper) so that kinds
// defined by CRDs in the plan are found after the CRDs are established.
func New(dyn dynamic.Interface, mapper meta.RESTMapper, opts Options) (*Applier, error) {
	if dyn == nil {
		return nil, errors.New("applier: dynamic client is nil")
	}
	if mapper == nil {
		return nil, errors.New("applier: REST mapper is nil")
	}
	if opts.Concurrency < 0 {
		return nil, fmt.Errorf("applier: concurrency must be positive, got %d", opts.Concurrency)
	}
	if opts.Concurrency == 0 {
		opts.Concurrency = DefaultConcurrency
	}
	return &Applier{dyn: dyn, meta: opts.Metadata, mapper: mapper, opts: opts}, nil
}
