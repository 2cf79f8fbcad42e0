package daemon

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"hash/fnv"
	"log/slog"
	"math"
	"net/http"
	"os"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"

	"syncd.dev/syncd/internal/alert"
	"syncd.dev/syncd/internal/applier"
	"syncd.dev/syncd/internal/appmetrics"
	"syncd.dev/syncd/internal/config"
	"syncd.dev/syncd/internal/drift"
	"syncd.dev/syncd/internal/inventory"
	"syncd.dev/syncd/internal/reconcile"
	"syncd.dev/syncd/internal/redact"
	"syncd.dev/syncd/internal/source"
)

// Options configure a Daemon.
type Options struct {
	// ConfigPath is the syncd.yaml the daemon runs and watches. Empty
	// means no config file: the daemon runs no apps and watches nothing
	// (an install that runs App objects only); it is ready at once.
	ConfigPath string
	// Cluster answers for every app (required).
	Cluster reconcile.Cluster
	reconcile.Options
	// Shards and Shard select the apps this replica runs: an app belongs
	// to shard fnv32(name) % Shards. Shards 0 or 1 runs every app.
	Shards, Shard int
	// Workers bounds the apps reconciled at once (default
	// DefaultWorkers, as the App controller's). An app whose work waits
	// for a turn keeps only its newest revision, as it does while it
	// reconciles. Each reconcile holds its app's render, plan and
	// ChangeSet: the bound keeps the daemon's peak memory that of a few
	// apps, not of every app of the config at once.
	Workers int
	// ConfigCheck is how often the config file is checked for changes
	// (default 5 s).
	ConfigCheck time.Duration
	// MaxBackoff caps the per-app retry delay after errors (default 5 min;
	// the first retry waits 5 s and each next one doubles; each delay is
	// lengthened by up to 10% at random, so apps that failed together do
	// not retry in lock-step).
	MaxBackoff time.Duration
	// Metrics receive the reconcile metrics; nil makes private ones.
	Metrics *Metrics
	// Registerer receives the alert sinks' metrics (nil: not exported).
	Registerer prometheus.Registerer
	// AlertClient sends alerts (nil: the alert package's default, on
	// egress.Transport).
	AlertClient *http.Client
	// Events, when set, records Kubernetes Events on each app's inventory
	// parent (Options.Inventory must be set too): reconcile failures,
	// conflicts and syncs, visible with kubectl describe / get events.
	Events record.EventRecorder
	// DriftDebounce is how long the drift watcher folds events on one
	// object before publishing (default 200 ms).
	DriftDebounce time.Duration
	// Logger receives structured logs (default slog.Default()).
	Logger *slog.Logger
	Clock  clock.WithTicker
	// Collision, when set, says for an app name whether an App object
	// has the same name (it is refused and the file's app keeps running);
	// /status shows it as the app's collision.
	Collision func(app string) string
}

// DefaultWorkers is how many apps of the config reconcile at once when
// Options.Workers is not set: the App controller's default
// (controller.DefaultWorkers).
const DefaultWorkers = 4

// ResultPending: the app has not finished its first reconcile (a
// /status state of the daemon's; a reconcile ends in one of
// reconcile's Results).
const ResultPending reconcile.Result = "pending"

// Mode is how the daemon runs an app, as /status shows it: empty for an
// app it applies, ModeDetect for one it only watches.
type Mode string

// ModeDetect: the app is in drift mode detect; syncd only watches it.
const ModeDetect Mode = "detect"

// AppStatus is what /status shows for one app.
type AppStatus struct {
	App    string `json:"app"`
	Source string `json:"source"`
	// Cluster is the name of the cluster the app is applied to:
	// config.LocalCluster ("local") for syncd's own, else its
	// cluster.name (config.App.ClusterName).
	Cluster string `json:"cluster"`
	// Revision is the revision last reconciled: the one in force while
	// the source fails.
	Revision string `json:"revision,omitempty"`
	// Result is how the last reconcile ended, or failed while the
	// source's last poll failed (Error says why; Revision stays in force,
	// nothing is applied or pruned until the source answers).
	Result reconcile.Result `json:"result"`
	// Mode is "detect" for an app in drift mode detect (nothing is
	// applied; Objects counts the objects watched), empty otherwise.
	Mode      Mode   `json:"mode,omitempty"`
	Error     string `json:"error,omitempty"`
	Objects   int    `json:"objects"`
	Changed   int    `json:"changed"`
	Conflicts int    `json:"conflicts"`
	Findings  int    `json:"findings"`
	// Overlaps counts the objects (per other app) that another syncd
	// app declares too, with the same values (drift.Overlap): not
	// drift, not in Findings.
	Overlaps int       `json:"overlaps,omitempty"`
	LastRun  time.Time `json:"lastRun,omitzero"`
	Attempts int       `json:"attempts,omitempty"`
	// Rewound is set while the app's revision does not descend from the
	// one last applied and pruned (rewind.go).
	Rewound *RewindStatus `json:"rewound,omitempty"`
	// SourceFailures counts the source's consecutive failed polls and
	// SourceRetry is when it is polled again; both are cleared by a
	// successful poll.
	SourceFailures int       `json:"sourceFailures,omitempty"`
	SourceRetry    time.Time `json:"sourceRetry,omitzero"`
	// InForceOK is set while the source fails after the revision in
	// force (Revision) was reconciled ok: the app is not in sync with
	// Git (Result failed), yet what it applied stands, so its dependents
	// need not wait (waitFor). Cleared by the next reconcile.
	InForceOK bool `json:"-"`
	// LastPrune is the last prune that removed or refused something
	// (prune_events.go).
	LastPrune *PruneStatus `json:"lastPrune,omitempty"`
	// Waiting is set while the app waits for its dependencies (dependsOn)
	// before applying a revision (depends.go).
	Waiting *WaitStatus `json:"waiting,omitempty"`
	// Collision names an App object refused because it has this app's
	// name (Options.Collision).
	Collision string `json:"collision,omitempty"`
	// Warnings are the last render's warnings (warnings.go).
	Warnings []string `json:"warnings,omitempty"`
}

