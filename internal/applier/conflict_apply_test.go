package applier

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"syncd.dev/syncd/internal/config"
	"syncd.dev/syncd/internal/planner"
)

func configMap(name string, data map[string]string) string {
	var b strings.Builder
	b.WriteString("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: " + name + "\n")
	if len(data) > 0 {
		b.WriteString("data:\n")
		for k, v := range data {
			b.WriteString("  " + k + ": " + quote(v) + "\n")
		}
	}
	return b.String()
}

func quote(s string) string { return `"` + s + `"` }

func appOf(name, ns string) config.App {
	return config.App{Name: name, Namespace: ns, AppSpec: config.AppSpec{Manager: "syncd-" + name}}
}

func mustPolicy(t *testing.T, p PolicySpec) *Policy {
	t.Helper()
	pol, err := NewPolicy(p)
	if err != nil {
		t.Fatal(err)
	}
	return pol
}

func policyOf(t *testing.T, def ConflictAction) *Policy {
	return mustPolicy(t, PolicySpec{Default: def})
}

func data(u *unstructured.Unstructured) map[string]string {
	m, _, _ := unstructured.NestedStringMap(u.Object, "data")
	return m
}

// ignoreTime drops the time the server printed for Update managers.
var ignoreTime = cmpopts.IgnoreFields(Conflict{}, "Time")

// TestTwoAppsOneConfigMap is the conflict seed: two apps (two managers)
// apply the same ConfigMap.
func TestTwoAppsOneConfigMap(t *testing.T) {
	c := newCluster(t, env.Config)
	ns := env.Namespace(t)
	a, b := appOf("a", ns), appOf("b", ns)

	cs := c.apply(t, c.plan(t, a, configMap("shared", map[string]string{"color": "red", "size": "1"})), ApplyOptions{})
	wantChanges(t, cs, "ConfigMap shared syncd-a created")
	before := c.get(t, configMaps, ns, "shared")

	// fail: b wants another color. Nothing is written.
	cs = c.apply(t, c.plan(t, b, configMap("shared", map[string]string{"color": "blue"})), ApplyOptions{Policy: policyOf(t, ConflictFail)})
	wantChanges(t, cs, "ConfigMap shared syncd-b conflict")
	if cs.OK() {
		t.Error("ChangeSet.OK() = true after a conflict")
	}
	if diff := cmp.Diff(Conflicts{{Manager: "syncd-a", Path: ".data.color", Operation: "Apply"}}, cs.Changes[0].Conflicts); diff != "" {
		t.Errorf("conflicts (-want +got):\n%s", diff)
	}
	if err := cs.Changes[0].Err; err == nil || !strings.Contains(err.Error(), `.data.color is owned by "syncd-a"`) || !strings.Contains(err.Error(), "ConfigMap "+ns+"/shared") {
		t.Errorf("conflict error %v does not name the object, field and manager", err)
	}
	t.Logf("fail: %s: %v", cs.Changes[0], cs.Changes[0].Err)
	after := c.get(t, configMaps, ns, "shared")
	if after.GetResourceVersion() != before.GetResourceVersion() {
		t.Errorf("object written despite the conflict: resourceVersion %s -> %s", before.GetResourceVersion(), after.GetResourceVersion())
	}

	// Equal values: shared ownership, no conflict.
	cs = c.apply(t, c.plan(t, b, configMap("shared", map[string]string{"color": "red", "shape": "round"})), ApplyOptions{})
	wantChanges(t, cs, "ConfigMap shared syncd-b configured")
	got := c.get(t, configMaps, ns, "shared")
	wantOwners := map[string][]string{
		"syncd-a": {".data.color", ".data.size"},
		"syncd-b": {".data.color", ".data.shape"},
	}
	if diff := cmp.Diff(wantOwners, owners(t, got)); diff != "" {
		t.Errorf("owners after a shared apply (-want +got):\n%s", diff)
	}

	// Omission removes only b's own key: shape goes, color (still a's) stays.
	cs = c.apply(t, c.plan(t, b, configMap("shared", map[string]string{"other": "x"})), ApplyOptions{})
	wantChanges(t, cs, "ConfigMap shared syncd-b configured")
	got = c.get(t, configMaps, ns, "shared")
	if diff := cmp.Diff(map[string]string{"color": "red", "size": "1", "other": "x"}, data(got)); diff != "" {
		t.Errorf("data after b omitted color and shape (-want +got):\n%s", diff)
	}
	wantOwners = map[string][]string{"syncd-a": {".data.color", ".data.size"}, "syncd-b": {".data.other"}}
	if diff := cmp.Diff(wantOwners, owners(t, got)); diff != "" {
		t.Errorf("owners after omission (-want +got):\n%s", diff)
	}

	// force: b takes color.
	cs = c.apply(t, c.plan(t, b, configMap("shared", map[string]string{"color": "blue", "other": "x"})), ApplyOptions{Policy: policyOf(t, ConflictForce)})
	wantChanges(t, cs, "ConfigMap shared syncd-b forced")
	if diff := cmp.Diff(Conflicts{{Manager: "syncd-a", Path: ".data.color", Operation: "Apply"}}, cs.Changes[0].Resolution().Forced); diff != "" {
		t.Errorf("forced (-want +got):\n%s", diff)
	}
	got = c.get(t, configMaps, ns, "shared")
	wantOwners = map[string][]string{"syncd-a": {".data.size"}, "syncd-b": {".data.color", ".data.other"}}
	if diff := cmp.Diff(wantOwners, owners(t, got)); diff != "" {
		t.Errorf("owners after force (-want +got):\n%s", diff)
	}
	if got := data(got)["color"]; got != "blue" {
		t.Errorf("color = %q after force, want blue", got)
	}
}

