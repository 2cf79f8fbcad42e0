package inventory

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/util/wait"

	"syncd.dev/syncd/internal/config"
	"syncd.dev/syncd/internal/planner"
)

func TestEncodeDecode(t *testing.T) {
	inv := &Inventory{App: "web", ID: AppID("web", "syncd"), Members: []*Member{
		{Version: "v1", Kind: "ConfigMap", Namespace: "a", Name: "x", Stage: planner.StageNamespaced,
			Slices: []SliceHash{{Manager: "syncd-web", Hash: "abc"}}, ResourceVersion: "42"},
		{Group: "apiextensions.k8s.io", Version: "v1", Kind: "CustomResourceDefinition", Name: "w.example.com", Adopted: true, Blocked: "protected"},
	}}
	blob, err := inv.Encode()
	if err != nil {
		t.Fatal(err)
	}
	got, err := Decode("test", blob)
	if err != nil {
		t.Fatal(err)
	}
	inv.Version = FormatVersion
	if diff := cmp.Diff(inv, got); diff != "" {
		t.Errorf("round trip (-want +got):\n%s", diff)
	}
	again, _ := inv.Encode()
	if !bytes.Equal(blob, again) {
		t.Errorf("encoding is not deterministic")
	}
	if diff := cmp.Diff("ConfigMap,CustomResourceDefinition.apiextensions.k8s.io", inv.GroupKinds()); diff != "" {
		t.Errorf("group kinds (-want +got):\n%s", diff)
	}
}

// TestEncodeAsBefore: Encode writes member by member the very bytes that
// encoding the whole inventory at once wrote (json.Encoder, one gzip
// write), so an inventory written by an earlier syncd compares equal and
// a no-op rewrites nothing.
func TestEncodeAsBefore(t *testing.T) {
	many := make([]*Member, 3000)
	for i := range many {
		many[i] = &Member{Version: "v1", Kind: "ConfigMap", Namespace: "ns", Name: fmt.Sprintf("cm-%04d", i), Stage: planner.StageNamespaced,
			Slices: []SliceHash{{Manager: "syncd-web", Hash: fmt.Sprintf("%064x", i), Owned: fmt.Sprintf("%032x", i)}}, ResourceVersion: fmt.Sprint(1000 + i)}
	}
	tests := map[string]*Inventory{
		"no members":    {App: "web", ID: "applyset-x-v1"},
		"empty members": {App: "web", ID: "applyset-x-v1", Members: []*Member{}},
		"characters JSON escapes": {App: "<web>&\"", ID: "id\u2028", Members: []*Member{
			{Group: "example.com", Version: "v1", Kind: "Thing", Name: "a<b>&c\u2029é", Stage: planner.StageCRDs, Adopted: true, Blocked: "\"guarded\"\n"},
		}},
		"3,000 members (more than one gzip block)": {App: "web", ID: "applyset-x-v1", Revision: "abc", Owner: "o", Members: many},
	}
	for name, inv := range tests {
		t.Run(name, func(t *testing.T) {
			c := *inv
			c.Version = FormatVersion
			var before bytes.Buffer
			zw, err := gzip.NewWriterLevel(&before, gzip.BestSpeed)
			if err != nil {
				t.Fatal(err)
			}
			if err := json.NewEncoder(zw).Encode(&c); err != nil {
				t.Fatal(err)
			}
			if err := zw.Close(); err != nil {
				t.Fatal(err)
			}
			got, err := inv.Encode()
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(before.Bytes(), got) {
				wantJSON, _ := inflate("want", before.Bytes())
				gotJSON, _ := inflate("got", got)
				t.Errorf("Encode differs from the inventory encoded at once (-want +got):\n%s", cmp.Diff(string(wantJSON), string(gotJSON)))
			}
		})
	}
}

func TestDecodeErrors(t *testing.T) {
	good := func(mut func(*Inventory)) []byte {
		inv := &Inventory{App: "web", Members: []*Member{{Version: "v1", Kind: "ConfigMap", Name: "x"}}}
		mut(inv)
		b, err := inv.Encode()
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	tests := map[string]struct {
		data []byte
		want string
	}{
		"not gzip":       {[]byte("{}"), "is not gzip"},
		"member no kind": {good(func(i *Inventory) { i.Members[0].Kind = "" }), "members[0] lacks version, kind or name"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			_, err := Decode("Secret s/p", tc.data)
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.HasPrefix(err.Error(), "Secret s/p") {
				t.Errorf("error %v, want it to start with the parent and contain %q", err, tc.want)
			}
		})
	}
}