// Daemon keeps the apps of a config in sync: each source is polled on its
// interval or schedule (or on Trigger), and every poll re-runs every app of
// the source (and every app reading values files from it,
// helm.valuesSource), whether its revision moved or not: the app is rendered and
// applied (objects unchanged since syncd applied them are skipped when the
// inventory is on), which also corrects out-of-band changes under the
// app's conflict policy. An app backing off from a failure is the
// exception: a poll of the revision that failed waits for the retry
// (reconcile.Retry); a new revision runs at once. An app in drift mode detect is rendered and
// watched the same way but never applied, pruned or otherwise written: its
// differences are reported and alerted only. Errors back off per app
// without stalling the others. The config file is re-read when it changes; an invalid new
// config is rejected and the old one keeps running.
type Daemon struct {
	opts Options
	log  *slog.Logger
	m    *Metrics

	// turns holds a token per app reconciling (Options.Workers), across
	// generations: the loops of a config being replaced count until they
	// return.
	turns chan struct{}

	// queueMu serializes onPoll's hand-offs: polls of two sources an app
	// reads (its chart's and its values') may finish at once, and each
	// drains the app's queue of one before filling it.
	queueMu sync.Mutex

	mu     sync.Mutex
	status map[string]*AppStatus
	// reconcilers are the apps' Reconcilers of the last generation,
	// which the next one's inherit from (newAppRun).
	reconcilers map[string]*reconcile.Reconciler
	ready       bool
	scheduler   *source.Scheduler
	sources     []config.Source // the scheduled sources, in config order
	cfgErr      string
	// runner is the running generation's (nil before the first): its
	// compiled apps give their redaction rules (Sensitive).
	runner *reconcile.Runner

	// appAlerts are the apps' alert trackers, across generations
	// (carryAlerts).
	appAlerts map[string]*appAlerts
	// notifier is the running generation's alert notifier (nil when its
	// alerts cannot run), alertMemory the last one built: the next
	// generation's takes over the findings it alerted.
	notifier, alertMemory *alert.Notifier
}

// New checks the options.
func New(opts Options) (*Daemon, error) {
	if opts.Cluster.Dynamic == nil || opts.Cluster.Mapper == nil {
		return nil, errors.New("daemon: Cluster needs a dynamic client and a REST mapper")
	}
	if opts.Shards > 1 && (opts.Shard < 0 || opts.Shard >= opts.Shards) {
		return nil, fmt.Errorf("daemon: shard %d is out of range for %d shards (0..%d)", opts.Shard, opts.Shards, opts.Shards-1)
	}
	if opts.ConfigCheck <= 0 {
		opts.ConfigCheck = 5 * time.Second
	}
	if opts.MaxBackoff <= 0 {
		opts.MaxBackoff = 5 * time.Minute
	}
	if opts.Workers <= 0 {
		opts.Workers = DefaultWorkers
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	if opts.Metrics == nil {
		opts.Metrics = NewMetrics(nil)
	}
	return &Daemon{opts: opts, log: opts.Logger, m: opts.Metrics, status: map[string]*AppStatus{}, reconcilers: map[string]*reconcile.Reconciler{}, appAlerts: map[string]*appAlerts{},
		turns: make(chan struct{}, opts.Workers)}, nil
}

// InShard reports whether an app belongs to this replica's shard.
func (d *Daemon) InShard(app string) bool {
	return ShardOf(app, d.opts.Shards) == d.opts.Shard || d.opts.Shards <= 1
}

// ShardOf returns the shard of an app for n shards (stable across
// processes and versions: FNV-1a of the name).
func ShardOf(app string, n int) int {
	if n <= 1 {
		return 0
	}
	h := fnv.New32a()
	h.Write([]byte(app))
	return int(h.Sum32() % uint32(n))
}

// Status returns every app's status, sorted by app.
func (d *Daemon) Status() []AppStatus {
	d.mu.Lock()
	defer d.mu.Unlock()
	out := make([]AppStatus, 0, len(d.status))
	for _, s := range d.status {
		st := *s
		if d.opts.Collision != nil {
			st.Collision = d.opts.Collision(st.App)
		}
		out = append(out, st)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].App < out[j].App })
	return out
}

