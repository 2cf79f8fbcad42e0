package inventory

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"syncd.dev/syncd/internal/applier"
	"syncd.dev/syncd/internal/config"
	"syncd.dev/syncd/internal/planner"
)

// syncAs runs one reconcile of the fixture's objects as app.
func (f *fixture) syncAs(app App, plan *planner.Plan) error {
	f.t.Helper()
	ctx := context.Background()
	run, err := f.m.Begin(ctx, app, plan, false)
	if err != nil {
		return err
	}
	policy, err := applier.NewPolicy(applier.PolicySpec{})
	if err != nil {
		f.t.Fatal(err)
	}
	cs, err := f.applier.Apply(ctx, plan, run.Hooks(applier.ApplyOptions{Policy: policy, RecordManagers: true}))
	_, ferr := run.Finish(ctx, cs, err)
	return errors.Join(err, ferr)
}

// parent is the app's parent Secret: its owner annotation and its
// resourceVersion.
func (f *fixture) parent() (owner, rv string) {
	f.t.Helper()
	u, err := f.dyn.Resource(secrets).Namespace(f.m.Namespace()).Get(context.Background(), ParentName(f.app.Name), metav1.GetOptions{})
	if err != nil {
		f.t.Fatal(err)
	}
	return u.GetAnnotations()[AnnotationOwner], u.GetResourceVersion()
}

// TestOwnerRecorded: an app's inventory records its owner; another app
// of the same name (another owner) is refused by Begin, Unchanged and
// PreviewPrune naming both, and neither the parent nor the owner's
// objects change. An inventory written without an owner is taken by
// the first owner that writes it, and an emptied one by another owner.
func TestOwnerRecorded(t *testing.T) {
	f := newFixture(t, config.App{}, Options{})
	ctx := context.Background()
	legacy := invApp(f.app)
	if err := f.syncAs(legacy, f.plan(f.cm("a"))); err != nil {
		t.Fatal(err)
	}
	if owner, _ := f.parent(); owner != "" {
		t.Fatalf("an app without Owner recorded owner %q", owner)
	}

	victim, intruder := invApp(f.app), invApp(f.app)
	victim.Owner, intruder.Owner = "App team-b/web", "App team/b-web"
	if err := f.syncAs(victim, f.plan(f.cms("a", "b")...)); err != nil {
		t.Fatal(err)
	}
	owner, rv := f.parent()
	if owner != victim.Owner {
		t.Fatalf("owner after the victim's sync = %q, want %q (an inventory without one is taken)", owner, victim.Owner)
	}

	intruding := f.plan(f.cm("c"))
	_, beginErr := f.m.Begin(ctx, intruder, intruding, false)
	_, unchangedErr := f.m.Unchanged(ctx, intruder, intruding)
	_, previewErr := f.m.PreviewPrune(ctx, intruder, intruding, true, nil)
	for name, err := range map[string]error{"Begin": beginErr, "Unchanged": unchangedErr, "PreviewPrune": previewErr} {
		var oe *OwnerError
		if !errors.As(err, &oe) {
			t.Errorf("%s as the intruder: %v, want an OwnerError", name, err)
			continue
		}
		want := &OwnerError{App: f.app.Name, Parent: f.m.Namespace() + "/" + ParentName(f.app.Name), Owner: victim.Owner, Claimant: intruder.Owner}
		if diff := cmp.Diff(want, oe); diff != "" {
			t.Errorf("%s as the intruder (-want +got):\n%s", name, diff)
		}
		if msg := err.Error(); !strings.Contains(msg, "belongs to App team-b/web, and App team/b-web has the same app name") || !strings.Contains(msg, "rename App team/b-web") {
			t.Errorf("%s as the intruder: %q does not name both Apps and what to do", name, msg)
		}
	}
	if owner, after := f.parent(); owner != victim.Owner || after != rv {
		t.Errorf("parent after the intruder: owner %q, resourceVersion %s; want %q, %s (untouched)", owner, after, victim.Owner, rv)
	}
	if diff := cmp.Diff([]string{"a", "b"}, f.presentCMs()); diff != "" {
		t.Errorf("ConfigMaps after the intruder (-want +got):\n%s", diff)
	}

	emptied := victim
	emptied.AllowEmpty, emptied.PruneBudget = true, 100
	if err := f.syncAs(emptied, f.plan()); err != nil {
		t.Fatal(err)
	}
	if err := f.syncAs(intruder, intruding); err != nil {
		t.Fatalf("another owner's sync of an emptied inventory: %v", err)
	}
	if owner, _ := f.parent(); owner != intruder.Owner {
		t.Errorf("owner after taking the emptied inventory = %q, want %q", owner, intruder.Owner)
	}
}
