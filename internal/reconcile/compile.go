package reconcile

import (
	"fmt"
	"reflect"
	"slices"

	"syncd.dev/syncd/internal/applier"
	"syncd.dev/syncd/internal/config"
	"syncd.dev/syncd/internal/drift"
	"syncd.dev/syncd/internal/identity"
	"syncd.dev/syncd/internal/ignore"
	"syncd.dev/syncd/internal/inventory"
	"syncd.dev/syncd/internal/planner"
	"syncd.dev/syncd/internal/redact"
	"syncd.dev/syncd/internal/source"
)

// App is one app's config compiled, once per config load, into the
// options of each stage it goes through: kinds and field paths parsed,
// defaults filled in, its applier and drift settings made. This file is
// the one place that reads config.App for the stages; the stages never
// see the config schema. A Reconciler runs an App; the App itself holds
// no state of a run.
type App struct {
	// Config is the app as the config declares it.
	Config config.App
	// Planner is what the planner needs: names, managers, split rules.
	Planner planner.App
	// Inventory is what the inventory and prune need.
	Inventory inventory.App
	// Tenant is whom the app's requests for its objects run as.
	Tenant identity.Tenant
	// Sensitive are the app's redaction rules (nil: the built-in ones).
	Sensitive *redact.Rules
	// Ignore are the app's drift ignore rules (nil: none), which drift,
	// the applier and the plan share.
	Ignore *ignore.Rules
	// Apply are the app's applier settings (ApplyOptions); the Runner
	// adds the flapping fields of the moment to each apply.
	Apply applier.ApplyOptions
	// Drift are the app's drift settings (DriftOptions), without the
	// sensitive fields of a plan (Plan.Sensitive adds them).
	Drift drift.Options
}

// Compile turns an app's config into the options of each stage. Errors
// name the app, the rule and the field: app "web": split[0]: paths[1]: ….
func Compile(app config.App) (*App, error) {
	pl, err := plannerApp(app)
	if err != nil {
		return nil, err
	}
	sens, err := SensitiveRules(app)
	if err != nil {
		return nil, err
	}
	pl.Sensitive = sens
	ign, err := ignoreOf(app.Ignore)
	if err != nil {
		return nil, fmt.Errorf("app %q: %w", app.Name, err)
	}
	ao, err := ApplyOptions(app)
	if err != nil {
		return nil, err
	}
	dopts, err := DriftOptions(app)
	if err != nil {
		return nil, err
	}
	tenant := TenantOf(app)
	return &App{
		Config:    app,
		Planner:   pl,
		Inventory: inventoryApp(app, tenant),
		Tenant:    tenant,
		Sensitive: sens,
		Ignore:    ign,
		Apply:     ao,
		Drift:     dopts,
	}, nil
}

// plannerApp parses the app's split rules.
func plannerApp(app config.App) (planner.App, error) {
	out := planner.App{Name: app.Name, Namespace: app.Namespace, Manager: planner.FieldManager(app.DefaultManager())}
	for i, s := range app.Split {
		sp, err := planner.ParseSplit(s.Manager, s.Kinds, s.Paths)
		if err != nil {
			return planner.App{}, fmt.Errorf("app %q: split[%d]: %w", app.Name, i, err)
		}
		out.Splits = append(out.Splits, sp)
	}
	return out, nil
}

// SensitiveRules parses the app's sensitive rules: its redaction rules,
// for every output that prints its objects.
func SensitiveRules(app config.App) (*redact.Rules, error) {
	var opts redact.Options
	for i, sr := range app.Sensitive {
		r, err := redact.ParseSensitive(sr.Kinds, sr.Paths)
		if err != nil {
			return nil, fmt.Errorf("app %q: sensitive[%d].%w", app.Name, i, err)
		}
		opts.Sensitive = append(opts.Sensitive, r)
	}
	return redact.New(opts), nil
}

// TenantOf is whom the app's requests for its objects run as.
func TenantOf(app config.App) identity.Tenant {
	return identity.Tenant{App: app.Name, Namespace: app.Namespace, ServiceAccount: app.ServiceAccountName}
}

// inventoryApp is the app's prune settings and managers, defaults filled
// in.
func inventoryApp(app config.App, tenant identity.Tenant) inventory.App {
	return inventory.App{
		Name:           app.Name,
		Tenant:         tenant,
		Managers:       app.Managers(),
		Prune:          app.PruneEnabled(),
		PruneBudget:    app.PruneBudgetPercent(),
		AllowEmpty:     app.AllowEmpty,
		DeleteAdopted:  app.DeleteAdopted(),
		InstallsSyncd:  app.InstallsSyncd,
		ConflictPolicy: policyDigest(app.Conflicts),
	}
}