// Sensitive returns the redaction rules of an app of the config in force
// (its sensitive paths), for the outputs that print its objects; nil
// (the built-in rules) for a name the config does not have.
func (d *Daemon) Sensitive(app string) *redact.Rules {
	d.mu.Lock()
	r := d.runner
	d.mu.Unlock()
	if r == nil {
		return nil
	}
	spec, err := r.Compiled(app)
	if err != nil || spec == nil {
		return nil
	}
	return spec.Sensitive
}

// ConfigError returns the error of the last rejected config change.
func (d *Daemon) ConfigError() string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.cfgErr
}

// Ready reports whether the first reconcile of every app of this shard
// finished (successfully or not).
func (d *Daemon) Ready() bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	if !d.ready {
		return false
	}
	for _, s := range d.status {
		if s.Result == ResultPending {
			return false
		}
	}
	return true
}

// Trigger polls a source now (a push webhook arrived). Unknown sources are
// an error.
func (d *Daemon) Trigger(sourceName string) error {
	d.mu.Lock()
	s := d.scheduler
	d.mu.Unlock()
	if s == nil {
		return errors.New("daemon: not running")
	}
	return s.Trigger(sourceName)
}

// Sources returns the running config's scheduled sources, in config
// order, for matching webhook payloads: each with its URL and the
// revision it follows. It reflects the config in force, not the file on
// disk (which may hold a rejected or not yet loaded one).
func (d *Daemon) Sources() []config.Source {
	d.mu.Lock()
	defer d.mu.Unlock()
	return slices.Clone(d.sources)
}

// Run runs until ctx ends. It returns an error only when the first config
// cannot be loaded or cannot start (a source or a client that cannot be
// set up from it): a replica holding a Lease
// then gives it up rather than hold it with nothing running. Once ctx
// ends nothing new starts; Run returns after the objects in flight
// finished their steps (package applier). Without a ConfigPath it runs
// an empty config until ctx ends.
func (d *Daemon) Run(ctx context.Context) error {
	if d.opts.ConfigPath == "" {
		return d.runWithoutConfig(ctx)
	}
	cfg, sum, err := loadConfig(d.opts.ConfigPath)
	if err != nil {
		return err
	}
	for first := true; ; first = false {
		stop, err := d.startGeneration(ctx, cfg)
		if err != nil && first {
			stop()
			return err
		}
		next, nextSum := d.waitConfigChange(ctx, sum)
		stop()
		if next == nil {
			return nil
		}
		d.log.Info("config changed: restarting app loops", "config", d.opts.ConfigPath)
		cfg, sum = next, nextSum
	}
}

// runWithoutConfig runs one generation of an empty config (no apps, no
// sources) until ctx ends: nothing is polled, the config is never
// re-read, and the daemon is ready as soon as it runs. The generation
// still runs, so that Ready, Sources and Trigger answer as for a config
// file with no apps.
func (d *Daemon) runWithoutConfig(ctx context.Context) error {
	stop, err := d.startGeneration(ctx, config.Empty())
	defer stop()
	if err != nil {
		return err
	}
	<-ctx.Done()
	return nil
}

// startGeneration starts running cfg in the background and returns once
// it runs, or with why it cannot (then it has already ended). stop ends
// the generation and waits for it; call it in both cases.
func (d *Daemon) startGeneration(ctx context.Context, cfg *config.Config) (stop func(), err error) {
	genCtx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	started := make(chan error, 1)
	go func() {
		defer close(done)
		d.runGeneration(genCtx, cfg, started)
	}()
	err = <-started
	return func() {
		cancel()
		<-done
	}, err
}

// waitConfigChange polls the config file; it returns a new valid config
// when the file changes, or nil when ctx ends. An invalid change is logged
// and recorded, and the running config stays.
func (d *Daemon) waitConfigChange(ctx context.Context, sum [32]byte) (*config.Config, [32]byte) {
	t := d.opts.Clock.NewTicker(d.opts.ConfigCheck)
	defer t.Stop()
	rejected := [32]byte{}
	for {
		select {
		case <-ctx.Done():
			return nil, sum
		case <-t.C():
		}
		data, err := os.ReadFile(d.opts.ConfigPath)
		if err != nil {
			continue
		}
		s := sha256.Sum256(data)
		if s == sum || s == rejected {
			continue
		}
		// Load (not Parse) so relative file names resolve against the
		// config's directory, as at start.
		cfg, err := config.Load(d.opts.ConfigPath)
		if err != nil {
			rejected = s
			d.log.Error("new config rejected; the previous config keeps running", "config", d.opts.ConfigPath, "error", err)
			d.mu.Lock()
			d.cfgErr = redact.Error(err)
			d.mu.Unlock()
			continue
		}
		d.mu.Lock()
		d.cfgErr = ""
		d.mu.Unlock()
		return cfg, s
	}
}

