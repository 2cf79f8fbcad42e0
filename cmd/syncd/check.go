package main

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"

	"syncd.dev/syncd/internal/config"
	"syncd.dev/syncd/internal/egress"
	"syncd.dev/syncd/internal/install"
)

// checkFlags are syncd check's flags.
type checkFlags struct {
	kube       kubeFlags
	pre        bool
	namespace  string
	config     string
	valueFiles []string
	set        []string
	timeout    time.Duration
}

func newCheckCommand() *cobra.Command {
	f := &checkFlags{}
	cmd := &cobra.Command{
		Use:   "check [--pre] [--namespace NS] [--config syncd.yaml]",
		Short: "Check a cluster before and after installing syncd, one PASS or FAIL line each",
		Long: `check prints one line per check, PASS, FAIL or SKIP, and exits 1 if any
failed:

  API server    reachable, and its version in the range syncd supports;
  Namespace     the one syncd is installed in (-n) exists;
  CRDs          installed, established and the same as this binary's;
  RBAC          what syncd needs (the rules its chart grants it), asked with
                SelfSubjectAccessReviews for the identity in use (--as
                system:serviceaccount:syncd-system:syncd checks syncd's own);
  Deployment    rolled out (kstatus), when installed;
  sources       every GitSource, HelmSource and OCISource (and the sources of
                --config) answers: Git's info/refs, a Helm index, an OCI
                registry's /v2/, or a TCP connection for SSH, within
                --timeout, through syncd's own egress, without credentials.

--pre checks before an install: the API server, the rights to install
(create and patch of every object of the chart), and the sources. The
chart is rendered with -f/--set as syncd install would. Secrets are never
read, and URLs are shown without their user information.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runCheck(cmd, f)
		},
	}
	f.kube.register(cmd.Flags())
	fs := cmd.Flags()
	fs.BoolVar(&f.pre, "pre", false, "pre-flight: check what an install needs instead of an installed syncd")
	fs.StringVarP(&f.namespace, "namespace", "n", install.DefaultNamespace, "namespace syncd is (to be) installed in")
	fs.StringVar(&f.config, "config", "", "a syncd.yaml whose sources to probe too")
	fs.StringArrayVarP(&f.valueFiles, "values", "f", nil, "a values file of the chart, as for syncd install")
	fs.StringArrayVar(&f.set, "set", nil, "a chart value, key=value, as for syncd install")
	fs.DurationVar(&f.timeout, "timeout", 10*time.Second, "time limit of each source probe")
	return cmd
}

func runCheck(cmd *cobra.Command, f *checkFlags) error {
	ch, err := install.Chart()
	if err != nil {
		return withCode(exitError, err)
	}
	objs, err := install.RenderChart(ch, install.RenderOptions{Namespace: f.namespace, ImageTag: version, ValueFiles: f.valueFiles, Set: f.set})
	if err != nil {
		return withCode(exitError, fmt.Errorf("render charts/syncd: %w", err))
	}
	opts := install.CheckOptions{Pre: f.pre, Objects: objs, KubeVersion: ch.Metadata.KubeVersion, Probe: install.NewProber(f.timeout), Namespace: f.namespace}
	if f.config != "" {
		cfg, err := config.Load(f.config)
		if err != nil {
			return withCode(exitError, err)
		}
		opts.ConfigSources = install.ConfigEndpoints(cfg)
	}
	cl, err := f.checkCluster()
	if err != nil {
		return withCode(exitError, err)
	}
	results := install.Check(cmd.Context(), cl, opts)
	for _, r := range results {
		fmt.Fprintln(cmd.OutOrStdout(), r)
	}
	if install.Failed(results) {
		return withCode(exitError, nil)
	}
	return nil
}

// checkCluster returns the clients of the checks, as --as (kubectl's
// impersonation flag) when set. It
// sends no request: an API server that does not answer is the first
// check's FAIL line.
func (f *checkFlags) checkCluster() (install.Cluster, error) {
	cfg, err := f.kube.restConfig()
	if err != nil {
		return install.Cluster{}, err
	}
	cfg = rest.CopyConfig(cfg)
	cfg.UserAgent = "syncd/" + version
	if cfg.Timeout == 0 { // --request-timeout
		cfg.Timeout = 30 * time.Second
	}
	egress.OwnRESTTransport(cfg)
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return install.Cluster{}, err
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return install.Cluster{}, err
	}
	disc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return install.Cluster{}, err
	}
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(disc))
	return install.Cluster{Discovery: disc, Dynamic: dyn, Mapper: mapper, Access: cs.AuthorizationV1()}, nil
}