// patchAs changes the object by a merge patch (an Update) as manager.
func patchAs(t *testing.T, c *cluster, ns, name, manager, patch string) {
	t.Helper()
	_, err := c.resource(t, configMaps, ns).Patch(context.Background(), name, types.MergePatchType, []byte(patch), metav1.PatchOptions{FieldManager: manager})
	if err != nil {
		t.Fatalf("patch as %s: %v", manager, err)
	}
}

// TestOperatorChangedAField: after an Update by another manager, the
// next apply reports, forces or yields by policy.
func TestOperatorChangedAField(t *testing.T) {
	tests := map[string]struct {
		policy     ConflictAction
		want       Action
		wantColor  string
		wantOwners map[string][]string
		ok         bool
	}{
		"fail": {
			policy: ConflictFail, want: Conflicted, wantColor: "green",
			wantOwners: map[string][]string{"syncd-app": {".data.size"}, "operator (Update)": {".data.color"}},
		},
		"force": {
			policy: ConflictForce, want: Forced, wantColor: "red", ok: true,
			wantOwners: map[string][]string{"syncd-app": {".data.color", ".data.size"}},
		},
		"yield": {
			policy: ConflictYield, want: Yielded, wantColor: "green", ok: true,
			wantOwners: map[string][]string{"syncd-app": {".data.size"}, "operator (Update)": {".data.color"}},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			c := newCluster(t, env.Config)
			ns := env.Namespace(t)
			app := appOf("app", ns)
			plan := c.plan(t, app, configMap("settings", map[string]string{"color": "red", "size": "1"}))
			wantChanges(t, c.apply(t, plan, ApplyOptions{}), "ConfigMap settings syncd-app created")
			patchAs(t, c, ns, "settings", "operator", `{"data":{"color":"green"}}`)

			cs := c.apply(t, plan, ApplyOptions{Policy: policyOf(t, tc.policy)})
			wantChanges(t, cs, "ConfigMap settings syncd-app "+string(tc.want))
			if cs.OK() != tc.ok {
				t.Errorf("OK() = %v, want %v", cs.OK(), tc.ok)
			}
			ch := cs.Changes[0]
			t.Logf("%s: %s conflicts=%v forced=%v yielded=%v err=%v", name, ch, ch.Conflicts, ch.Resolution().Forced, ch.Resolution().Yielded, ch.Err)
			want := Conflicts{{Manager: "operator", Path: ".data.color", Operation: "Update"}}
			var got Conflicts
			switch tc.want {
			case Conflicted:
				got = ch.Conflicts
			case Forced:
				got = ch.Resolution().Forced
			case Yielded:
				got = ch.Resolution().Yielded
			}
			if diff := cmp.Diff(want, got, ignoreTime); diff != "" {
				t.Errorf("conflicts (-want +got):\n%s", diff)
			}
			live := c.get(t, configMaps, ns, "settings")
			if got := data(live)["color"]; got != tc.wantColor {
				t.Errorf("color = %q, want %q", got, tc.wantColor)
			}
			if diff := cmp.Diff(tc.wantOwners, owners(t, live)); diff != "" {
				t.Errorf("owners (-want +got):\n%s", diff)
			}

			// The next run decides the same way and changes nothing more.
			cs = c.apply(t, plan, ApplyOptions{Policy: policyOf(t, tc.policy)})
			again := map[Action]Action{Conflicted: Conflicted, Forced: Unchanged, Yielded: Yielded}[tc.want]
			wantChanges(t, cs, "ConfigMap settings syncd-app "+string(again))
			if got := c.get(t, configMaps, ns, "settings").GetResourceVersion(); got != live.GetResourceVersion() {
				t.Errorf("second run wrote the object (resourceVersion %s -> %s)", live.GetResourceVersion(), got)
			}
		})
	}
}