func loadConfig(path string) (*config.Config, [32]byte, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, [32]byte{}, fmt.Errorf("read config: %w", err)
	}
	cfg, err := config.Load(path)
	if err != nil {
		return nil, [32]byte{}, err
	}
	return cfg, sha256.Sum256(data), nil
}

// appWork is one app's pending reconcile. It holds the revision's tree
// (release) until done is called: when the app reconciled it, or a newer
// revision replaced it.
type appWork struct {
	app config.App
	rev source.Revision
	// requested is set for the work of a poll someone asked for
	// (Trigger: a push webhook): it runs at once even while the app
	// backs off from a failure of the same revision.
	requested bool
	release   func()
}

// done releases the work's hold on its revision's tree.
func (w *appWork) done() {
	if w != nil && w.release != nil {
		w.release()
	}
}

// runGeneration runs one config until ctx ends. It sends on started
// once, when the config runs or why it cannot (then it returns). Its
// phases: build the runner and the alert notifier, keep the shard's apps,
// start one loop per app, schedule the sources' polls, then wait for the
// loops and release the revisions still queued.
func (d *Daemon) runGeneration(ctx context.Context, cfg *config.Config, started chan<- error) {
	runner, err := reconcile.New(cfg, d.opts.Cluster, d.opts.Options)
	if err != nil {
		d.cannotRun(started, err)
		return
	}
	notifier := d.newNotifier(cfg)
	defer closeNotifier(notifier)
	appsBySource := d.keepShard(cfg)
	d.carryAlerts(notifier, appsBySource)
	deps := newDependencies(cfg.Apps)
	var wg sync.WaitGroup
	queues := d.startApps(ctx, runner, notifier, deps, appsBySource, &wg)
	polled := pollTargets{apps: appsBySource, values: byValuesSource(appsBySource)}
	sched, err := d.newScheduler(cfg, runner, deps, polled, queues)
	if err != nil {
		d.cannotRun(started, err)
		return
	}
	d.publish(sched, polledSources(cfg, polled))
	d.mu.Lock()
	d.runner = runner
	d.mu.Unlock()
	started <- nil
	_ = sched.Run(ctx)
	wg.Wait()
	drainQueues(queues)
}

// cannotRun logs why a config cannot run and tells the generation's
// starter.
func (d *Daemon) cannotRun(started chan<- error, err error) {
	d.log.Error("config cannot run", "error", err)
	if d.opts.ConfigPath == "" {
		started <- fmt.Errorf("daemon without a config file cannot run: %w", err)
		return
	}
	started <- fmt.Errorf("config %s cannot run: %w", d.opts.ConfigPath, err)
}

// newNotifier builds the config's alert sinks. A sink that cannot be built
// is logged and the config runs without alerts (nil).
func (d *Daemon) newNotifier(cfg *config.Config) *alert.Notifier {
	notifier, err := alert.New(alertSinks(cfg.Alerts), alert.Options{
		Client:       d.opts.AlertClient,
		Registerer:   d.opts.Registerer,
		ErrorHandler: func(err error) { d.log.Warn("alert not delivered", "error", err) },
	})
	if err != nil {
		d.log.Error("alerts cannot run; continuing without them", "error", err)
		return nil
	}
	return notifier
}

// closeNotifier flushes the notifier's queued alerts, giving up after 5s.
func closeNotifier(notifier *alert.Notifier) {
	if notifier == nil {
		return
	}
	closeCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = notifier.Close(closeCtx)
}

// keepShard returns the config's apps in this daemon's shard by source,
// adds a pending status for each new one and drops the status of apps the
// config no longer has.
func (d *Daemon) keepShard(cfg *config.Config) map[string][]config.App {
	appsBySource := map[string][]config.App{}
	d.mu.Lock()
	defer d.mu.Unlock()
	keep := map[string]bool{}
	for _, app := range cfg.Apps {
		if !d.InShard(app.Name) {
			continue
		}
		appsBySource[app.Source] = append(appsBySource[app.Source], app)
		keep[app.Name] = true
		if _, ok := d.status[app.Name]; !ok {
			d.status[app.Name] = &AppStatus{App: app.Name, Source: app.Source, Result: ResultPending}
		}
		d.status[app.Name].Cluster = app.ClusterName()
	}
	for name := range d.status {
		if !keep[name] {
			delete(d.status, name)
			delete(d.reconcilers, name)
		}
	}
	return appsBySource
}

