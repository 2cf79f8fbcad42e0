package drift

import (
	"testing"

	"syncd.dev/syncd/internal/config"
	"syncd.dev/syncd/internal/planner"
)

// plannerApp is app as the planner takes it; the tests state apps the way
// a config writes them. It maps the fields as reconcile.Compile does
// (which this package's tests cannot import).
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
