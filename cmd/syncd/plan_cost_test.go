package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"

	"syncd.dev/syncd/internal/applier"
	"syncd.dev/syncd/internal/config"
	"syncd.dev/syncd/internal/inventory"
	"syncd.dev/syncd/internal/preview"
	"syncd.dev/syncd/internal/testenv"
)

// planRequestBudget is the bound for a pull request touching 10
// objects of an app, whatever the app's size.
const planRequestBudget = 50

// costObjects returns n manifests, 70 % ConfigMaps, 20 % Deployments and
// 10 % Services, interleaved; the objects in changed get a new value.
func costObjects(n int, changed map[int]bool) map[string]string {
	files := map[string]string{}
	for i := range n {
		name := fmt.Sprintf("obj-%04d", i)
		v := "1"
		if changed[i] {
			v = "2"
		}
		var y string
		switch i % 10 {
		case 7, 8:
			y = fmt.Sprintf(`apiVersion: apps/v1
kind: Deployment
metadata: {name: %s}
spec:
  replicas: 1
  selector: {matchLabels: {app: %s}}
  template:
    metadata: {labels: {app: %s}}
    spec:
      containers: [{name: app, image: "example.com/app:%s"}]
`, name, name, name, v)
		case 9:
			y = fmt.Sprintf("apiVersion: v1\nkind: Service\nmetadata: {name: %s}\nspec:\n  selector: {app: %s}\n  ports: [{port: 80, targetPort: 808%s}]\n", name, name, v)
		default:
			y = cmYAML(name, "  index: \""+fmt.Sprint(i)+"\"\n  version: \""+v+"\"\n")
		}
		files[name+".yaml"] = y
	}
	return files
}

// requestLog counts the requests of one client by method and path (object
// names folded), for the bound and for a readable failure.
type requestLog struct {
	mu     sync.Mutex
	total  int
	byKind map[string]int
}

var objectName = regexp.MustCompile(`/obj-\d+$`)

func (l *requestLog) wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripFunc(func(r *http.Request) (*http.Response, error) {
		l.mu.Lock()
		l.total++
		l.byKind[r.Method+" "+objectName.ReplaceAllString(r.URL.Path, "/<name>")]++
		l.mu.Unlock()
		return rt.RoundTrip(r)
	})
}