// startApps starts one loop per app, each fed by a queue of one and held
// by deps until its dependencies settled, and returns the queues by app
// name. wg counts the running loops.
func (d *Daemon) startApps(ctx context.Context, runner *reconcile.Runner, notifier *alert.Notifier, deps *dependencies, appsBySource map[string][]config.App, wg *sync.WaitGroup) map[string]chan appWork {
	queues := map[string]chan appWork{}
	for _, apps := range appsBySource {
		for _, app := range apps {
			q := make(chan appWork, 1)
			queues[app.Name] = q
			wg.Add(1)
			ar := d.newAppRun(ctx, app, notifier, deps)
			// Ping-pong: a field whose owner keeps flipping between one
			// of the app's managers and another forcing writer is no
			// longer forced (it fails as a conflict and alerts) until the
			// config changes, which starts a new generation.
			if det, err := drift.NewFlapDetector(drift.FlapOptions{Clock: d.opts.Clock}); err == nil {
				runner.SetFlapping(app.Name, det)
			}
			go func() {
				defer wg.Done()
				ar.loop(ctx, runner, q)
			}()
		}
	}
	return queues
}

// pollTargets are the apps a poll of each source concerns, by source
// name: those rendering from it (apps) and those reading their values
// files from it (values: helm.valuesSource).
type pollTargets struct {
	apps, values map[string][]config.App
}

// of returns the apps a poll of source name concerns.
func (p pollTargets) of(name string) []config.App {
	return append(slices.Clip(p.apps[name]), p.values[name]...)
}

// byValuesSource returns the apps of appsBySource that read values
// files from another source, by that source's name.
func byValuesSource(appsBySource map[string][]config.App) map[string][]config.App {
	out := map[string][]config.App{}
	for _, apps := range appsBySource {
		for _, app := range apps {
			if vs := reconcile.ValuesSource(app); vs != "" {
				out[vs] = append(out[vs], app)
			}
		}
	}
	return out
}

// newScheduler schedules the polls of every source that apps in this
// shard render from or read values from; each poll goes to onPoll.
func (d *Daemon) newScheduler(cfg *config.Config, runner *reconcile.Runner, deps *dependencies, polled pollTargets, queues map[string]chan appWork) (*source.Scheduler, error) {
	var jobs []source.Job
	for _, sc := range cfg.Sources {
		if len(polled.of(sc.Name)) == 0 {
			continue
		}
		jobs = append(jobs, runner.Source(sc.Name).Job())
	}
	return source.NewScheduler(jobs, source.SchedulerOptions{
		Clock: d.opts.Clock,
		OnPoll: func(ev source.Event) {
			d.onPoll(ev, runner, deps, polled.of(ev.Source), queues)
		},
	})
}

// polledSources returns every source apps in this shard render from or
// read values from, in config order.
func polledSources(cfg *config.Config, polled pollTargets) []config.Source {
	var out []config.Source
	for _, sc := range cfg.Sources {
		if len(polled.of(sc.Name)) > 0 {
			out = append(out, sc)
		}
	}
	return out
}

// publish makes the generation's scheduler and sources the ones Trigger
// and Sources see, and marks the daemon ready.
func (d *Daemon) publish(sched *source.Scheduler, sources []config.Source) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.scheduler = sched
	d.sources = sources
	d.ready = true
}

// drainQueues releases the revisions still queued when the loops ended.
func drainQueues(queues map[string]chan appWork) {
	for _, q := range queues {
		select {
		case w := <-q:
			w.done()
		default:
		}
	}
}

// onPoll hands a polled revision to the apps of the source (those
// rendering from it and those reading values from it), each with its own
// hold on the revision's tree, so a later poll cannot delete files an app
// is still rendering. A failed poll keeps the last good revision in
// force: nothing is applied or pruned, the error is recorded for each app.
func (d *Daemon) onPoll(ev source.Event, runner *reconcile.Runner, deps *dependencies, apps []config.App, queues map[string]chan appWork) {
	d.m.SourceFailures.WithLabelValues(ev.Source).Set(float64(ev.Failures))
	d.m.SourceNextPoll.WithLabelValues(ev.Source).Set(float64(ev.Next.Unix()))
	d.m.observePoll(ev)
	if ev.Err != nil {
		d.pollFailed(ev, runner, apps)
		return
	}
	d.m.SourceRevision.DeletePartialMatch(map[string]string{"source": ev.Source})
	d.m.SourceRevision.WithLabelValues(ev.Source, ev.Revision.SHA).Set(1)
	if ev.Result.Moved == source.Rewritten {
		d.log.Warn("branch history was rewritten (force-push); following it", "source", ev.Source, "previous", ev.Result.Previous, "revision", ev.Revision.SHA)
	}
	if ev.Result.CacheRecovered != nil {
		// The error is scrubbed of credentials by the source.
		d.log.Warn("source cache was unreadable; deleted and cloned again", "source", ev.Source, "error", ev.Result.CacheRecovered)
	}
	d.sourceAnswered(ev, apps)
	works := d.pollWorks(ev, runner, apps)
	// Before any app is queued, so a dependent never sees a dependency's
	// older revision as current.
	deps.resolved(ev, works)
	d.queueMu.Lock()
	defer d.queueMu.Unlock()
	for _, w := range works {
		q := queues[w.app.Name]
		// Keep only the newest revision: drop a queued older one.
		select {
		case old := <-q:
			old.done()
		default:
		}
		q <- w
	}
}

