package applier

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"syncd.dev/syncd/internal/config"
	"syncd.dev/syncd/internal/ignore"
	"syncd.dev/syncd/internal/paths"
)

// TestIgnoreKeepsLiveValues: with an ignore rule on .data.color and
// .data.gone, an apply to an existing object keeps what another manager
// wrote there (an Update, as kubectl edit does), with no conflict under
// the fail policy, and does not put back a field another writer removed;
// the other fields are applied as Git says. A new object gets Git's
// values. Against the API server.
func TestIgnoreKeepsLiveValues(t *testing.T) {
	c := newCluster(t, env.Config)
	ns := env.Namespace(t)
	app := config.App{Name: "web", Namespace: ns}
	rules, err := ignore.New([]ignore.Rule{{Paths: []paths.Pattern{paths.MustParse(".data.color"), paths.MustParse(".data.gone")}}})
	if err != nil {
		t.Fatal(err)
	}
	ao := ApplyOptions{Ignore: rules}
	doc := func(size string) string {
		return "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cm, namespace: " + ns + "}\ndata: {color: blue, gone: here, size: " + size + "}\n"
	}
	wantChanges(t, c.apply(t, c.plan(t, app, doc("s")), ao), "ConfigMap cm syncd-web created")
	if got := c.get(t, configMaps, ns, "cm").Object["data"]; !cmp.Equal(got, map[string]any{"color": "blue", "gone": "here", "size": "s"}) {
		t.Fatalf("created with %v, want Git's values", got)
	}
	patch := `{"data":{"color":"green","gone":null}}`
	if _, err := c.resource(t, configMaps, ns).Patch(context.Background(), "cm", types.MergePatchType, []byte(patch), metav1.PatchOptions{FieldManager: "kubectl-edit"}); err != nil {
		t.Fatal(err)
	}
	cs := c.apply(t, c.plan(t, app, doc("m")), ao)
	wantChanges(t, cs, "ConfigMap cm syncd-web configured")
	if diff := cmp.Diff(map[string]any{"color": "green", "size": "m"}, c.get(t, configMaps, ns, "cm").Object["data"]); diff != "" {
		t.Errorf("data after the apply (-want +got):\n%s", diff)
	}
	// Without the rule the same apply is a conflict on .data.color.
	cs = c.apply(t, c.plan(t, app, doc("m")), ApplyOptions{})
	wantChanges(t, cs, "ConfigMap cm syncd-web conflict")
}
