package reconcile

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"syncd.dev/syncd/internal/config"
	"syncd.dev/syncd/internal/identity"
	"syncd.dev/syncd/internal/inventory"
	"syncd.dev/syncd/internal/planner"
)

// TestCompileErrors: a rule the stages cannot parse is named by app, rule
// and field.
func TestCompileErrors(t *testing.T) {
	tests := map[string]struct {
		app  config.App
		want string
	}{
		"bad split path": {config.App{Name: "web", AppSpec: config.AppSpec{Split: []config.SplitRule{{Manager: "m", Paths: []string{".spec", ".spec.containers[name=app]"}}}}},
			`app "web": split[0]: paths[1]: field path ".spec.containers[name=app]": at position 22`},
		"bad split kind": {config.App{Name: "web", AppSpec: config.AppSpec{Split: []config.SplitRule{{Manager: "m", Kinds: []string{"apps/deployment"}, Paths: []string{".spec"}}}}},
			`app "web": split[0]: kinds[0] "apps/deployment": kind "deployment" must start with a capital letter`},
		"bad sensitive path": {config.App{Name: "web", AppSpec: config.AppSpec{Sensitive: []config.SensitiveRule{{Paths: []string{".data["}}}}},
			`app "web": sensitive[0].paths[0]`},
		"no sensitive paths": {config.App{Name: "web", AppSpec: config.AppSpec{Sensitive: []config.SensitiveRule{{Kinds: []string{"ConfigMap"}}}}},
			`app "web": sensitive[0].paths: paths is required`},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			_, err := Compile(tc.app)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Compile error = %v, want it to contain %q", err, tc.want)
			}
		})
	}
}

// TestCompile: defaults are filled in and kinds parsed once.
func TestCompile(t *testing.T) {
	budget := 40
	app := config.App{
		Name: "web", Namespace: "shop",
		AppSpec: config.AppSpec{
			ServiceAccountName: "deployer", PruneBudget: &budget, Adopted: config.AdoptedDelete,
			Split: []config.SplitRule{{Manager: "syncd-web-release", Kinds: []string{"apps/Deployment"}, Paths: []string{".spec.template.spec.containers[*].image"}}},
		},
	}
	spec, err := Compile(app)
	if err != nil {
		t.Fatal(err)
	}
	tenant := identity.Tenant{App: "web", Namespace: "shop", ServiceAccount: "deployer"}
	if diff := cmp.Diff(inventory.App{
		Name: "web", Tenant: tenant, Managers: []string{"syncd-web", "syncd-web-release"},
		Prune: true, PruneBudget: 40, DeleteAdopted: true, ConflictPolicy: policyDigest(app.Conflicts),
	}, spec.Inventory); diff != "" {
		t.Errorf("Inventory (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(tenant, spec.Tenant); diff != "" {
		t.Errorf("Tenant (-want +got):\n%s", diff)
	}
	pl := spec.Planner
	if pl.Name != "web" || pl.Namespace != "shop" || pl.Manager != planner.FieldManager("syncd-web") || len(pl.Splits) != 1 {
		t.Fatalf("Planner = %+v", pl)
	}
	if diff := cmp.Diff([]schema.GroupKind{{Group: "apps", Kind: "Deployment"}}, pl.Splits[0].Kinds); diff != "" {
		t.Errorf("split kinds (-want +got):\n%s", diff)
	}
	if got := pl.Splits[0].Paths[0].String(); got != ".spec.template.spec.containers[*].image" {
		t.Errorf("split path = %s", got)
	}
	if spec.Sensitive != nil {
		t.Errorf("Sensitive = %v, want nil (the built-in rules) for an app without rules", spec.Sensitive)
	}
}

// TestInventoryAppConflictPolicy: the inventory is told a digest of the
// app's conflicts section that any edit of the section changes (a yield
// recorded under another one is decided again) and nothing else does.
func TestInventoryAppConflictPolicy(t *testing.T) {
	rule := config.ConflictRule{Managers: []string{"operator"}, Paths: []string{".data.color"}, Action: config.ActionYield}
	base := config.App{Name: "web", AppSpec: config.AppSpec{Conflicts: config.ConflictPolicy{Default: config.ActionYield, Rules: []config.ConflictRule{rule}}}}
	digest := func(app config.App) string { return inventoryApp(app, TenantOf(app)).ConflictPolicy }
	want := digest(base)
	if want == "" {
		t.Fatal("empty digest")
	}
	same := base
	same.Prune = new(false)
	if got := digest(same); got != want {
		t.Errorf("digest changed with a field outside conflicts: %s, want %s", got, want)
	}
	edits := map[string]func(*config.ConflictPolicy){
		"default":       func(cp *config.ConflictPolicy) { cp.Default = config.ActionForce },
		"rule action":   func(cp *config.ConflictPolicy) { cp.Rules[0].Action = config.ActionForce },
		"rule managers": func(cp *config.ConflictPolicy) { cp.Rules[0].Managers = []string{"hpa"} },
		"rule paths":    func(cp *config.ConflictPolicy) { cp.Rules[0].Paths = []string{".data"} },
		"rule removed":  func(cp *config.ConflictPolicy) { cp.Rules = nil },
	}
	for name, edit := range edits {
		app := base
		app.Conflicts.Rules = []config.ConflictRule{rule}
		edit(&app.Conflicts)
		if got := digest(app); got == want {
			t.Errorf("%s edited: the digest did not change", name)
		}
	}
}