// TestPolicyRules: rules match by kind, name, path (wildcards) and
// manager glob; the first match wins, then the default; a flapping field
// is no longer forced.
func TestPolicyRules(t *testing.T) {
	policy := PolicySpec{
		Default: ConflictFail,
		Rules: []PolicyRule{
			{Kinds: kinds("ConfigMap"), Names: []string{"flags-*"}, Paths: pats(".data.color"), Managers: []string{"oper*"}, Action: ConflictYield},
			{Kinds: kinds("ConfigMap"), Paths: pats(".data.*"), Managers: []string{"oper*"}, Action: ConflictForce},
		},
	}
	tests := map[string]struct {
		name     string
		manager  string
		flapping string // a path Flapping reports
		want     Action
		yielded  []string
		forced   []string
		failed   []string
		data     map[string]string
	}{
		"name, path and manager match rule 0 for color, rule 1 for size": {
			name: "flags-1", manager: "operator", want: Forced,
			yielded: []string{".data.color"}, forced: []string{".data.size"},
			data: map[string]string{"color": "green", "size": "1"},
		},
		"name does not match rule 0: rule 1 forces both": {
			name: "settings", manager: "operator", want: Forced,
			forced: []string{".data.color", ".data.size"},
			data:   map[string]string{"color": "red", "size": "1"},
		},
		"manager matches no rule: default fail": {
			name: "flags-2", manager: "kubectl-edit", want: Conflicted,
			failed: []string{".data.color", ".data.size"},
			data:   map[string]string{"color": "green", "size": "2"},
		},
		"flapping field is not forced": {
			name: "settings", manager: "operator", flapping: ".data.size", want: Conflicted,
			failed: []string{".data.size"},
			data:   map[string]string{"color": "green", "size": "2"},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			c := newCluster(t, env.Config)
			ns := env.Namespace(t)
			plan := c.plan(t, appOf("app", ns), configMap(tc.name, map[string]string{"color": "red", "size": "1"}))
			c.apply(t, plan, ApplyOptions{})
			patchAs(t, c, ns, tc.name, tc.manager, `{"data":{"color":"green","size":"2"}}`)
			ao := ApplyOptions{Policy: mustPolicy(t, policy)}
			if tc.flapping != "" {
				ao.Flapping = func(ref planner.ObjectRef, path string) bool { return path == tc.flapping }
			}
			cs := c.apply(t, plan, ao)
			wantChanges(t, cs, "ConfigMap "+tc.name+" syncd-app "+string(tc.want))
			ch := cs.Changes[0]
			t.Logf("%s: forced=%v yielded=%v conflicts=%v err=%v", ch, ch.Resolution().Forced, ch.Resolution().Yielded, ch.Conflicts, ch.Err)
			pathsOf := func(cs Conflicts) []string {
				var out []string
				for _, c := range cs {
					out = append(out, c.Path)
				}
				return out
			}
			if diff := cmp.Diff(tc.yielded, pathsOf(ch.Resolution().Yielded)); diff != "" {
				t.Errorf("yielded (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.forced, pathsOf(ch.Resolution().Forced)); diff != "" {
				t.Errorf("forced (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.failed, pathsOf(ch.Conflicts)); diff != "" {
				t.Errorf("conflicts (-want +got):\n%s", diff)
			}
			if tc.want == Conflicted && !errors.As(ch.Err, new(Conflicts)) {
				t.Errorf("Err %v does not unwrap to Conflicts", ch.Err)
			}
			if diff := cmp.Diff(tc.data, data(c.get(t, configMaps, ns, tc.name))); diff != "" {
				t.Errorf("data (-want +got):\n%s", diff)
			}
		})
	}
}
