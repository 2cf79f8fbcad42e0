package applier

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestTwoAppsShareAnInventoriedObject: two apps, each with its own
// inventory label, declare the same value on one ConfigMap under the fail
// policy. The second app does not fight the first over the part-of label
// (an object belongs to one ApplySet): it leaves that label to the first,
// whatever the policy, says so, and the values become shared. A value
// b changes is a conflict that names app a.
func TestTwoAppsShareAnInventoriedObject(t *testing.T) {
	c := newCluster(t, env.Config)
	ns := env.Namespace(t)
	const partOf = "applyset.kubernetes.io/part-of"
	a, b := appOf("a", ns), appOf("b", ns)
	withLabel := func(id string) ApplyOptions {
		return ApplyOptions{Policy: policyOf(t, ConflictFail), Labels: map[string]string{partOf: id}, RecordManagers: true}
	}

	cs := c.apply(t, c.plan(t, a, configMap("shared", map[string]string{"color": "red"})), withLabel("applyset-a"))
	wantChanges(t, cs, "ConfigMap shared syncd-a created")

	cs = c.apply(t, c.plan(t, b, configMap("shared", map[string]string{"color": "red", "shape": "round"})), withLabel("applyset-b"))
	wantChanges(t, cs, "ConfigMap shared syncd-b configured")
	want := Conflicts{{Manager: "syncd-a", Path: ".metadata.labels." + partOf, Operation: "Apply"}}
	if diff := cmp.Diff(want, cs.Changes[0].Resolution().OtherInventory, ignoreTime); diff != "" {
		t.Errorf("OtherInventory (-want +got):\n%s", diff)
	}
	if len(cs.Changes[0].Resolution().Yielded) > 0 {
		t.Errorf("the inventory label was reported as yielded by policy: %v", cs.Changes[0].Resolution().Yielded)
	}
	got := c.get(t, configMaps, ns, "shared")
	if id := got.GetLabels()[partOf]; id != "applyset-a" {
		t.Errorf("part-of label = %q, want the first app's applyset-a", id)
	}
	if diff := cmp.Diff(map[string]string{"color": "red", "shape": "round"}, data(got)); diff != "" {
		t.Errorf("data (-want +got):\n%s", diff)
	}
	owned := owners(t, got)
	if !contains(owned["syncd-a"], ".data.color") || !contains(owned["syncd-b"], ".data.color") {
		t.Errorf(".data.color is not shared by syncd-a and syncd-b: %v", owned)
	}
	if contains(owned["syncd-b"], ".metadata.labels."+partOf) {
		t.Errorf("syncd-b claims the other app's part-of label: %v", owned["syncd-b"])
	}

	// The preview of the same plan predicts what the apply did: the label
	// stays the first app's, so the dry-run result has no change.
	previews, err := c.applier(t, Options{DryRun: true}).Preview(ctxT(t), c.plan(t, b, configMap("shared", map[string]string{"color": "red", "shape": "round"})), withLabel("applyset-b"))
	if err != nil {
		t.Fatal(err)
	}
	if p := previews[0]; p.AfterErr != nil || p.After.GetLabels()[partOf] != "applyset-a" {
		t.Errorf("preview: after = %v (err %v), want the part-of label left at applyset-a", p.After.GetLabels(), p.AfterErr)
	}

	// A real difference is still a conflict under fail, also when the
	// same apply drops one of b's fields (shape): the dry run that checks
	// what dropping it would do is the request that meets the conflict.
	cs = c.apply(t, c.plan(t, b, configMap("shared", map[string]string{"color": "blue"})), withLabel("applyset-b"))
	wantChanges(t, cs, "ConfigMap shared syncd-b conflict")
	if err := cs.Changes[0].Err; err == nil || !strings.Contains(err.Error(), ".data.color") || strings.Contains(err.Error(), partOf) {
		t.Errorf("conflict error %v: want .data.color only", err)
	}
	if err := cs.Changes[0].Err; err == nil || !strings.Contains(err.Error(), `.data.color is owned by "syncd-a" of app a`) {
		t.Errorf("conflict error %v: want it to name the other app (of app a)", err)
	}
	if diff := cmp.Diff(map[string]string{"color": "red", "shape": "round"}, data(c.get(t, configMaps, ns, "shared"))); diff != "" {
		t.Errorf("data after the refused apply (-want +got):\n%s", diff)
	}

	// Under yield the same apply goes through: b gives color up and drops
	// shape.
	ao := withLabel("applyset-b")
	ao.Policy = policyOf(t, ConflictYield)
	cs = c.apply(t, c.plan(t, b, configMap("shared", map[string]string{"color": "blue"})), ao)
	wantChanges(t, cs, "ConfigMap shared syncd-b yielded")
	if diff := cmp.Diff(map[string]string{"color": "red"}, data(c.get(t, configMaps, ns, "shared"))); diff != "" {
		t.Errorf("data after b yielded color and dropped shape (-want +got):\n%s", diff)
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
