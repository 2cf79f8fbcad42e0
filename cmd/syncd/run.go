package main

import (
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/record"

	"syncd.dev/syncd/internal/config"
	"syncd.dev/syncd/internal/controller"
	"syncd.dev/syncd/internal/daemon"
	"syncd.dev/syncd/internal/egress"
	"syncd.dev/syncd/internal/kubemetrics"
	"syncd.dev/syncd/internal/leader"
	"syncd.dev/syncd/internal/memlimit"
	"syncd.dev/syncd/internal/reconcile"
	"syncd.dev/syncd/internal/redact"
	"syncd.dev/syncd/internal/renderproc"
	"syncd.dev/syncd/internal/webhook"
)

type runFlags struct {
	kube           kubeFlags
	inventory      inventoryFlags
	config         string
	once           bool
	cacheDir       string
	listen         string
	webhookListen  string
	uiListen       string
	secureStatus   bool
	tlsCertFile    string
	tlsKeyFile     string
	concurrency    int
	concurrentApps int
	leaderElect    bool
	leaseNamespace string
	leaseName      string
	leaseDuration  time.Duration
	renewDeadline  time.Duration
	retryPeriod    time.Duration
	shutdownGrace  time.Duration
	shards, shard  int
	webhookSecret  string
	logFormat      string
	apps           appFlags
	render         renderLimitFlags
	progress       progressFlags
}

