package main

import (
	"fmt"
	"strconv"
	"time"

	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/tools/clientcmd"

	"syncd.dev/syncd/internal/egress"
	"syncd.dev/syncd/internal/inventory"
	"syncd.dev/syncd/internal/reconcile"
)

// kubeFlags are the flags every command that talks to a cluster takes.
// Loading follows client-go: --kubeconfig, else $KUBECONFIG, else
// ~/.kube/config, else the in-cluster service account.
type kubeFlags struct {
	// config are kubectl's connection flags (k8s.io/cli-runtime):
	// --kubeconfig, --context, --cluster, --user, --as, --as-group,
	// --token, --server, --request-timeout, TLS files, ...
	config *genericclioptions.ConfigFlags
	qps    float32
	burst  int
	// allowKubeconfigProxy lets a kubeconfig from a Secret name a
	// proxy-url.
	allowKubeconfigProxy bool
}

func (k *kubeFlags) register(fs *pflag.FlagSet) {
	k.config = kubectlFlags()
	k.config.AddFlags(fs)
	// No client-side rate limit by default when the API server has
	// Priority and Fairness (on by default since Kubernetes 1.20, GA in
	// 1.29): every command bounds its requests in flight (--concurrency),
	// and the server queues or rejects with 429 (which client-go retries)
	// what it cannot take, per flow, so syncd cannot starve other
	// clients. A fixed rate only slowed large applies and plans (2,000
	// dry runs at 50/s: 40 s instead of 4). controller-runtime dropped its
	// default limiter on SIG API Machinery's advice for the same reason.
	// Without Priority and Fairness nothing protects the server from a
	// burst, so a limit stays (as Flux does): connect asks once.
	fs.Float32Var(&k.qps, "kube-qps", 0, fmt.Sprintf("client-side request rate limit (queries per second) to the API server; 0: none when the API server has Priority and Fairness (asked once at start), else %d; -1: none", noAPFQPS))
	fs.IntVar(&k.burst, "kube-burst", noAPFBurst, "client-side burst above --kube-qps (when a rate limit is in force)")
	fs.BoolVar(&k.allowKubeconfigProxy, "allow-kubeconfig-proxy", false, "let a remote cluster's kubeconfig from a Secret (cluster.secretRef, an App's spec.cluster) name a proxy-url; refused by default: whoever writes the Secret would choose where syncd connects (docs/clusters.md)")
}

// kubectlFlags are kubectl's connection flags without the two syncd
// defines its own way: --namespace (each command says what it selects)
// and --cache-dir (syncd's is its Git cache; the discovery cache stays
// in memory).
func kubectlFlags() *genericclioptions.ConfigFlags {
	f := genericclioptions.NewConfigFlags(false)
	f.Namespace = nil
	f.CacheDir = nil
	return f
}

// clientConfig is the kubeconfig as the flags select and override it;
// without flags registered (a command built in a test), the default
// loading rules alone.
func (k *kubeFlags) clientConfig() clientcmd.ClientConfig {
	if k.config == nil {
		k.config = kubectlFlags()
	}
	return k.config.ToRawKubeConfigLoader()
}

// restConfig is the client configuration the kubeconfig and the flags
// give, with an error that says which to fix.
func (k *kubeFlags) restConfig() (*rest.Config, error) {
	if err := k.checkTimeout(); err != nil {
		return nil, err
	}
	cfg, err := k.clientConfig().ClientConfig()
	switch {
	case clientcmd.IsEmptyConfig(err):
		return nil, fmt.Errorf("load kubeconfig: %w (set --kubeconfig or KUBECONFIG, or run in a cluster)", err)
	case err != nil:
		return nil, fmt.Errorf("load kubeconfig: %w", err)
	}
	return cfg, nil
}

