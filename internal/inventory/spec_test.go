package inventory

import (
	"testing"

	"syncd.dev/syncd/internal/config"
	"syncd.dev/syncd/internal/identity"
	"syncd.dev/syncd/internal/planner"
)

// The tests state apps the way a config writes them; these map them to
// the stages' options as reconcile.Compile does (which this package's
// tests cannot import).

// invApp is app as the inventory takes it.
func invApp(app config.App) App {
	return App{
		Name:          app.Name,
		Tenant:        identity.Tenant{App: app.Name, Namespace: app.Namespace, ServiceAccount: app.ServiceAccountName},
		Managers:      app.Managers(),
		Prune:         app.PruneEnabled(),
		PruneBudget:   app.PruneBudgetPercent(),
		AllowEmpty:    app.AllowEmpty,
		DeleteAdopted: app.DeleteAdopted(),
		InstallsSyncd: app.InstallsSyncd,
		// A stand-in for reconcile's digest of the conflicts section:
		// the tests set only its default.
		ConflictPolicy: "default=" + string(app.Conflicts.Default),
	}
}

// plannerApp is app as the planner takes it.
func plannerApp(t testing.TB, app config.App) planner.App {
	t.Helper()
	out := planner.App{Name: app.Name, Namespace: app.Namespace, Manager: planner.FieldManager(app.DefaultManager())}
	for i, s := range app.Split {
		sp, err := planner.ParseSplit(s.Manager, s.Kinds, s.Paths)
		if err != nil {
			t.Fatalf("app %q: split[%d]: %v", app.Name, i, err)
		}
		out.Splits = append(out.Splits, sp)
	}
	return out
}