// pollFailed records a failed poll for each app of the source: the last
// good revision stays in force, nothing is applied or pruned. Each app
// is reported as the App controller reports an App whose source failed:
// result failed (in /status and syncd_app_result) with the error, and a
// Warning Event of reason SourceFailed (reconcile.ReasonOf); /status
// keeps the revision in force. Each app gets the source's error alert
// (open until the source answers: sourceAnswered). The next successful
// poll reconciles the app again, which reports its result anew.
func (d *Daemon) pollFailed(ev source.Event, runner *reconcile.Runner, apps []config.App) {
	d.log.Error("source poll failed; the last good revision stays in force", "source", ev.Source, "cause", string(ev.Cause), "failures", ev.Failures, "retryAt", ev.Next, "error", ev.Err)
	inForce := lastRevision(runner, ev.Source)
	out := reconcile.Outcome{Result: reconcile.ResultFailed, Stage: reconcile.StageSource}
	for _, app := range apps {
		err := runner.PollError(app, ev)
		d.notify(d.alertsOf(app.Name).polled(app.Name, ev.Source, inForce, err, d.opts.Clock.Now())...)
		d.m.Reconciled(appmetrics.Reconcile{App: app.Name, Cluster: app.ClusterName(), Result: out.Result, Stage: out.Stage,
			Took: ev.Finished.Sub(ev.Started), Now: d.opts.Clock.Now()})
		if d.opts.Inventory != nil {
			d.opts.Inventory.Refuse(app.Name, inventory.ReasonSourceFailed, err)
		}
		// The recorder folds repeats of one message into one Event
		// with a count, so a long outage is one Event, not one per poll.
		d.event(app, corev1.EventTypeWarning, string(reconcile.ReasonOf(out, err)), "the applied state is kept; nothing is applied or pruned until the source answers: %v", err)
		d.setStatus(app.Name, func(s *AppStatus) {
			if s.Result == reconcile.ResultOK {
				s.InForceOK = true
			}
			s.Error, s.Result = redact.Error(err), out.Result
			if app.Source == ev.Source {
				// Not for a values source's failures: the counts are
				// the app's source's, cleared by its polls.
				s.SourceFailures, s.SourceRetry = ev.Failures, ev.Next
			}
		})
	}
}

// sourceAnswered resolves the error alerts of the source's failed polls
// for each app of a poll that succeeded.
func (d *Daemon) sourceAnswered(ev source.Event, apps []config.App) {
	for _, app := range apps {
		d.notify(d.alertsOf(app.Name).polled(app.Name, ev.Source, ev.Revision, nil, d.opts.Clock.Now())...)
	}
}

// lastRevision is the revision of source name in force (zero when it
// never answered).
func lastRevision(runner *reconcile.Runner, name string) source.Revision {
	if src := runner.Source(name); src != nil {
		rev, _ := src.Last()
		return rev
	}
	return source.Revision{}
}

// pollWorks is the work a successful poll hands each of apps: the
// revision it renders at (Runner.AppRevision), held. The scheduler polls
// a source only after its OnPoll returned, so the polled revision is
// still in force and its hold cannot fail; the revision another source
// has in force can move on meanwhile, and that source's own poll then
// hands the app its work.
func (d *Daemon) pollWorks(ev source.Event, runner *reconcile.Runner, apps []config.App) []appWork {
	works := make([]appWork, 0, len(apps))
	for _, app := range apps {
		if app.Source == ev.Source {
			d.setStatus(app.Name, func(s *AppStatus) { s.SourceFailures, s.SourceRetry = 0, time.Time{} })
		}
		rev, release, err := runner.AppRevision(app, ev.Revision)
		if errors.Is(err, reconcile.ErrNoRevision) {
			continue
		}
		if err != nil {
			d.log.Error("revision's tree is gone; the app waits for the next poll", "app", app.Name, "source", ev.Source, "error", err)
			continue
		}
		works = append(works, appWork{app: app, rev: rev, requested: ev.Cause == source.CauseManual, release: release})
	}
	return works
}

// appRun is the state of one app's loop in one config generation.
type appRun struct {
	d        *Daemon
	app      config.App
	notifier *alert.Notifier
	// rc reconciles the app and runs its drift watcher; it inherits
	// from the previous generation's the cluster the app applied to, so
	// a move made by a config change is seen.
	rc *reconcile.Reconciler
	// alerts pairs the app's alerts with their resolutions; it
	// outlives the generation (carryAlerts).
	alerts *appAlerts
	// rewind is the rewind last reported ("from..to"), so each is
	// alerted once.
	rewind string
	// waits holds the app back until its dependencies are ready.
	waits dependencyHold
	// warned is the render warnings last logged, so each set is logged
	// once, not at every sync.
	warned string
}

func (a *appRun) notify(evs ...alert.Event) {
	if a.notifier == nil {
		return
	}
	for _, ev := range evs {
		a.notifier.Notify(ev)
	}
}

