package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/client-go/metadata"

	"syncd.dev/syncd/internal/applier"
	"syncd.dev/syncd/internal/drift"
	"syncd.dev/syncd/internal/inventory"
	"syncd.dev/syncd/internal/preview"
	"syncd.dev/syncd/internal/reconcile"
	"syncd.dev/syncd/internal/redact"
	"syncd.dev/syncd/internal/ui"
)

// defaultUIAddress is where syncd ui listens by default: loopback only.
const defaultUIAddress = "127.0.0.1:7480"

type uiFlags struct {
	kube      kubeFlags
	address   string
	inventory inventoryFlags
	config    string
	cacheDir  string
}

func newUICommand() *cobra.Command {
	f := &uiFlags{}
	cmd := &cobra.Command{
		Use:   "ui [--address 127.0.0.1:7480] [--config FILE]",
		Short: "Serve the ownership map: a local web UI of the apps, their objects and who owns each field",
		Long: `ui serves a web UI on a loopback address (--address, default ` + defaultUIAddress + `;
port 0 picks a free one) and prints its URL; it opens nothing by itself.
It reads the cluster with your kubeconfig and RBAC, like kubectl proxy: App
objects of every namespace you may list, the file apps' inventories, and
the live objects with their managedFields. The Object page shows the object
as YAML with every field's manager(s), one colour per manager. With
--config, the Object page of a syncd.yaml app also shows its drift
findings (as syncd drift computes them: a render of the app each time).

Secret values and sensitive fields are redacted as in every other output.
The UI answers only requests whose Host is a loopback name or the
--address host (no DNS rebinding), sends a strict Content-Security-Policy
and serves GET only. See docs/ui.md.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runUI(cmd, f) },
	}
	fs := cmd.Flags()
	f.kube.register(fs)
	f.inventory.register(fs, false)
	fs.StringVar(&f.address, "address", defaultUIAddress, "loopback address to listen on (host:port; port 0 picks a free port)")
	fs.StringVar(&f.config, "config", "", "syncd.yaml: show its apps' drift findings on the Object page")
	fs.StringVar(&f.cacheDir, "cache-dir", "", "where Git sources are cached for --config (default ~/.cache/syncd/sources)")
	return cmd
}

func runUI(cmd *cobra.Command, f *uiFlags) error {
	host, err := loopbackHost(f.address)
	if err != nil {
		return withCode(exitError, err)
	}
	srv, err := newUIServer(cmd.Context(), f, host)
	if err != nil {
		return withCode(exitError, err)
	}
	ln, err := net.Listen("tcp", f.address)
	if err != nil {
		return withCode(exitError, fmt.Errorf("--address %s: %w", f.address, err))
	}
	fmt.Fprintf(cmd.OutOrStdout(), "syncd ui: serving http://%s/ (Ctrl-C stops it)\n", ln.Addr())
	return serveUntilDone(cmd.Context(), ln, srv.Handler())
}

// loopbackHost checks that address is a loopback host:port and returns
// its host. The UI reads the cluster with the user's own credentials:
// listening on another interface would lend them to the network.
func loopbackHost(address string) (string, error) {
	host, _, err := net.SplitHostPort(address)
	if err != nil {
		return "", fmt.Errorf("--address %q: %w; give host:port, e.g. %s", address, err, defaultUIAddress)
	}
	if host == "localhost" {
		return host, nil
	}
	if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
		return "", fmt.Errorf("--address %q: not a loopback address; syncd ui reads the cluster with your credentials and serves only this machine (use 127.0.0.1, ::1 or localhost)", address)
	}
	return host, nil
}

// newUIServer connects to the cluster and builds the UI over it.
func newUIServer(ctx context.Context, f *uiFlags, host string) (*ui.Server, error) {
	cl, err := f.kube.connect()
	if err != nil {
		return nil, err
	}
	md, err := metadata.NewForConfig(cl.config)
	if err != nil {
		return nil, err
	}
	opts := f.inventory.options(nil, true)
	inv, err := inventory.New(cl.dynamic, md, cl.mapper, opts)
	if err != nil {
		return nil, err
	}
	uo := ui.Options{Dynamic: cl.dynamic, Mapper: cl.mapper, Inventory: inv, InventoryNamespace: f.inventory.namespace, Hosts: []string{host}, Actions: true}
	drifts := uiDrift{cl: cl, f: f}
	if f.config != "" {
		runner, _, _, err := openConfig(ctx, f.config, "", &f.kube, nil, f.cacheDir, 0)
		if err != nil {
			return nil, err
		}
		drifts.file = &configDrift{runner: runner}
		uo.FileSource = configSource(runner)
		uo.Sensitive = configSensitive(runner)
	}
	uo.Drift = drifts
	uo.Plans = uiPlans{cl: cl, f: f}
	return ui.New(uo)
}

// configSource names the source of a file app of --config.
func configSource(runner *reconcile.Runner) func(string) (string, bool) {
	return func(app string) (string, bool) {
		a, err := runner.App(app)
		if err != nil || a.Source == "" {
			return "", false
		}
		return a.Source, true
	}
}

// configSensitive gives the redaction rules of a file app of --config
// (its sensitive paths): the Object page hides them as syncd drift does.
func configSensitive(runner *reconcile.Runner) func(ui.AppRef) *redact.Rules {
	return func(app ui.AppRef) *redact.Rules {
		if app.Namespace != "" {
			return nil
		}
		spec, err := runner.Compiled(app.Name)
		if err != nil || spec == nil {
			return nil
		}
		return spec.Sensitive
	}
}

// uiPlans previews an app for the UI's Plan page as syncd plan does:
// a file app of --config as plan --config --app, an App object as plan
// --app -n, with the user's credentials.
type uiPlans struct {
	cl *cluster
	f  *uiFlags
}

var _ ui.PlanSource = uiPlans{}

// Plan previews app; a file app needs the UI's --config.
func (p uiPlans) Plan(ctx context.Context, app ui.AppRef) (*preview.Report, error) {
	flags := &planFlags{kube: p.f.kube, config: p.f.config, app: app.Name, namespace: app.Namespace,
		cacheDir: p.f.cacheDir, concurrency: applier.DefaultConcurrency, inventoryNS: p.f.inventory.namespace}
	target, err := p.target(ctx, app, flags)
	if err != nil {
		return nil, err
	}
	defer target.cleanup()
	rep, _, err := planReport(ctx, p.cl, target, flags, nil)
	return rep, err
}

// target is what plan previews for app: the config's app, or the App
// translated as the controller translates it.
func (p uiPlans) target(ctx context.Context, app ui.AppRef, flags *planFlags) (*planTarget, error) {
	if !app.File() {
		flags.config = ""
		return planObjectTarget(ctx, p.cl, flags)
	}
	if flags.config == "" {
		return nil, fmt.Errorf("app %s is declared in a syncd.yaml: start syncd ui with --config FILE to plan it, or run syncd plan --config FILE --app %s", app.Name, app.Name)
	}
	return planFileTarget(flags)
}

// uiDrift is syncd ui's drift source: the one-shot check of syncd drift,
// with the user's credentials, for a file app of --config (file) and for
// an App object, translated as syncd drift --app -n translates it.
type uiDrift struct {
	file *configDrift
	cl   *cluster
	f    *uiFlags
}

var _ ui.DriftSource = uiDrift{}

// Drift checks app; a file app without --config has no report.
func (d uiDrift) Drift(ctx context.Context, app ui.AppRef) (*drift.Report, error) {
	if app.File() {
		if d.file == nil {
			return nil, nil
		}
		return d.file.Drift(ctx, app)
	}
	ac, err := appsOn(d.cl, app.Namespace)
	if err != nil {
		return nil, err
	}
	obj, err := ac.getApp(ctx, app.Namespace, app.Name)
	if err != nil {
		return nil, err
	}
	flags := &driftFlags{objectFlags: objectFlags{kube: d.f.kube, namespace: app.Namespace}, app: app.Name, cacheDir: d.f.cacheDir}
	return flags.driftObject(ctx, ac, obj)
}

// configDrift is the UI's drift source for the apps of a syncd.yaml: the
// one-shot check of syncd drift.
type configDrift struct{ runner *reconcile.Runner }

var _ ui.DriftSource = configDrift{}

// Drift runs the drift check of a file app; an App object or an app the
// config does not name has no report.
func (c configDrift) Drift(ctx context.Context, app ui.AppRef) (*drift.Report, error) {
	if !app.File() {
		return nil, nil
	}
	a, err := c.runner.App(app.Name)
	if err != nil {
		return nil, nil
	}
	return c.runner.DetectDrift(ctx, a, "")
}

// serveUntilDone serves h on ln until ctx is cancelled, then shuts the
// server down, giving open requests a few seconds; the requests' context
// ends at shutdown, so open event streams end too.
func serveUntilDone(ctx context.Context, ln net.Listener, h http.Handler) error {
	base, cancelBase := context.WithCancel(context.Background())
	defer cancelBase()
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second, BaseContext: func(net.Listener) context.Context { return base }}
	srv.RegisterOnShutdown(cancelBase)
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	select {
	case err := <-done:
		return withCode(exitError, err)
	case <-ctx.Done():
	}
	shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutdown); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return withCode(exitError, err)
	}
	return nil
}