// kubectl runs the control plane's kubectl.
func kubectl(t *testing.T, args ...string) (string, error) {
	t.Helper()
	cmd := exec.Command(filepath.Join(env.BinDir, "kubectl"), append([]string{"--kubeconfig", env.Kubeconfig}, args...)...)
	cmd.Env = append(os.Environ(), "KUBECTL_APPLYSET=true")
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// TestKubectlSeesTheApplySet checks the ApplySet against kubectl: its ID
// computation, its label selector listing exactly the inventory, and its
// reading of the parent.
func TestKubectlSeesTheApplySet(t *testing.T) {
	f := newFixture(t, config.App{AppSpec: config.AppSpec{PruneBudget: ptr(100)}}, Options{})
	dep := "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\nspec: {selector: {matchLabels: {app: web}}, template: {metadata: {labels: {app: web}}, spec: {containers: [{name: app, image: nginx}]}}}\n"
	f.mustSync(f.plan(append(f.cms("a", "b", "gone"), dep)...))
	f.mustSync(f.plan(append(f.cms("a", "b"), dep)...))
	id := f.m.ID(f.app.Name)

	// kubectl computes the same ID for a Secret parent.
	other := "kubectl-parent"
	cmPath := filepath.Join(t.TempDir(), "cm.yaml")
	if err := os.WriteFile(cmPath, []byte(f.cm("probe")), 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := kubectl(t, "apply", "--server-side", "--prune", "--applyset=secret/"+other, "-n", f.ns, "--dry-run=server", "-f", cmPath, "-o", "jsonpath={.metadata.labels.applyset\\.kubernetes\\.io/part-of}")
	if err != nil {
		t.Fatalf("kubectl apply --applyset: %v\n%s", err, out)
	}
	if want := ID(other, f.ns, "Secret", ""); strings.TrimSpace(out) != want {
		t.Errorf("kubectl's ID for secret/%s: %q, ours %q", other, out, want)
	}

	// The member label selector lists exactly the inventory.
	out, err = kubectl(t, "get", "configmaps,deployments.apps", "-A", "-l", LabelPartOf+"="+id, "-o", "jsonpath={range .items[*]}{.metadata.name}{\"\\n\"}{end}")
	if err != nil {
		t.Fatalf("kubectl get: %v\n%s", err, out)
	}
	listed := strings.Fields(out)
	sort.Strings(listed)
	if diff := cmp.Diff(f.members(), listed); diff != "" {
		t.Errorf("kubectl -l %s=%s vs inventory (-inventory +kubectl):\n%s", LabelPartOf, id, diff)
	}

	// The parent is found by its ID label and carries what kubectl needs.
	out, err = kubectl(t, "get", "secrets", "-n", f.m.Namespace(), "-l", LabelID+"="+id, "-o", "jsonpath={.items[*].metadata.name} {.items[*].metadata.annotations.applyset\\.kubernetes\\.io/contains-group-kinds}")
	if err != nil {
		t.Fatalf("kubectl get parent: %v\n%s", err, out)
	}
	if want := ParentName(f.app.Name) + " ConfigMap,Deployment.apps"; strings.TrimSpace(out) != want {
		t.Errorf("parent by ID label: %q, want %q", out, want)
	}

	// kubectl reads our parent and refuses to take it over: tooling
	// differs. (It reads the tooling annotation first.)
	out, err = kubectl(t, "apply", "--server-side", "--prune", "--applyset=secret/"+ParentName(f.app.Name), "-n", f.m.Namespace(), "--dry-run=server", "-f", cmPath)
	if err == nil || !strings.Contains(out, `managed by tooling "syncd"`) {
		t.Errorf("kubectl apply --applyset on syncd's parent: err %v, output %q; want a refusal naming tooling syncd", err, out)
	}
}

// TestInterruptedPrune cancels a prune part-way and checks that the next
// run converges and deletes nothing else.
func TestInterruptedPrune(t *testing.T) {
	f := newFixture(t, config.App{AppSpec: config.AppSpec{PruneBudget: ptr(100)}}, Options{Concurrency: 2})
	var all, keep []string
	for i := range 40 {
		n := fmt.Sprintf("cm-%02d", i)
		all = append(all, n)
		if i < 10 {
			keep = append(keep, n)
		}
	}
	f.mustSync(f.plan(f.cms(all...)...))

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var deletes atomic.Int64
	f.count.onRequest = func(r *http.Request) {
		if r.Method == http.MethodDelete && deletes.Add(1) == 5 {
			cancel()
		}
	}
	_, _, err := f.sync(ctx, f.plan(f.cms(keep...)...))
	f.count.onRequest = nil
	if err == nil {
		t.Fatalf("interrupted sync returned no error")
	}
	mid := f.presentCMs()
	if len(mid) <= len(keep) || len(mid) >= len(all) {
		t.Fatalf("after the interruption %d ConfigMaps remain; want between %d and %d (a prune cut short)", len(mid), len(keep), len(all))
	}
	// The inventory still lists every object not yet deleted.
	members := f.members()
	for _, n := range mid {
		if _, ok := slices.BinarySearch(members, n); !ok {
			t.Errorf("%s exists but is not in the inventory after the interruption", n)
		}
	}

	rep := f.mustSync(f.plan(f.cms(keep...)...))
	if diff := cmp.Diff(keep, f.presentCMs()); diff != "" {
		t.Errorf("ConfigMaps after re-run (-want +got):\n%s\nreport: %s", diff, rep)
	}
	if diff := cmp.Diff(keep, f.members()); diff != "" {
		t.Errorf("inventory after re-run (-want +got):\n%s", diff)
	}
	if len(rep.Spared) != 0 {
		t.Errorf("re-run spared %v", rep.Spared)
	}
}

// TestNoOpCostsNothing checks the request count of a reconcile in which
// nothing changed: no write, no dry-run, at most a handful of reads.
func TestNoOpCostsNothing(t *testing.T) {
	f := newFixture(t, config.App{}, Options{})
	var docs []string
	for i := range 300 {
		docs = append(docs, f.cm(fmt.Sprintf("cm-%03d", i)))
	}
	for i := range 30 {
		docs = append(docs, fmt.Sprintf("apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: d-%02d}\nspec: {selector: {matchLabels: {app: d%d}}, template: {metadata: {labels: {app: d%d}}, spec: {containers: [{name: app, image: nginx}]}}}\n", i, i, i))
	}
	plan := f.plan(docs...)
	f.mustSync(plan)

	// The Deployment controller writes status after syncd's apply (a few
	// times, as it creates ReplicaSets and sets conditions), and a status
	// write moves the resourceVersion: re-sync until the watch cache holds
	// exactly what the inventory recorded.
	f.converge(t, plan)

	f.count.reset()
	f.count.on.Store(true)
	cs, rep, err := f.sync(context.Background(), plan)
	f.count.on.Store(false)
	if err != nil || !cs.OK() {
		t.Fatalf("no-op sync: %v", err)
	}
	if n := cs.Count("unchanged"); n != len(plan.Objects) {
		t.Errorf("%d of %d objects unchanged", n, len(plan.Objects))
	}
	if rep.InventoryWritten {
		t.Errorf("the no-op run rewrote the inventory")
	}
	total, writes, dry := f.count.total.Load(), f.count.writes.Load(), f.count.dryRuns.Load()
	t.Logf("no-op reconcile of %d objects: %d requests (%d writes, %d dry-runs): %v", len(plan.Objects), total, writes, dry, f.count.lines)
	if writes != 0 || dry != 0 || total > 20 {
		t.Errorf("no-op reconcile of %d objects sent %d requests (%d writes, %d dry-runs); want 0 writes, 0 dry-runs, at most 20 requests:\n%s",
			len(plan.Objects), total, writes, dry, strings.Join(f.count.lines, "\n"))
	}

	// A change to one object costs one apply.
	docs[0] = strings.Replace(docs[0], "k: cm-000", "k: changed", 1)
	plan = f.plan(docs...)
	f.count.reset()
	f.count.on.Store(true)
	cs, _, err = f.sync(context.Background(), plan)
	f.count.on.Store(false)
	if err != nil || !cs.OK() {
		t.Fatalf("one-change sync: %v", err)
	}
	if n := cs.Count("configured"); n != 1 {
		t.Errorf("%d objects configured, want 1", n)
	}
	// One apply of the object and one write of the inventory, after one
	// dry run of the object (the stage's validation: only objects that
	// will be written are dry-run).
	writes, dry = f.count.writes.Load(), f.count.dryRuns.Load()
	if writes-dry != 2 || dry != 1 {
		t.Errorf("one-change reconcile sent %d writes of which %d dry runs, want 2 writes and 1 dry run:\n%s", writes, dry, strings.Join(f.count.lines, "\n"))
	}
}

// waitCache waits until the watch cache holds, for every member, the
// resourceVersion the inventory recorded.
// converge syncs until the watch cache agrees with the inventory (status
// writes by controllers settle), or fails after a bounded number of tries.
func (f *fixture) converge(t *testing.T, plan *planner.Plan) {
	t.Helper()
	var err error
	for range 20 {
		f.mustSync(plan)
		if err = f.cacheMatches(plan, 5*time.Second); err == nil {
			return
		}
	}
	t.Fatalf("watch cache never caught up with the inventory: %v", err)
}

// waitCached waits until the watch cache holds ConfigMap name at
// resourceVersion rv.
func (f *fixture) waitCached(t *testing.T, name, rv string) {
	t.Helper()
	inv, err := f.m.Load(context.Background(), f.app.Name)
	if err != nil {
		t.Fatal(err)
	}
	run := &Run{m: f.m, id: inv.ID, md: f.m.md}
	ref := planner.ObjectRef{Version: "v1", Kind: "ConfigMap", Namespace: f.ns, Name: name}
	err = wait.PollUntilContextTimeout(context.Background(), 20*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		wk, _, err := run.resource(ref)
		if err != nil {
			return false, err
		}
		pom, ok := f.m.tracker.get(wk, name)
		return ok && pom.ResourceVersion == rv, nil
	})
	if err != nil {
		t.Fatalf("watch cache never saw ConfigMap %s at resourceVersion %s: %v", name, rv, err)
	}
}

func (f *fixture) waitCache(t *testing.T, plan *planner.Plan) {
	t.Helper()
	if err := f.cacheMatches(plan, time.Minute); err != nil {
		t.Fatalf("watch cache never caught up with the inventory: %v", err)
	}
}

// cacheMatches waits up to timeout until every inventory member is in the
// watch cache at the resourceVersion the inventory recorded.
func (f *fixture) cacheMatches(plan *planner.Plan, timeout time.Duration) error {
	return wait.PollUntilContextTimeout(context.Background(), 50*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		inv, err := f.m.Load(ctx, f.app.Name)
		if err != nil {
			return false, err
		}
		run := &Run{m: f.m, id: inv.ID, md: f.m.md}
		for _, mem := range inv.Members {
			wk, _, err := run.resource(mem.Ref())
			if err != nil {
				return false, err
			}
			pom, ok := f.m.tracker.get(wk, mem.Name)
			if !ok || pom.ResourceVersion != mem.ResourceVersion {
				return false, nil
			}
		}
		return true, nil
	})
}

