package inventory

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"syncd.dev/syncd/internal/config"
)

// TestPruneSparesWhatAnotherAppDeclares: apps a and b declare the same
// ConfigMap with the same values (a's inventory label stays on it). When
// either app drops it from Git, its prune never deletes it: the other app
// still declares it. The app that dropped it lets go of its fields (its
// managedFields entry, managers annotation and, for a, the part-of
// label), so the other app owns it alone and takes it into its inventory
// on its next sync.
func TestPruneSparesWhatAnotherAppDeclares(t *testing.T) {
	for _, drops := range []string{"a", "b"} {
		t.Run(drops+" drops it", func(t *testing.T) {
			a := newFixture(t, config.App{Name: "a"}, Options{})
			b := newFixture(t, config.App{Name: "b"}, Options{})
			b.ns, b.app.Namespace = a.ns, a.ns
			own := func(f *fixture) []string {
				var docs []string
				for _, s := range []string{"1", "2", "3", "4", "5"} {
					docs = append(docs, f.cm(f.app.Name+"-only-"+s))
				}
				return docs
			}
			a.mustSync(a.plan(append(own(a), a.cm("shared"))...))
			b.mustSync(b.plan(append(own(b), b.cm("shared"))...))

			dropper, keeper := a, b
			if drops == "b" {
				dropper, keeper = b, a
			}
			rep := dropper.mustSync(dropper.plan(own(dropper)...))
			t.Logf("prune of app %s: %s", drops, rep)
			if len(rep.Deleted) != 0 {
				t.Errorf("app %s deleted %v, which app %s still declares", drops, names(rep.Deleted), keeper.app.Name)
			}
			cm, err := env.Clientset(t).CoreV1().ConfigMaps(a.ns).Get(context.Background(), "shared", metav1.GetOptions{})
			if err != nil {
				t.Fatalf("the shared ConfigMap is gone after app %s dropped it: %v", drops, err)
			}
			for _, e := range cm.ManagedFields {
				if e.Manager == "syncd-"+drops {
					t.Errorf("app %s still owns fields of the object it dropped: %s", drops, e.FieldsV1.Raw)
				}
			}
			if _, ok := cm.Annotations["managers.syncd.dev/"+drops]; ok {
				t.Errorf("app %s's managers annotation is still on the object it dropped", drops)
			}

			keeper.mustSync(keeper.plan(append(own(keeper), keeper.cm("shared"))...))
			cm, err = env.Clientset(t).CoreV1().ConfigMaps(a.ns).Get(context.Background(), "shared", metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			run, err := keeper.m.Begin(context.Background(), invApp(keeper.app), keeper.plan(keeper.cm("shared")), true)
			if err != nil {
				t.Fatal(err)
			}
			if got := cm.Labels[LabelPartOf]; got != run.ID() {
				t.Errorf("part-of label %q after app %s's sync, want its own %q", got, keeper.app.Name, run.ID())
			}
			if diff := cmp.Diff(map[string]string{"k": "shared"}, cm.Data); diff != "" {
				t.Errorf("data (-want +got):\n%s", diff)
			}
		})
	}
}
