package reconcile

import (
	"context"
	"errors"
	"fmt"

	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	"syncd.dev/syncd/internal/applier"
	"syncd.dev/syncd/internal/config"
	"syncd.dev/syncd/internal/drift"
	"syncd.dev/syncd/internal/planner"
)

// ErrDetectOnly is returned (wrapped, naming the app) when asked to write
// for an app whose drift.mode is detect.
var ErrDetectOnly = errors.New("drift.mode is detect: syncd never writes to the cluster for this app")

// detectOnly returns the error that refuses a write for a detect-mode
// app, nil for any other.
func (r *Runner) detectOnly(app config.App) error {
	if !app.DetectOnly() {
		return nil
	}
	return fmt.Errorf("app %s: %w; nothing was applied or pruned. Preview with `syncd plan --app %s`, report drift with `syncd drift --app %s`, or set drift.mode: correct for the app in %s to let syncd apply it",
		app.Name, ErrDetectOnly, app.Name, app.Name, r.cfg.File)
}

// DriftOptions returns the settings drift detection uses for an app, the
// same for `syncd drift` and the Reconciler's drift watcher: the app's managers, its
// conflict policy (fields it yields are reported as yielded, not drift),
// its ignore rules (fields set aside, not drift) and its sensitive fields
// (redacted).
func DriftOptions(app config.App) (drift.Options, error) {
	var managers []planner.FieldManager
	for _, m := range app.Managers() {
		managers = append(managers, planner.FieldManager(m))
	}
	policy, err := policyOf(app.Conflicts)
	if err != nil {
		return drift.Options{}, fmt.Errorf("app %s: %w", app.Name, err)
	}
	sens, err := SensitiveRules(app)
	if err != nil {
		return drift.Options{}, err
	}
	ign, err := ignoreOf(app.Ignore)
	if err != nil {
		return drift.Options{}, fmt.Errorf("app %s: %w", app.Name, err)
	}
	opts := drift.Options{Managers: managers, Yield: yieldPolicy{policy}, Ignore: ign}
	if sens != nil {
		opts.Sensitive = sens
	}
	return opts, nil
}

// Normalizer returns what `syncd drift` asks how the API server stores an
// app's declared values (drift.Normalize): the applier's dry-run apply,
// through the client the app's own applies use (impersonating its
// serviceAccountName, when set), so the dry run needs no permission the
// app's applies do not have.
func (r *Runner) Normalizer(app config.App) (drift.Normalizer, error) {
	t, err := r.Target(context.Background(), app)
	if err != nil {
		return nil, err
	}
	dyn, err := t.Dynamic(app)
	if err != nil {
		return nil, err
	}
	ap, err := applier.New(dyn, t.Cluster.Mapper, applier.Options{})
	if err != nil {
		return nil, fmt.Errorf("app %s: %w", app.Name, err)
	}
	return ap, nil
}

// yieldPolicy asks the applier's conflict policy, with the rule matcher
// the apply uses, whether a field taken by manager would be yielded.
type yieldPolicy struct{ p *applier.Policy }

var _ drift.YieldPolicy = yieldPolicy{}

func (y yieldPolicy) Yields(ref planner.ObjectRef, manager string, path fieldpath.Path) bool {
	return y.p.Decide(ref, applier.Conflict{Manager: manager, Path: path.String()}, path) == applier.ConflictYield
}
