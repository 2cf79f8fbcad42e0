package daemon_test

import (
	"fmt"
	"testing"
	"time"
)

// TestDaemonRetryDryRunsOnlyTheRefused: an app whose stage the API server
// refuses because of one object is retried with backoff; each retry
// dry-runs only that object, since the outcome of the others' dry runs
// (same body, still absent) is known. Once the object is fixed in Git,
// the stage is written: every good ConfigMap got at most one dry run
// (none when the first attempt judged it without one: the first 16 new
// ConfigMaps of a run are dry-run, the others judged) and one write in
// all, however many retries there were.
func TestDaemonRetryDryRunsOnlyTheRefused(t *testing.T) {
	const bad = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: refused\n  labels:\n    tier: \"not a label value!\"\ndata:\n  v: \"1\"\n"
	rig := newFaultRig(t, rigOptions{interval: "1h", maxBackoff: 200 * time.Millisecond, files: func(ns string) map[string][]byte {
		return map[string][]byte{
			"app/good.yaml":    []byte(configMaps(ns, "good", 20, "1")),
			"app/refused.yaml": []byte(bad),
		}
	}})
	deadline := time.Now().Add(60 * time.Second)
	for rig.sends("refused") < 4 {
		if time.Now().After(deadline) {
			t.Fatalf("the refused object was dry-run %d times in 60 s, want 4 attempts; status=%+v", rig.sends("refused"), rig.status())
		}
		time.Sleep(50 * time.Millisecond)
	}
	first, dryRun := map[string]int{}, 0
	for i := range 20 {
		name := fmt.Sprintf("good-%03d", i)
		first[name] = rig.sends(name)
		dryRun += first[name]
		if first[name] > 1 {
			t.Errorf("%s: %d requests after %d attempts of the refused stage, want at most 1 (its first dry run)", name, first[name], rig.sends("refused"))
		}
	}
	if dryRun < 15 {
		t.Errorf("%d of the 20 good ConfigMaps were dry-run, want the first 15 or 16 of the first attempt", dryRun)
	}
	sha, err := rig.repo.Commit("fix the label", map[string][]byte{
		"app/refused.yaml": []byte(configMaps(rig.ns, "refused", 1, "1")),
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := rig.d.Trigger("repo"); err != nil {
		t.Fatal(err)
	}
	want := want(want(nil, "good", 20, "1"), "refused", 1, "1")
	for {
		ok, why := rig.converged(want, sha)
		if ok {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("not converged after the fix: %s", why)
		}
		time.Sleep(100 * time.Millisecond)
	}
	for i := range 20 {
		name := fmt.Sprintf("good-%03d", i)
		if got := rig.sends(name); got != first[name]+1 {
			t.Errorf("%s: %d requests in all, want %d (its dry runs of the first attempt, one write)", name, got, first[name]+1)
		}
	}
}

// sends returns how many requests for the app's ConfigMap name the
// daemon sent that are dry runs or writes: applies (PATCH) and creates
// (POST, the dry run of an object that does not exist).
func (r *faultRig) sends(name string) int {
	r.reqs.mu.Lock()
	defer r.reqs.mu.Unlock()
	return r.reqs.writes["PATCH configmaps/"+name] + r.reqs.writes["POST configmaps/"+name]
}