// TestSameMemberCoversEveryField: a member that differs from another in
// any one field is not the same (the no-op's check that the inventory is
// already recorded, loaded.records, compares members with sameMember
// instead of encoding them); no slices and empty slices are alike, as in
// the encoding.
func TestSameMemberCoversEveryField(t *testing.T) {
	base := Member{Group: "g", Version: "v1", Kind: "K", Namespace: "ns", Name: "n", Stage: planner.StageNamespaced,
		Slices: []SliceHash{{Manager: "m", Hash: "h", Owned: "o"}}, ResourceVersion: "1"}
	typ := reflect.TypeOf(base)
	for i := range typ.NumField() {
		other := base
		other.Slices = slices.Clone(base.Slices)
		f := reflect.ValueOf(&other).Elem().Field(i)
		switch f.Kind() {
		case reflect.String:
			f.SetString(f.String() + "-changed")
		case reflect.Bool:
			f.SetBool(!f.Bool())
		case reflect.Int:
			f.SetInt(f.Int() + 1)
		case reflect.Slice:
			f.Set(reflect.Append(f, f.Index(0)))
		default:
			t.Fatalf("field %s: kind %s; teach this test (and sameMember) about it", typ.Field(i).Name, f.Kind())
		}
		if sameMember(&base, &other) {
			t.Errorf("members that differ in %s are the same to sameMember", typ.Field(i).Name)
		}
	}
	owned := base
	owned.Slices = []SliceHash{{Manager: "m", Hash: "h", Owned: "other"}}
	if sameMember(&base, &owned) {
		t.Errorf("members whose slices differ in Owned are the same")
	}
	none, empty := base, base
	none.Slices, empty.Slices = nil, []SliceHash{}
	if !sameMember(&none, &empty) {
		t.Errorf("a member without slices and one with an empty list differ; both encode alike")
	}
}
