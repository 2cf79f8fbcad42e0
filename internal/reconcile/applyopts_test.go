package reconcile_test

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	"syncd.dev/syncd/internal/applier"
	"syncd.dev/syncd/internal/config"
	"syncd.dev/syncd/internal/planner"
	"syncd.dev/syncd/internal/reconcile"
)

// TestApplyOptionsFromConfig: the app keys of syncd.yaml that steer the
// applier (handoff, recreate, wait, timeout, conflicts) reach
// reconcile.ApplyOptions as written, and their absence gives the
// applier's safe defaults. No cluster is involved.
func TestApplyOptionsFromConfig(t *testing.T) {
	type got struct {
		ReleaseHandoff, Recreate, Wait, RecordManagers bool
		Timeout                                        time.Duration
		Decides                                        applier.ConflictAction
	}
	tests := map[string]struct {
		keys string
		want got
	}{
		"defaults": {
			want: got{RecordManagers: true, Decides: applier.ConflictFail},
		},
		"handoff release, recreate, wait with timeout, force": {
			keys: "  handoff: release\n  recreate: true\n  wait: true\n  timeout: 90s\n  conflicts:\n    default: force\n",
			want: got{ReleaseHandoff: true, Recreate: true, Wait: true, Timeout: 90 * time.Second, RecordManagers: true, Decides: applier.ConflictForce},
		},
		"handoff hold, wait without timeout": {
			keys: "  handoff: hold\n  wait: true\n",
			want: got{Wait: true, RecordManagers: true, Decides: applier.ConflictFail},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			yaml := "apiVersion: syncd/v1alpha1\nkind: Config\nsources:\n- name: repo\n  git:\n    url: https://example.com/repo.git\n    branch: main\n    interval: 5m\napps:\n- name: web\n  source: repo\n  namespace: web\n" + tc.keys
			cfg, err := config.Parse([]byte(yaml), "syncd.yaml")
			if err != nil {
				t.Fatalf("parse:\n%s\n%v", yaml, err)
			}
			ao, err := reconcile.ApplyOptions(cfg.Apps[0])
			if err != nil {
				t.Fatal(err)
			}
			conflict := applier.Conflict{Manager: "someone", Path: ".data.k"}
			g := got{
				ReleaseHandoff: ao.ReleaseHandoff, Recreate: ao.Recreate, Wait: ao.Wait, RecordManagers: ao.RecordManagers,
				Timeout: ao.Timeout,
				Decides: ao.Policy.Decide(planner.ObjectRef{Version: "v1", Kind: "ConfigMap", Namespace: "web", Name: "cm"}, conflict, fieldpath.MakePathOrDie("data", "k")),
			}
			if diff := cmp.Diff(tc.want, g); diff != "" {
				t.Errorf("ApplyOptions from\n%s(-want +got):\n%s", tc.keys, diff)
			}
		})
	}
}

// TestApplyOptionsErrors: a conflicts or migrate section config.Parse
// would refuse, handed over without it, fails with the syncd.yaml field
// named.
func TestApplyOptionsErrors(t *testing.T) {
	tests := map[string]struct {
		app  config.App
		want []string // substrings of the error
	}{
		"bad default": {
			app:  config.App{Name: "web", AppSpec: config.AppSpec{Conflicts: config.ConflictPolicy{Default: "overwrite"}}},
			want: []string{"app web", "conflicts.default", `"overwrite"`, "fail, force or yield"},
		},
		"bad rule action": {
			app:  config.App{Name: "web", AppSpec: config.AppSpec{Conflicts: config.ConflictPolicy{Rules: []config.ConflictRule{{Action: config.ActionForce}, {Action: "take"}}}}},
			want: []string{"conflicts.rules[1].action", `"take"`},
		},
		"bad path": {
			app:  config.App{Name: "web", AppSpec: config.AppSpec{Conflicts: config.ConflictPolicy{Rules: []config.ConflictRule{{Paths: []string{"spec.replicas["}, Action: config.ActionForce}}}}},
			want: []string{"conflicts.rules[0].paths[0]", "spec.replicas"},
		},
		"bad manager glob": {
			app:  config.App{Name: "web", AppSpec: config.AppSpec{Conflicts: config.ConflictPolicy{Rules: []config.ConflictRule{{Managers: []string{"release-["}, Action: config.ActionForce}}}}},
			want: []string{"conflicts.rules[0]", `"release-["`},
		},
		"bad migrate mode": {
			app:  config.App{Name: "web", AppSpec: config.AppSpec{Migrate: &config.Migrate{From: []string{"x"}, Mode: "wholesale"}}},
			want: []string{"migrate.mode", `"wholesale"`},
		},
		"bad migrate glob": {
			app:  config.App{Name: "web", AppSpec: config.AppSpec{Migrate: &config.Migrate{From: []string{"kustomize-["}}}},
			want: []string{"migrate.from[0]", `"kustomize-["`},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			_, err := reconcile.ApplyOptions(tc.app)
			if err == nil {
				t.Fatal("ApplyOptions: no error")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
		})
	}
}