// loop reconciles the app for each revision handed to it, retrying
// failures with capped exponential backoff (appBackoff, kept by a
// reconcile.Retry, as the App controller's): a poll of the revision that
// failed waits for its retry; a new revision or a Trigger runs at once
// and starts the backoff over. A revision whose dependencies are not
// ready waits, without backoff, until one of them settles or a newer
// revision arrives (depends.go). Each reconcile waits for one of the
// daemon's turns (Options.Workers).
func (a *appRun) loop(ctx context.Context, runner *reconcile.Runner, q chan appWork) {
	d := a.d
	backoff := reconcile.NewRetry(d.appBackoff())
	var retry <-chan time.Time
	var pending *appWork
	for {
		select {
		case <-ctx.Done():
			pending.done()
			return
		case w := <-q:
			waits := retry != nil && backoff.Waits(w.rev.SHA, w.requested)
			pending.done()
			pending = &w
			if waits {
				continue
			}
			backoff.Renew(w.rev.SHA, w.requested)
			retry = nil
		case <-retry:
			retry = nil
		case <-a.waits.graph.wakeup(a.app.Name):
			if !a.waits.held {
				continue
			}
		}
		if pending == nil {
			continue
		}
		if !d.takeTurn(ctx) {
			pending.done()
			return
		}
		if w, ok := newer(q); ok {
			// Came while the app waited for its turn: as if it had
			// come before, but it runs now either way.
			backoff.Renew(w.rev.SHA, w.requested)
			pending.done()
			pending = &w
			retry = nil
		}
		if a.holdForDependencies(pending) {
			d.giveTurn()
			continue
		}
		err := a.reconcile(ctx, runner, pending.rev)
		d.giveTurn()
		a.waits.graph.settled(a.app.Name)
		if ctx.Err() != nil {
			pending.done()
			return
		}
		if err == nil {
			pending.done()
			pending = nil
			backoff.Succeeded()
			continue
		}
		after := backoff.Failed(pending.rev.SHA, d.opts.Clock.Now())
		d.setStatus(pending.app.Name, func(s *AppStatus) { s.Attempts++ })
		d.log.Info("reconcile will be retried", "app", pending.app.Name, "after", after.String())
		retry = d.opts.Clock.After(after)
	}
}

// takeTurn waits for one of the Workers' turns to reconcile an app; false
// when ctx ended first.
func (d *Daemon) takeTurn(ctx context.Context) bool {
	select {
	case d.turns <- struct{}{}:
		return true
	case <-ctx.Done():
		return false
	}
}

// giveTurn hands back the turn takeTurn took.
func (d *Daemon) giveTurn() { <-d.turns }

// newer returns the work queued on q, if any: onPoll keeps only the
// newest there.
func newer(q chan appWork) (appWork, bool) {
	select {
	case w := <-q:
		return w, true
	default:
		return appWork{}, false
	}
}

// appBackoff is an app's retry backoff before its first failure: 5 s,
// doubling with each failure up to MaxBackoff, each delay plus up to 10%
// at random (apimachinery's wait.Backoff), so the apps an API server
// restart failed together spread their retries. The cap applies to the
// first retry too: a MaxBackoff below 5 s means retry at least that often.
func (d *Daemon) appBackoff() wait.Backoff {
	return wait.Backoff{Duration: min(5*time.Second, d.opts.MaxBackoff), Factor: 2, Jitter: 0.1, Steps: math.MaxInt32, Cap: d.opts.MaxBackoff}
}

// reconcile renders and applies one app at one revision (its Reconciler)
// and reports how it ended (run).
func (a *appRun) reconcile(ctx context.Context, runner *reconcile.Runner, rev source.Revision) error {
	return a.run(ctx, runner, rev)
}

// newAppRun makes an app's loop state for a generation. Its Reconciler
// inherits what the previous generation's knew of the app's clusters.
func (d *Daemon) newAppRun(ctx context.Context, app config.App, notifier *alert.Notifier, deps *dependencies) *appRun {
	ar := &appRun{d: d, app: app, notifier: notifier, alerts: d.alertsOf(app.Name), waits: dependencyHold{graph: deps}}
	ar.rc = reconcile.NewReconciler(reconcile.ReconcilerOptions{
		Context:       ctx,
		Logger:        d.log.With("app", app.Name),
		DriftDebounce: d.opts.DriftDebounce,
		OnDrift:       ar.onDrift,
	})
	d.mu.Lock()
	defer d.mu.Unlock()
	ar.rc.Inherit(d.reconcilers[app.Name])
	d.reconcilers[app.Name] = ar.rc
	return ar
}

// onDrift alerts a change of the app's drift findings (the Reconciler
// logged the new ones) and publishes their count.
func (a *appRun) onDrift(ch drift.Delta) {
	a.notify(a.alerts.driftChanged(ch)...)
	a.publishFindings()
}