func newRunCommand() *cobra.Command {
	f := &runFlags{}
	cmd := &cobra.Command{
		Use:   "run [--config FILE]",
		Short: "Run the reconciliation daemon: poll sources, apply apps and App objects, serve metrics, status and push webhooks",
		Long: `run keeps every app of the config in sync. Each source is polled on its
interval or cron schedule (or at once when a push webhook names it); each app
whose revision moved is rendered, split between its managers and applied
under its conflict policy. Errors back off per app. The config file is
re-read when it changes; an invalid new config is rejected and the old one
keeps running.

App and GitSource objects (docs/apps.md) run beside the config's apps once
their CRDs are installed. Without --config there is no file: only App
objects run (the way Flux and Argo CD are installed), nothing is re-read,
and until the CRDs are installed nothing runs.

With --leader-elect (default) only the replica holding the Lease applies;
the others wait warm and take over within the lease duration. On SIGTERM
the leader starts nothing new, lets the objects in flight finish (up to
--shutdown-grace-period) and only then releases the Lease; a Lease lost
exits 1; a replica that wins the Lease but cannot load the config
releases it and is not ready until the config loads. --shards N --shard K
runs only the apps whose name hashes to shard K, under its own Lease
(NAME-shard-K-of-N), so a fleet of apps spreads over replicas.

HTTP on --listen: /metrics (Prometheus), /healthz, /readyz (ready once the
first reconcile of every app of the config in this shard finished; at once
without --config: App objects report their own Ready condition) and
/status (JSON, the config's apps).
With --secure-status, --listen serves HTTPS (--tls-cert-file and
--tls-private-key-file, else a self-signed certificate) and /metrics and
/status need a bearer token the API server accepts (TokenReview) for a user
allowed "get" on that path (SubjectAccessReview; ClusterRole
syncd-metrics-reader); health stays open.

HTTP on --ui-listen (off unless set): the web UI of syncd ui (docs/ui.md),
read-only (no buttons) and read with syncd's own credentials. With
--secure-status it is HTTPS and every request needs a bearer token whose
user may get the non-resource URL /ui; without it the address must be a
loopback one (reach it with kubectl port-forward).

HTTP on --webhook-listen (off unless set): POST /webhook/{github,gitlab,gitea}
(signature or token checked against --webhook-secret-file before more than
the header is trusted, bodies over 1 MiB refused). A push polls the sources
of its repository that follow the pushed branch or tag (any tag for a
semver source): the config file's, and the GitSources of the App objects
this replica runs. GitHub's ping and other events are answered 200 and
poll nothing (docs/operations.md).

--once runs every app of --config once, in dependency order, as syncd
apply --config does (progress on stderr; --quiet: none), and exits with
the apply command's exit codes; it needs --config (App objects are
reconciled only by the long-running daemon).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runDaemon(cmd, f) },
	}
	fs := cmd.Flags()
	f.kube.register(fs)
	f.inventory.register(fs, true)
	fs.StringVar(&f.config, "config", "", "syncd.yaml to run (empty: no file apps, App and GitSource objects only; required by --once)")
	fs.BoolVar(&f.once, "once", false, "run every app of --config once and exit")
	fs.BoolVarP(&f.progress.quiet, "quiet", "q", false, "with --once: show no progress on stderr")
	fs.StringVar(&f.cacheDir, "cache-dir", "", "where Git sources are cached (default ~/.cache/syncd/sources)")
	fs.StringVar(&f.listen, "listen", ":8080", "address for /healthz, /readyz, /metrics and /status")
	fs.StringVar(&f.webhookListen, "webhook-listen", "", "address for POST /webhook/{github,gitlab,gitea} (empty: no push webhooks; needs --webhook-secret-file)")
	fs.StringVar(&f.uiListen, "ui-listen", "", "address for the read-only web UI (empty: none; loopback only without --secure-status, which guards it with a token allowed get on /ui)")
	fs.BoolVar(&f.secureStatus, "secure-status", false, "serve --listen over HTTPS and require a bearer token allowed by the API server (TokenReview, SubjectAccessReview) for /metrics and /status")
	fs.StringVar(&f.tlsCertFile, "tls-cert-file", "", "certificate for HTTPS on --listen (default with --secure-status: self-signed); re-read when it changes")
	fs.StringVar(&f.tlsKeyFile, "tls-private-key-file", "", "private key of --tls-cert-file")
	fs.IntVar(&f.concurrency, "concurrency", 8, "objects applied at once within a stage")
	fs.IntVar(&f.concurrentApps, "concurrent-apps", daemon.DefaultWorkers, "apps reconciled at once: up to this many apps of --config, and as many App objects (each holds its render, plan and changes in memory while it reconciles)")
	fs.BoolVar(&f.leaderElect, "leader-elect", true, "hold a Lease so that only one replica applies")
	fs.StringVar(&f.leaseNamespace, "leader-elect-namespace", "", "namespace of the Lease (default: $POD_NAMESPACE, else syncd-system)")
	fs.StringVar(&f.leaseName, "leader-elect-name", "syncd", "name of the Lease (\"-shard-K-of-N\" is appended when sharding)")
	fs.DurationVar(&f.leaseDuration, "leader-elect-lease-duration", 15*time.Second, "how long a Lease is valid without renewal (failover time)")
	fs.DurationVar(&f.renewDeadline, "leader-elect-renew-deadline", 10*time.Second, "how long the leader retries renewing before it gives up")
	fs.DurationVar(&f.retryPeriod, "leader-elect-retry-period", 2*time.Second, "how often candidates try to acquire or renew")
	fs.DurationVar(&f.shutdownGrace, "shutdown-grace-period", defaultShutdownGrace, "on SIGTERM, how long the objects in flight may finish before the process exits; the Lease is released only once they did (keep it below the pod's terminationGracePeriodSeconds; 0: no limit)")
	fs.IntVar(&f.shards, "shards", 1, "number of shards apps are spread over")
	fs.IntVar(&f.shard, "shard", 0, "the shard this replica runs (0..shards-1)")
	f.apps.register(fs)
	fs.StringVar(&f.webhookSecret, "webhook-secret-file", "", "file holding the push webhook secret (GitHub/Gitea HMAC key, GitLab token)")
	fs.StringVar(&f.logFormat, "log-format", "json", "log format: json or text")
	f.render.register(fs)
	return cmd
}

// daemonLogger is syncd run's logger (--log-format, secrets redacted),
// which client-go's own lines are routed into; its first line says which
// Go memory limit was set.
func daemonLogger(cmd *cobra.Command, f *runFlags) *slog.Logger {
	var handler slog.Handler = slog.NewJSONHandler(cmd.ErrOrStderr(), nil)
	if f.logFormat == "text" {
		handler = slog.NewTextHandler(cmd.ErrOrStderr(), nil)
	}
	log := slog.New(redact.LogHandler(handler))
	routeClientLogs(log)
	logMemoryLimit(log, memLimit, memLimitErr)
	return log
}

// checkRunFlags refuses flags of syncd run that cannot work together or
// at all, before anything connects.
func checkRunFlags(f *runFlags, log *slog.Logger) error {
	if err := checkHTTPFlags(f, log); err != nil {
		return err
	}
	return checkConcurrentApps(f.concurrentApps)
}

// checkConcurrentApps refuses a --concurrent-apps that would let no app
// reconcile.
func checkConcurrentApps(n int) error {
	if n < 1 {
		return fmt.Errorf("--concurrent-apps %d: at least one app must reconcile at a time; set 1 or more (default %d)", n, daemon.DefaultWorkers)
	}
	return nil
}

func runDaemon(cmd *cobra.Command, f *runFlags) error {
	if f.once {
		if f.config == "" {
			return withCode(exitError, errOnceNeedsConfig)
		}
		return runApplyConfig(cmd, &applyFlags{kube: f.kube, inventory: f.inventory, config: f.config, cacheDir: f.cacheDir, concurrency: f.concurrency, progress: f.progress})
	}
	log := daemonLogger(cmd, f)
	logGCPercent(log, memlimit.SetGCPercent(memlimit.DaemonGCPercent))
	if err := checkRunFlags(f, log); err != nil {
		return withCode(exitError, err)
	}
	renderer, err := daemonRenderer(f)
	if err != nil {
		return withCode(exitError, err)
	}
	reg, err := newRegistry()
	if err != nil {
		return withCode(exitError, err)
	}
	cl, err := f.kube.connectPatiently()
	if err != nil {
		return withCode(exitError, err)
	}
	inv, err := newInventory(cmd.Context(), cl, &f.inventory, reg, false)
	if err != nil {
		return withCode(exitError, err)
	}
	defer inv.Stop()
	cs, err := kubernetes.NewForConfig(cl.config)
	if err != nil {
		return withCode(exitError, err)
	}
	broadcaster := record.NewBroadcaster()
	broadcaster.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: cs.CoreV1().Events("")})
	defer broadcaster.Shutdown()
	remoteInv := f.inventory.options(reg, false)
	targets := f.kube.remoteTargets(cl, &remoteInv)
	defer targets.Close()
	ropts := reconcile.Options{CacheDir: f.cacheDir, Concurrency: f.concurrency, Inventory: inv, Reserved: reservedFor(f.inventory.namespace, f.leaseNamespace), Namespace: syncdNamespace(), Targets: targets, Renderer: renderer}
	recorder := broadcaster.NewRecorder(scheme.Scheme, corev1.EventSource{Component: "syncd"})
	names := controller.NewNames() // app names shared by the file's apps and App objects
	metrics := daemon.NewMetrics(reg)
	d, err := daemon.New(daemon.Options{
		Collision:   names.Collision,
		Events:      recorder,
		ConfigPath:  f.config,
		Cluster:     reconcile.Cluster{Dynamic: cl.dynamic, Mapper: cl.mapper, Config: cl.config},
		Options:     ropts,
		Shards:      f.shards,
		Shard:       f.shard,
		Workers:     f.concurrentApps,
		Metrics:     metrics,
		Registerer:  reg,
		Logger:      log,
		AlertClient: egress.Client(),
	})
	if err != nil {
		return withCode(exitError, err)
	}
	cfg, err := configForRun(f.config, log)
	if err != nil {
		return withCode(exitError, err)
	}
	// App objects run beside the file's apps when their CRDs are served.
	newCtrl, err := appControllerFor(cl, f, ropts, cfg, names, recorder, reg, metrics.Apps, log)
	if err != nil {
		return withCode(exitError, err)
	}
	apps := &runningApps{}
	run := withAppController(newCtrl, apps, d.Run)

	var el *leader.Elector // nil: no leader election
	if f.leaderElect {
		if el, err = newElector(cl, f, log); err != nil {
			return withCode(exitError, err)
		}
	}
	ctx := cmd.Context()
	uiSrv, err := daemonUI(f, cl, inv, d)
	if err != nil {
		return withCode(exitError, err)
	}
	// A push polls the file's sources and the GitSources of App objects.
	servers, err := serve(f, d, el, reg, cs, uiSrv, []webhook.Poller{d, apps}, log)
	if err != nil {
		return withCode(exitError, err)
	}
	defer servers.shutdown()
	log.Info("syncd started", "version", version, "listen", servers.addr("--listen"), "webhookListen", servers.addr("--webhook-listen"), "uiListen", servers.addr("--ui-listen"),
		"secureStatus", f.secureStatus, "tls", servers.tls("--listen"), "config", configShown(f.config), "shard", f.shard, "shards", f.shards)

	if el == nil {
		return run(ctx)
	}
	return runUnder(ctx, el, run)
}

// daemonRenderer is syncd run's renderer: under the render flags'
// limits, keeping render answers in the cache directory, so that a poll
// of an unchanged tree reads its kept answer instead of starting a render
// child (and charging its memory to the pod).
func daemonRenderer(f *runFlags) (*renderproc.Renderer, error) {
	r, err := f.render.renderer()
	if err != nil {
		return nil, err
	}
	r.KeepAnswers(rendersDir(f.cacheDir))
	return r, nil
}

// configShown is the config file as the start line names it; without
// one, syncd runs App objects only.
func configShown(path string) string {
	if path == "" {
		return "none (App objects only)"
	}
	return path
}

// errOnceNeedsConfig refuses `run --once` without --config: there is no
// one-shot run of App objects.
var errOnceNeedsConfig = errors.New("--once needs --config: it runs the apps of a config file once and exits; " +
	"App objects are reconciled only by the long-running daemon (syncd run without --once), " +
	"and syncd reconcile app NAME asks it to reconcile one now")

// configForRun loads the config the daemon starts with, refusing a
// broken one before any Lease is taken. Without --config it is an empty
// one: no file apps, App objects only.
func configForRun(path string, log *slog.Logger) (*config.Config, error) {
	if path == "" {
		log.Info("no --config: running App and GitSource objects only")
		return config.Empty(), nil
	}
	return loadConfigForRun(path)
}

// newRegistry is /metrics' registry, with the process-wide series
// (processMetrics) on it.
func newRegistry() (*prometheus.Registry, error) {
	reg := prometheus.NewRegistry()
	if err := processMetrics(reg); err != nil {
		return nil, fmt.Errorf("metrics: %w", err)
	}
	return reg, nil
}

// processMetrics registers the series of the whole process: the Go
// runtime's, the process's, and the requests syncd makes to API servers
// (registered before the first client exists, so every request counts).
func processMetrics(reg prometheus.Registerer) error {
	return errors.Join(
		reg.Register(collectors.NewGoCollector()),
		reg.Register(collectors.NewProcessCollector(collectors.ProcessCollectorOpts{})),
		kubemetrics.Register(reg),
	)
}

// logGCPercent says which collector target the daemon runs with and
// where it came from (memlimit.SetGCPercent).
func logGCPercent(log *slog.Logger, r memlimit.GCResult) {
	log.Info("Go collector target", "gcPercent", r.Percent, "source", r.Source)
}

// logMemoryLimit says which Go memory limit syncd runs under and where it
// came from (memlimit.Set in main), or why the container's could not be
// read.
func logMemoryLimit(log *slog.Logger, r memlimit.Result, err error) {
	if err != nil {
		log.Warn("Go memory limit not set from the container", "error", err)
	}
	if r.Source == memlimit.SourceNone {
		log.Info("Go memory limit: none (no container memory limit and no GOMEMLIMIT)", "source", r.Source)
		return
	}
	log.Info("Go memory limit", "source", r.Source, "limitBytes", r.Limit, "containerLimitBytes", r.Container)
}