// checkTimeout refuses a --request-timeout client-go cannot read, naming
// the flag (client-go's own message does not): seconds, or a duration
// with its unit.
func (k *kubeFlags) checkTimeout() error {
	if k.config == nil || k.config.Timeout == nil {
		return nil
	}
	v := *k.config.Timeout
	if _, err := strconv.Atoi(v); err == nil {
		return nil
	}
	if _, err := time.ParseDuration(v); err != nil {
		return fmt.Errorf("--request-timeout %q: not a duration; use seconds or a value with its unit (30s, 2m), or 0 for none", v)
	}
	return nil
}

// remoteTargets returns the factory of the clients of apps on other
// clusters (apps[].cluster): kubeconfigs in Secrets are read in syncd's
// namespace through cl; each remote client gets syncd's user agent and
// transport, and --kube-qps when set, else the limit kept for an API
// server without Priority and Fairness (a remote cluster is not asked,
// so that one that does not answer costs its apps nothing at start).
// inv is the template of the remote inventories (nil: none).
func (k *kubeFlags) remoteTargets(cl *cluster, inv *inventory.Options) *reconcile.Targets {
	return reconcile.NewTargets(reconcile.TargetsOptions{
		Local:       cl.dynamic,
		LocalConfig: cl.config,
		Namespace:   syncdNamespace(),
		Inventory:   inv,

		AllowKubeconfigProxy: k.allowKubeconfigProxy,
		Configure: func(cfg *rest.Config) {
			cfg.UserAgent = "syncd/" + version
			egress.OwnRESTTransport(cfg)
			cfg.QPS, cfg.Burst = noAPFQPS, k.burst
			if k.qps != 0 {
				cfg.QPS = k.qps
			}
		},
	})
}

// cluster holds the clients one command uses.
type cluster struct {
	config    *rest.Config
	dynamic   dynamic.Interface
	mapper    meta.ResettableRESTMapper
	discovery *discovery.DiscoveryClient
	namespace string // the kubeconfig context's namespace
}

// connect returns the clients of the cluster the kubeconfig names. An
// API server that does not answer the one request connect sends (the
// Priority and Fairness probe) fails it at once with that request's
// error, so a one-shot command says so once instead of once per object
// it would have read; the daemon waits for its API server instead
// (connectPatiently).
func (k *kubeFlags) connect() (*cluster, error) {
	return k.dial(true)
}

// connectPatiently is connect for syncd run: an API server that does not
// answer at start is left to client-go's retries and leader election.
func (k *kubeFlags) connectPatiently() (*cluster, error) {
	return k.dial(false)
}

func (k *kubeFlags) dial(mustAnswer bool) (*cluster, error) {
	cc := k.clientConfig()
	cfg, err := k.restConfig()
	if err != nil {
		return nil, err
	}
	cfg.UserAgent = "syncd/" + version
	egress.OwnRESTTransport(cfg)
	lim := k.rateLimit(cfg)
	if mustAnswer && lim.probeErr != nil {
		return nil, fmt.Errorf("the API server at %s did not answer: %w", cfg.Host, lim.probeErr)
	}
	cfg.QPS, cfg.Burst = lim.qps, lim.burst
	clientLog.Info("API server client rate limit", "qps", lim.qps, "burst", lim.burst, "reason", lim.reason)
	ns, _, err := cc.Namespace()
	if err != nil || ns == "" {
		ns = "default"
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	disc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return nil, err
	}
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(disc))
	return &cluster{config: cfg, dynamic: dyn, mapper: mapper, discovery: disc, namespace: ns}, nil
}

// readDiscovery reads the cluster's discovery into the mapper's cache
// (the API groups and their resources: two requests with aggregated
// discovery), so that the plan, which maps every kind, finds it read.
// A config command calls it in a goroutine as it connects: the round
// trips then overlap the source's fetch and the render instead of
// following them. An error is not kept: the plan reads again and reports
// it.
func (c *cluster) readDiscovery() {
	_, _ = c.mapper.RESTMapping(schema.GroupKind{Kind: "Namespace"}, "v1")
}