// publishFindings sets the findings count in /status and the metric.
func (a *appRun) publishFindings() {
	report := a.rc.Report()
	if report == nil {
		return
	}
	counts := map[drift.Class]int{}
	n := 0
	for _, f := range report.Findings {
		counts[f.Class]++
		if f.Class.IsDrift() {
			n++
		}
	}
	a.d.m.Findings(a.app.Name, a.app.ClusterName(), counts)
	overlaps := len(report.Overlaps())
	a.d.setStatus(a.app.Name, func(s *AppStatus) { s.Findings, s.Overlaps = n, overlaps })
}

// run reconciles the app at one revision (reconcile.Reconciler); how it
// ended is reported once, whatever the exit path (report).
func (a *appRun) run(ctx context.Context, runner *reconcile.Runner, rev source.Revision) (err error) {
	start := a.d.opts.Clock.Now()
	out := reconcile.Outcome{Revision: rev, Result: reconcile.ResultFailed}
	defer func() { a.report(start, out, err) }()
	compiled, err := runner.Compiled(a.app.Name)
	if err != nil {
		return err
	}
	out, err = a.rc.Reconcile(ctx, runner, compiled, rev)
	return err
}

// report writes how one reconcile ended in /status, the metrics, Events,
// alerts and the log.
func (a *appRun) report(start time.Time, out reconcile.Outcome, err error) {
	d, app, rev := a.d, a.app, out.Revision
	log := d.log.With("app", app.Name, "revision", rev.SHA, "cluster", app.ClusterName())
	d.m.Reconciled(appmetrics.Reconcile{App: app.Name, Cluster: app.ClusterName(), Result: out.Result, Stage: out.Stage,
		Took: d.opts.Clock.Since(start), ChangeSet: out.ChangeSet, Now: d.opts.Clock.Now()})
	d.finish(app, out, err)
	if out.Detect {
		d.setStatus(app.Name, func(s *AppStatus) {
			s.Mode, s.Objects, s.Changed, s.Conflicts = ModeDetect, len(out.Rendered.Plan.Objects), 0, 0
		})
	}
	if out.Rendered != nil {
		a.reportRewind(out.Rendered)
		a.reportWarnings(out.Rendered.Plan.Warnings)
	}
	if out.ChangeSet != nil {
		a.notify(alert.ChangeSetEvents(app.Name, out.ChangeSet, d.opts.Clock.Now())...)
	}
	a.notify(a.alerts.reconciled(app.Name, out, err, d.opts.Clock.Now())...)
	a.publishFindings()
	if out.Rendered != nil && !out.Detect {
		a.reportPrune(log, rev, out.Rendered.Prune)
	}
	if err != nil {
		log.Error("reconcile failed", "result", string(out.Result), "error", err)
		return
	}
	log.Info("reconciled", "duration", d.opts.Clock.Since(start).String())
}

// event records a Kubernetes Event on the app's inventory parent; none for
// an app in drift mode detect, for which syncd writes nothing (it has no
// inventory parent either), nor for an app on a remote cluster (its
// parent is there, and the recorder writes to syncd's own cluster).
func (d *Daemon) event(app config.App, eventType, reason, format string, args ...any) {
	if d.opts.Events == nil || d.opts.Inventory == nil || app.DetectOnly() || app.IsRemote() {
		return
	}
	ref := &corev1.ObjectReference{APIVersion: "v1", Kind: "Secret", Namespace: d.opts.Inventory.Namespace(), Name: inventory.ParentPrefix + app.Name}
	// The message is scrubbed whole: an error formatted into it may echo
	// object content (package redact).
	d.opts.Events.Eventf(ref, eventType, reason, "%s", redact.Sprintf(format, args...))
}

// finish records how a reconcile ended as the app's Event and /status:
// a failure's Warning Event has the reason the App controller gives the
// same failure (reconcile.ReasonOf).
func (d *Daemon) finish(app config.App, out reconcile.Outcome, err error) {
	rev, cs := out.Revision, out.ChangeSet
	switch {
	case err != nil:
		d.event(app, corev1.EventTypeWarning, string(reconcile.ReasonOf(out, err)), "%v", reconcile.AtRevision(reconcile.ShortSHA(rev.SHA), err))
	case cs != nil && cs.Written() > 0:
		d.event(app, corev1.EventTypeNormal, "Synced", "%s", reconcile.SyncedMessage(reconcile.ShortSHA(rev.SHA), cs))
	}
	d.setStatus(app.Name, func(s *AppStatus) {
		s.Revision, s.Result, s.LastRun = rev.SHA, out.Result, d.opts.Clock.Now()
		s.Error, s.InForceOK = "", false
		if err != nil {
			s.Error = redact.Error(err)
		} else {
			s.Attempts = 0
		}
		if cs != nil {
			s.Objects = len(cs.Changes)
			s.Changed = cs.Written() // what the API server wrote, not what was only decided
			s.Conflicts = cs.Count(applier.Conflicted)
		}
	})
}

func (d *Daemon) setStatus(app string, f func(*AppStatus)) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if s, ok := d.status[app]; ok {
		f(s)
	}
}