func (l *requestLog) String() string {
	var lines []string
	for k, n := range l.byKind {
		lines = append(lines, fmt.Sprintf("  %4d %s", n, k))
	}
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// countedPlan runs syncd plan's work for app web with clients built the
// way the command builds them (a fresh discovery mapper included), every
// request counted.
func countedPlan(t *testing.T, cfgPath, dir string) (*preview.Report, *requestLog) {
	t.Helper()
	log := &requestLog{byKind: map[string]int{}}
	rc := rest.CopyConfig(env.Config)
	rc.QPS, rc.Burst = -1, 0
	rc.WrapTransport = log.wrap
	cl := &cluster{
		config:    rc,
		dynamic:   dynamic.NewForConfigOrDie(rc),
		mapper:    restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(discovery.NewDiscoveryClientForConfigOrDie(rc))),
		namespace: "default",
	}
	cfg, err := config.Load(cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	f := &planFlags{config: cfgPath, app: "web", path: dir, output: "json", concurrency: applier.DefaultConcurrency, inventoryNS: invNamespace(t)}
	rep, _, err := planReport(context.Background(), cl, &planTarget{cfg: cfg, app: f.app, cleanup: func() {}}, f, nil)
	if err != nil {
		t.Fatalf("plan: %v", err)
	}
	return rep, log
}

func actions(rep *preview.Report) map[string]preview.Action {
	out := map[string]preview.Action{}
	for _, o := range rep.Objects {
		out[o.Object.String()] = o.Action
	}
	return out
}

// TestPlanCostProportionalToChange: a pull request touching 10 objects of
// an app syncd applied dry-runs those 10 (not an object another manager
// annotated since: syncd's own fields are as it left them) and sends at most planRequestBudget requests in total, the same
// number for an app of 100 objects as for one of 300. The objects it does
// not dry-run get the action a full dry run gives them.
func TestPlanCostProportionalToChange(t *testing.T) {
	changed := map[int]bool{}
	for _, i := range []int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9} {
		changed[i*10+i%10] = true // 7 ConfigMaps, 2 Deployments, 1 Service
	}
	const edited = 15 // a ConfigMap Git does not change, annotated by someone else
	requests := map[int]int{}
	for _, n := range []int{100, 300} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			ns := env.Namespace(t)
			cfg := planConfig(t, ns, "")
			applyApp(t, cfg, costObjects(n, nil))
			_, err := env.Clientset(t).CoreV1().ConfigMaps(ns).Patch(context.Background(), fmt.Sprintf("obj-%04d", edited), types.MergePatchType,
				[]byte(`{"metadata":{"annotations":{"team":"web"}}}`), metav1.PatchOptions{FieldManager: "kubectl-annotate"})
			if err != nil {
				t.Fatal(err)
			}
			before := resourceVersions(t, ns)
			dir := writeFiles(t, costObjects(n, changed))

			rep, log := countedPlan(t, cfg, dir)
			requests[n] = log.total
			t.Logf("%d objects, 10 changed: %d requests\n%s", n, log.total, log)
			want := preview.Summary{Update: len(changed), Unchanged: n - len(changed), NotDryRun: n - len(changed)}
			if diff := cmp.Diff(want, rep.Summary); diff != "" {
				t.Errorf("summary (-want +got):\n%s", diff)
			}
			if log.total > planRequestBudget {
				t.Errorf("%d requests for a change of %d objects, want at most %d:\n%s", log.total, len(changed), planRequestBudget, log)
			}
			if len(rep.Notes) != 0 {
				t.Errorf("notes %q, want none: the inventory is readable", rep.Notes)
			}
			for _, o := range rep.Objects {
				var i int
				fmt.Sscanf(o.Object.Name, "obj-%d", &i)
				switch {
				case changed[i] && (o.Action != preview.Update || o.NotDryRun || o.Diff == ""):
					t.Errorf("%s: changed in Git: action %q, notDryRun %v, diff %q; want a dry-run update with a diff", o.Object, o.Action, o.NotDryRun, o.Diff)
				case !changed[i] && (o.Action != preview.Unchanged || !o.NotDryRun || o.Diff != ""):
					t.Errorf("%s: as syncd applied it: action %q, notDryRun %v, diff %q; want unchanged without a dry run", o.Object, o.Action, o.NotDryRun, o.Diff)
				}
			}

			// The command line says the same and exits 2.
			code, cli, stderr := planJSON(t, cfg, dir)
			if code != exitChanges {
				t.Errorf("syncd plan: exit code %d, want %d\n%s", code, exitChanges, stderr)
			}
			if diff := cmp.Diff(rep.Summary, cli.Summary); diff != "" {
				t.Errorf("syncd plan -o json summary (-countedPlan +cli):\n%s", diff)
			}

			// Without an inventory every object is dry-run, with the
			// same outcome, and the report says why.
			if err := env.Clientset(t).CoreV1().Secrets(invNamespace(t)).Delete(context.Background(), inventory.ParentName("web"), metav1.DeleteOptions{}); err != nil {
				t.Fatal(err)
			}
			full, fullLog := countedPlan(t, cfg, dir)
			t.Logf("without an inventory: %d requests", fullLog.total)
			if diff := cmp.Diff(actions(rep), actions(full)); diff != "" {
				t.Errorf("actions with the inventory (-) and without, every object dry-run (+):\n%s", diff)
			}
			if full.Summary.NotDryRun != 0 || len(full.Notes) != 1 || !strings.Contains(full.Notes[0], "has no inventory") {
				t.Errorf("without an inventory: notDryRun %d, notes %q; want 0 and a note saying every object was dry-run", full.Summary.NotDryRun, full.Notes)
			}
			if fullLog.total < n {
				t.Errorf("a full dry run of %d objects sent %d requests: the baseline is not dry-running them", n, fullLog.total)
			}
			if diff := cmp.Diff(before, resourceVersions(t, ns)); diff != "" {
				t.Errorf("plan wrote to the cluster: resourceVersions (-before +after):\n%s", diff)
			}
		})
	}
	if len(requests) == 2 && requests[100] != requests[300] {
		t.Errorf("requests grow with the app's size: %d for 100 objects, %d for 300; want the same", requests[100], requests[300])
	}
}