// compiled is one app of a Runner's config, compiled when the Runner was
// built.
type compiled struct {
	app  config.App
	spec *App
	err  error
}

// compileApps compiles every app of the config, once per config load. An
// app that does not compile keeps its error: its runs fail, the others'
// do not.
//
// owner is recorded as each app's inventory owner (Options.Owner).
func compileApps(apps []config.App, owner string) map[string]compiled {
	out := make(map[string]compiled, len(apps))
	for _, a := range apps {
		spec, err := Compile(a)
		if spec != nil {
			spec.Inventory.Owner = owner
		}
		out[a.Name] = compiled{app: a, spec: spec, err: err}
	}
	return out
}

// Compiled returns the app of the Runner's config named name, compiled
// when the Runner was built: the drivers reconcile the config's own apps
// and need no comparison (Spec) to find theirs.
func (r *Runner) Compiled(name string) (*App, error) {
	c, ok := r.specs[name]
	if !ok {
		return nil, fmt.Errorf("%s: no app named %q", r.cfg.File, name)
	}
	return c.spec, c.err
}

// Spec returns the compiled options of app: those compiled with the
// config when app is the config's, else (an app changed or made by the
// caller) compiled now.
func (r *Runner) Spec(app config.App) (*App, error) {
	if c, ok := r.specs[app.Name]; ok && reflect.DeepEqual(c.app, app) {
		return c.spec, c.err
	}
	spec, err := Compile(app)
	if spec != nil {
		spec.Inventory.Owner = r.opts.Owner
	}
	return spec, err
}

// SourceSpec is a Git or OCI source's config as the source stage takes it
// (a Helm repository source's is HelmSourceSpec).
func SourceSpec(sc config.Source) source.Spec {
	if sc.Kind() == config.SourceOCI {
		return ociSourceSpec(sc.Name, *sc.OCI)
	}
	g := sc.Git
	spec := source.Spec{
		Name: sc.Name, URL: g.URL,
		Branch: g.Branch, Tag: g.Tag, Semver: g.Semver, Commit: g.Commit,
		Schedule: g.Schedule,
	}
	if g.Interval != nil {
		spec.Interval = g.Interval.Duration
	}
	if a := g.Auth; a != nil {
		spec.Auth = &source.Auth{Username: a.Username, TokenFile: a.TokenFile, SSHKeyFile: a.SSHKeyFile, KnownHostsFile: a.KnownHostsFile}
	}
	if v := g.Verify; v != nil {
		spec.Verify = &source.Verify{Mode: source.VerifyMode(v.Mode), KeysFile: v.KeysFile, AllowRewrites: v.AllowRewrites}
	}
	return spec
}

// ociSourceSpec is an oci source's config as the source stage takes it.
func ociSourceSpec(name string, o config.OCISource) source.Spec {
	spec := source.Spec{
		Name: name, URL: o.URL, Tag: o.Tag, Semver: o.Semver,
		OCI: &source.OCI{Digest: o.Digest, CAFile: o.CAFile, Insecure: o.Insecure},
	}
	if o.Interval != nil {
		spec.Interval = o.Interval.Duration
	}
	if a := o.Auth; a != nil {
		spec.OCI.Auth = &source.OCIAuth{DockerConfigFile: a.DockerConfigFile, Username: a.Username, PasswordFile: a.PasswordFile, TokenFile: a.TokenFile}
	}
	return spec
}

// HelmSourceSpec is a Helm repository source's config as the source stage
// takes it, with the charts the config's apps render from it (each
// distinct chart and version once, in the order of the apps).
func HelmSourceSpec(sc config.Source, apps []config.App) source.HelmSpec {
	h := sc.Helm
	spec := source.HelmSpec{Name: sc.Name, URL: h.URL}
	if h.Interval != nil {
		spec.Interval = h.Interval.Duration
	}
	if a := h.Auth; a != nil {
		spec.Auth = &source.HelmAuth{Username: a.Username, PasswordFile: a.PasswordFile, BearerTokenFile: a.BearerTokenFile, DockerConfigFile: a.DockerConfigFile, CAFile: a.CAFile}
	}
	for _, app := range apps {
		if app.Source != sc.Name {
			continue
		}
		if ref, ok := ChartRefOf(app); ok && !slices.Contains(spec.Charts, ref) {
			spec.Charts = append(spec.Charts, ref)
		}
	}
	return spec
}

// ChartRefOf is the chart an app renders from a Helm repository source;
// false for an app that names no chart (a Git source's).
func ChartRefOf(app config.App) (source.ChartRef, bool) {
	if app.Helm == nil || app.Helm.Chart == "" {
		return source.ChartRef{}, false
	}
	return source.ChartRef{Chart: app.Helm.Chart, Version: app.Helm.Version}, true
}
