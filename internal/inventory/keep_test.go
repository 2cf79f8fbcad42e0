package inventory

import (
	"context"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"syncd.dev/syncd/internal/applier"
	"syncd.dev/syncd/internal/config"
	"syncd.dev/syncd/internal/directive"
	"syncd.dev/syncd/internal/planner"
)

// TestPruneDisabled: an object whose live copy says prune: disabled (or
// reconcile: disabled), in syncd's or Flux's spelling, is not deleted
// when it leaves Git: it is reported as kept, dropped from the inventory,
// and left exactly as it was (label, managers annotation, managedFields),
// as Flux leaves it; a later run does not touch it again. A dry run says
// the same and changes nothing.
func TestPruneDisabled(t *testing.T) {
	tests := map[string]struct {
		key    string
		inGit  bool // declared in Git (else annotated in the cluster)
		labels bool
	}{
		"syncd prune in Git":         {key: directive.SyncdPrune, inGit: true},
		"flux prune in Git":          {key: directive.FluxPrune, inGit: true},
		"flux prune as a label":      {key: directive.FluxPrune, inGit: true, labels: true},
		"syncd prune in cluster":     {key: directive.SyncdPrune},
		"flux reconcile in cluster":  {key: directive.FluxReconcile},
		"syncd reconcile in cluster": {key: directive.SyncdReconcile},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			f := newFixture(t, config.App{}, Options{})
			ctx := context.Background()
			meta := "annotations"
			if tc.labels {
				meta = "labels"
			}
			keep := f.cm("keep")
			if tc.inGit {
				keep = fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: keep, %s: {%q: disabled}}\ndata: {k: keep}\n", meta, tc.key)
			}
			f.mustSync(f.plan(f.cm("a"), keep))
			if !tc.inGit {
				patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:"disabled"}}}`, tc.key)
				if _, err := f.dyn.Resource(configMaps).Namespace(f.ns).Patch(ctx, "keep", types.MergePatchType, []byte(patch), metav1.PatchOptions{FieldManager: "kubectl"}); err != nil {
					t.Fatal(err)
				}
			}
			before, err := f.dyn.Resource(configMaps).Namespace(f.ns).Get(ctx, "keep", metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}

			dry := f.dryRunFinish(f.plan(f.cm("a")))
			if diff := cmp.Diff([]string{"keep"}, keptNames(dry)); diff != "" {
				t.Errorf("dry run kept (-want +got):\n%s", diff)
			}

			rep := f.mustSync(f.plan(f.cm("a")))
			if diff := cmp.Diff(outcome{Present: []string{"a", "keep"}, Members: []string{"a"}}, outcomeOf(f, rep)); diff != "" {
				t.Errorf("outcome (-want +got):\n%s", diff)
			}
			if len(rep.Kept) != 1 || rep.Kept[0].Object.Name != "keep" || rep.Kept[0].Directive.Key != tc.key {
				t.Errorf("kept = %v, want keep by %s", rep.Kept, tc.key)
			}
			t.Logf("%s; %s", rep, rep.Kept[0])
			after, err := f.dyn.Resource(configMaps).Namespace(f.ns).Get(ctx, "keep", metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if after.GetResourceVersion() != before.GetResourceVersion() {
				t.Errorf("prune wrote the kept object: resourceVersion %s → %s", before.GetResourceVersion(), after.GetResourceVersion())
			}
			if after.GetLabels()[LabelPartOf] == "" {
				t.Errorf("part-of label removed from the kept object: %v", after.GetLabels())
			}

			rep = f.mustSync(f.plan(f.cm("a")))
			if len(rep.Deleted)+len(rep.Orphaned)+len(rep.Kept)+len(rep.Spared) != 0 {
				t.Errorf("second run touched the kept object: %s", rep)
			}
		})
	}
}

// dryRunFinish runs one reconcile as a dry run (Begin, a dry-run apply,
// Finish) and returns its prune report.
func (f *fixture) dryRunFinish(plan *planner.Plan) *Report {
	f.t.Helper()
	ctx := context.Background()
	run, err := f.m.Begin(ctx, invApp(f.app), plan, true)
	if err != nil {
		f.t.Fatal(err)
	}
	dry, err := applier.New(f.dyn, f.mapper, applier.Options{DryRun: true})
	if err != nil {
		f.t.Fatal(err)
	}
	cs, err := dry.Apply(ctx, plan, run.Hooks(applier.ApplyOptions{RecordManagers: true}))
	rep, ferr := run.Finish(ctx, cs, err)
	if err != nil || ferr != nil {
		f.t.Fatalf("dry run: %v, %v", err, ferr)
	}
	return rep
}

func keptNames(rep *Report) []string {
	var out []string
	for _, k := range rep.Kept {
		out = append(out, k.Object.Name)
	}
	return out
}