// TestPlanInventoryAccess: syncd plan with a CI identity. Without read
// access to the app's inventory Secret it dry-runs every object and says
// why in the report; with get on that one Secret it skips the objects
// syncd applied. Both previews agree and exit 2.
func TestPlanInventoryAccess(t *testing.T) {
	tests := map[string]struct {
		readInventory bool
		wantNotDryRun int
		wantNote      string
	}{
		"inventory forbidden: every object dry-run": {wantNote: "every object was dry-run: inventory of app web (Secret %s/syncd-applyset-web): read:"},
		"inventory readable":                        {readInventory: true, wantNotDryRun: 19},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			ns := env.Namespace(t)
			cfg := planConfig(t, ns, "")
			applyApp(t, cfg, costObjects(20, nil))
			git := costObjects(20, map[int]bool{3: true})

			rc, err := env.ServiceAccountConfig(ctx, ns, "ci")
			if err != nil {
				t.Fatal(err)
			}
			// manifests/ci's rules for the app's kinds.
			if err := env.Grant(ctx, ns, "ci", ns, []rbacv1.PolicyRule{
				{APIGroups: []string{""}, Resources: []string{"configmaps", "services"}, Verbs: []string{"get", "list", "patch", "create"}},
				{APIGroups: []string{"apps"}, Resources: []string{"deployments"}, Verbs: []string{"get", "list", "patch", "create"}},
			}); err != nil {
				t.Fatal(err)
			}
			if tc.readInventory {
				if err := env.Grant(ctx, ns, "ci", invNamespace(t), []rbacv1.PolicyRule{
					{APIGroups: []string{""}, Resources: []string{"secrets"}, ResourceNames: []string{inventory.ParentName("web")}, Verbs: []string{"get"}},
				}); err != nil {
					t.Fatal(err)
				}
			}
			kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
			if err := testenv.WriteKubeconfig(rc, kubeconfig); err != nil {
				t.Fatal(err)
			}
			var out, errOut bytes.Buffer
			code := run(ctx, []string{"plan", "--config", cfg, "--app", "web", "--path", writeFiles(t, git), "-o", "json", "--inventory-namespace", invNamespace(t), "--kubeconfig", kubeconfig}, &out, &errOut)
			if code != exitChanges {
				t.Fatalf("exit code %d, want %d\n%s%s", code, exitChanges, out.String(), errOut.String())
			}
			rep := &preview.Report{}
			if err := json.Unmarshal(out.Bytes(), rep); err != nil {
				t.Fatal(err)
			}
			want := preview.Summary{Update: 1, Unchanged: 19, NotDryRun: tc.wantNotDryRun}
			if diff := cmp.Diff(want, rep.Summary); diff != "" {
				t.Errorf("summary (-want +got):\n%s", diff)
			}
			wantNote := tc.wantNote
			if wantNote != "" {
				wantNote = fmt.Sprintf(wantNote, invNamespace(t))
			}
			switch {
			case wantNote == "" && len(rep.Notes) > 0:
				t.Errorf("notes %q, want none", rep.Notes)
			case wantNote == "" && rep.Prune == nil:
				t.Errorf("no prune preview with a readable inventory")
			case wantNote != "" && (len(rep.Notes) != 2 || !strings.Contains(rep.Notes[0], wantNote) || !strings.Contains(rep.Notes[0], "forbidden") || !strings.Contains(rep.Notes[1], "prune is not previewed")):
				t.Errorf("notes %q, want one containing %q and forbidden, then one saying prune is not previewed", rep.Notes, wantNote)
			case wantNote != "" && rep.Prune != nil:
				t.Errorf("prune previewed without a readable inventory: %+v", rep.Prune)
			}
		})
	}
}
