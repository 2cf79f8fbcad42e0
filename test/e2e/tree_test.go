package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"syncd.dev/syncd/internal/testenv/gitserver"
)

// TestJourneyTree: after `syncd run` applied an app, `syncd tree app
// NAME --config`
// shows the app's objects by stage and kind with their health, that
// syncd applied them, and every field manager: another writer (a person
// labelling the ConfigMap with kubectl) appears beside syncd's manager.
// -o json carries the same tree; `syncd events app NAME --config` lists
// the daemon's Synced Event; an unknown app or resource is a one-line
// error, exit 1.
func TestJourneyTree(t *testing.T) {
	w := newWorkspace(t)
	ensureNamespace(t, "tree-e2e")
	srv := gitserver.StartTest(t)
	repo := srv.NewTestRepo(t, "tree")
	first, err := repo.Commit("app", map[string][]byte{
		"app/ns.yaml": []byte("apiVersion: v1\nkind: Namespace\nmetadata: {name: tree-e2e}\n"),
		"app/cm.yaml": []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: settings, namespace: tree-e2e}\ndata: {a: b}\n"),
		"app/sa.yaml": []byte("apiVersion: v1\nkind: ServiceAccount\nmetadata: {name: runner, namespace: tree-e2e}\n"),
	})
	if err != nil {
		t.Fatal(err)
	}
	w.writeConfig(fmt.Sprintf(`apiVersion: syncd/v1alpha1
kind: Config
sources:
  - name: tree
    git: {url: %s, branch: main, interval: 2s}
apps:
  - name: tree
    source: tree
    path: app
    pruneBudget: 100
`, repo.URL))
	d := w.startDaemon()
	d.waitApplied("tree", func(rev string) bool { return rev != "" })
	patch := []byte(`{"metadata":{"labels":{"owner":"team-a"}}}`)
	if _, err := clientset(t).CoreV1().ConfigMaps("tree-e2e").Patch(context.Background(), "settings", types.MergePatchType, patch, metav1.PatchOptions{FieldManager: "kubectl-label"}); err != nil {
		t.Fatal(err)
	}

	r := w.must(0, "tree", "app", "tree", "--config", w.config)
	for _, line := range []string{
		"app tree (" + w.config + ")  revision ",
		"├─ stage namespaces",
		"│  └─ Namespace",
		"│     └─ tree-e2e",
		"└─ stage namespaced",
		"   ├─ ConfigMap",
		"   │  └─ tree-e2e/settings",
		"   └─ ServiceAccount",
		"      └─ tree-e2e/runner",
	} {
		if !strings.Contains(r.stdout, line) {
			t.Errorf("tree lacks %q:\n%s", line, r.stdout)
		}
	}
	settings := lineWith(r.stdout, "tree-e2e/settings")
	for _, want := range []string{"Current", "applied", "syncd-tree", "kubectl-label (Update)"} {
		if !strings.Contains(settings, want) {
			t.Errorf("the ConfigMap's line lacks %q: %q", want, settings)
		}
	}

	t.Logf("syncd tree:\n%s", r.stdout)
	r = w.must(0, "tree", "app", "tree", "--config", w.config, "-o", "json")
	var tree struct {
		App    string
		Stages []struct {
			Name  string
			Kinds []struct {
				Kind    string
				Objects []struct{ Name, Health, Outcome string }
			}
		}
	}
	if err := json.Unmarshal([]byte(r.stdout), &tree); err != nil {
		t.Fatalf("tree -o json: %v\n%s", err, r.stdout)
	}
	if tree.App != "tree" || len(tree.Stages) != 2 || tree.Stages[1].Kinds[0].Objects[0].Outcome != "applied" {
		t.Errorf("tree -o json: %+v", tree)
	}

	r = w.must(0, "events", "app", "tree", "--config", w.config)
	checkTableHeader(t, r, "LAST SEEN TYPE REASON COUNT MESSAGE")
	if l := lineWith(r.stdout, "Synced"); !strings.Contains(l, "Normal") || !strings.Contains(l, "applied: 2 created, 1 configured") {
		t.Errorf("events: no Normal Synced line with the counts:\n%s", r)
	}

	// A second revision changes the ConfigMap and drops the
	// ServiceAccount: history has both applies, oldest first.
	second, err := repo.Commit("drop the runner", map[string][]byte{
		"app/cm.yaml": []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: settings, namespace: tree-e2e}\ndata: {a: c}\n"),
		"app/sa.yaml": nil,
	})
	if err != nil {
		t.Fatal(err)
	}
	d.waitApplied("tree", func(rev string) bool { return rev == second })
	r = w.must(0, "history", "app", "tree", "--config", w.config)
	checkTableHeader(t, r, "TIME AGE REVISION RESULT CREATED CONFIGURED PRUNED NOTE")
	rows := strings.Split(strings.TrimSpace(r.stdout), "\n")[1:]
	var got []string
	for _, row := range rows {
		f := strings.Fields(row)
		got = append(got, strings.Join(f[2:7], " "))
	}
	want := []string{first[:12] + " applied 2 1 0", second[:12] + " applied 0 1 1"}
	if !cmp.Equal(got, want) {
		t.Errorf("history rows (revision result created configured pruned) %q, want %q\n%s", got, want, r)
	}

	r = w.must(0, "history", "app", "tree", "--config", w.config, "-o", "json")
	var history []struct{ Revision, Result string }
	if err := json.Unmarshal([]byte(r.stdout), &history); err != nil {
		t.Fatalf("history -o json: %v\n%s", err, r.stdout)
	}
	if len(history) != 2 || history[1].Revision != second || history[1].Result != "applied" {
		t.Errorf("history -o json: %+v, want two applies, the last of %s", history, second)
	}
	r = w.must(0, "events", "app", "tree", "--config", w.config, "-o", "json")
	var events struct {
		Kind  string
		Items []struct{ Reason, Type string }
	}
	if err := json.Unmarshal([]byte(r.stdout), &events); err != nil {
		t.Fatalf("events -o json: %v\n%s", err, r.stdout)
	}
	if events.Kind != "List" || !slices.ContainsFunc(events.Items, func(e struct{ Reason, Type string }) bool { return e.Reason == "Synced" && e.Type == "Normal" }) {
		t.Errorf("events -o json: %+v, want a List with the Normal Synced Event", events)
	}

	r = w.must(1, "tree", "app", "nope", "--config", w.config)
	if want := `no app "nope"; its apps are tree`; !strings.Contains(r.stderr, want) {
		t.Errorf("unknown app: stderr %q, want %q", r.stderr, want)
	}
	r = w.must(1, "tree", "kustomization", "x")
	if want := "unknown resource \"kustomization\": use app (apps)"; !strings.Contains(r.stderr, want) {
		t.Errorf("unknown resource: stderr %q, want %q", r.stderr, want)
	}
}

// lineWith returns the first line of s that contains sub.
func lineWith(s, sub string) string {
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			return l
		}
	}
	return ""
}
