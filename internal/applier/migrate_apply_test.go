package applier

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// kubectl runs the test control plane's kubectl on a manifest.
func kubectl(t *testing.T, manifest string, args ...string) {
	t.Helper()
	f := filepath.Join(t.TempDir(), "m.yaml")
	if err := os.WriteFile(f, []byte(manifest), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(filepath.Join(env.BinDir, "kubectl"), append(append([]string{"--kubeconfig", env.Kubeconfig}, args...), "-f", f)...)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("kubectl %v: %v\n%s", args, err, out)
	}
}

func configMapDoc(ns string, data string) string {
	return "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm\n  namespace: " + ns + "\ndata:\n" + data
}

// TestClientSideTakeoverPolicy is the takeover hole: a ConfigMap another
// team created with client-side `kubectl apply` (color: blue) is declared
// by an app with color: red. Only fields whose value the apply does not
// change move to the app; the different one is a conflict with
// kubectl-client-side-apply under the app's policy: fail writes nothing,
// force takes it, yield leaves it and applies the rest. With migrate
// mode force for kubectl-client-side-apply, fail does not stop it.
func TestClientSideTakeoverPolicy(t *testing.T) {
	const csa = "kubectl-client-side-apply"
	tests := map[string]struct {
		policy     ConflictAction
		migrate    *MigrationSpec
		want       []string
		wantData   map[string]string
		wantOwners map[string][]string
		wantMoved  []Move
		wantKept   bool // the last-applied annotation stays
	}{
		"fail": {
			policy:   ConflictFail,
			want:     []string{"ConfigMap cm syncd-web conflict"},
			wantData: map[string]string{"color": "blue", "size": "small"},
			wantOwners: map[string][]string{
				csa + " (Update)": {".data.color", ".data.size", ".metadata.annotations.kubectl.kubernetes.io/last-applied-configuration"},
			},
			wantKept: true,
		},
		"force": {
			policy:     ConflictForce,
			want:       []string{"ConfigMap cm syncd-web forced"},
			wantData:   map[string]string{"color": "red", "owner": "web", "size": "small"},
			wantOwners: map[string][]string{"syncd-web": {".data.color", ".data.owner", ".data.size", ".metadata.annotations.managers.syncd.dev/web"}},
			wantMoved:  []Move{{".data.size", csa, "syncd-web"}},
		},
		"yield": {
			policy:   ConflictYield,
			want:     []string{"ConfigMap cm syncd-web yielded"},
			wantData: map[string]string{"color": "blue", "owner": "web", "size": "small"},
			wantOwners: map[string][]string{
				csa + " (Update)": {".data.color", ".metadata.annotations.kubectl.kubernetes.io/last-applied-configuration"},
				"syncd-web":       {".data.owner", ".data.size", ".metadata.annotations.managers.syncd.dev/web"},
			},
			wantMoved: []Move{{".data.size", csa, "syncd-web"}},
			wantKept:  true,
		},
		"migrate force under fail": {
			policy:     ConflictFail,
			migrate:    &MigrationSpec{From: []string{csa}, Force: true},
			want:       []string{"ConfigMap cm syncd-web forced"},
			wantData:   map[string]string{"color": "red", "owner": "web", "size": "small"},
			wantOwners: map[string][]string{"syncd-web": {".data.color", ".data.owner", ".data.size", ".metadata.annotations.managers.syncd.dev/web"}},
			wantMoved:  []Move{{".data.size", csa, "syncd-web"}},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			c := newCluster(t, env.Config)
			ns := env.Namespace(t)
			kubectl(t, configMapDoc(ns, "  color: blue\n  size: small\n"), "apply")
			before := c.get(t, configMaps, ns, "cm")
			migrate, err := NewMigration(tc.migrate)
			if err != nil {
				t.Fatal(err)
			}
			plan := c.plan(t, webApp(ns, "syncd-web"), configMapDoc(ns, "  color: red\n  size: small\n  owner: web\n"))
			cs := c.apply(t, plan, ApplyOptions{Policy: policyOf(t, tc.policy), Migrate: migrate, RecordManagers: true})
			wantChanges(t, cs, tc.want...)
			live := c.get(t, configMaps, ns, "cm")
			if diff := cmp.Diff(tc.wantData, data(live)); diff != "" {
				t.Errorf("data (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantOwners, owners(t, live)); diff != "" {
				t.Errorf("owners (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantMoved, cs.Changes[0].Moved); diff != "" {
				t.Errorf("Moved (-want +got):\n%s", diff)
			}
			if _, kept := live.GetAnnotations()[lastAppliedAnnotation]; kept != tc.wantKept {
				t.Errorf("last-applied annotation kept = %v, want %v", kept, tc.wantKept)
			}
			if tc.policy == ConflictFail && tc.migrate == nil {
				wantUnwritten(t, "a takeover under fail", before, live)
				err := cs.Changes[0].Err
				if err == nil || !strings.Contains(err.Error(), `.data.color is owned by "`+csa+`"`) {
					t.Errorf("error %v does not name .data.color and %s", err, csa)
				}
			}
		})
	}
}

// TestClientSideTakeoverSameValues: when every declared value equals
// the live one, the fields move from client-side apply to the app with
// no value changing, and each move is reported; a dry run reports the
// same moves and writes nothing.
func TestClientSideTakeoverSameValues(t *testing.T) {
	const csa = "kubectl-client-side-apply"
	c := newCluster(t, env.Config)
	ns := env.Namespace(t)
	kubectl(t, configMapDoc(ns, "  color: blue\n  size: small\n"), "apply")
	plan := c.plan(t, webApp(ns, "syncd-web"), configMapDoc(ns, "  color: blue\n  size: small\n"))
	want := []Move{{".data.color", csa, "syncd-web"}, {".data.size", csa, "syncd-web"}}

	before := c.get(t, configMaps, ns, "cm")
	dry, err := c.applier(t, Options{DryRun: true}).Apply(context.Background(), plan, ApplyOptions{RecordManagers: true})
	if err != nil {
		t.Fatal(err)
	}
	wantChanges(t, dry, "ConfigMap cm syncd-web configured")
	if diff := cmp.Diff(want, dry.Changes[0].Moved); diff != "" {
		t.Errorf("dry run: Moved (-want +got):\n%s", diff)
	}
	wantUnwritten(t, "a dry run", before, c.get(t, configMaps, ns, "cm"))

	cs := c.apply(t, plan, ApplyOptions{RecordManagers: true})
	wantChanges(t, cs, "ConfigMap cm syncd-web configured")
	if diff := cmp.Diff(want, cs.Changes[0].Moved); diff != "" {
		t.Errorf("Moved (-want +got):\n%s", diff)
	}
	live := c.get(t, configMaps, ns, "cm")
	if diff := cmp.Diff(data(before), data(live)); diff != "" {
		t.Errorf("data changed (-before +after):\n%s", diff)
	}
	if diff := cmp.Diff(planOwners(plan, "cm", ApplyOptions{RecordManagers: true}), owners(t, live)); diff != "" {
		t.Errorf("owners (-plan +live):\n%s", diff)
	}
	// A second run has nothing to move and writes nothing.
	cs = c.apply(t, plan, ApplyOptions{RecordManagers: true})
	wantChanges(t, cs, "ConfigMap cm syncd-web unchanged")
	wantUnwritten(t, "a second run", live, c.get(t, configMaps, ns, "cm"))
}

// TestMigrateFromSSAManager: objects another Server-Side Apply tool
// (kubectl --server-side as kustomize-controller, as Flux does) applied
// from the same manifests stay shared with it unless the app migrates
// from it; then the app's manager owns them alone, and a later Git
// change is no conflict with a manager that no longer runs.
func TestMigrateFromSSAManager(t *testing.T) {
	const kc = "kustomize-controller"
	doc := func(ns, image string) string {
		return strings.Replace(deployment("web", 3, image), "metadata:\n  name: web\n", "metadata:\n  name: web\n  namespace: "+ns+"\n", 1)
	}
	tests := map[string]struct {
		migrate    *MigrationSpec
		wantShared bool
		wantNext   []string
	}{
		"no migrate: shared and a change is a conflict": {
			wantShared: true,
			wantNext:   []string{"Deployment web syncd-web conflict"},
		},
		"migrate from kustomize-controller": {
			migrate:  &MigrationSpec{From: []string{kc}},
			wantNext: []string{"Deployment web syncd-web configured"},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			c := newCluster(t, env.Config)
			ns := env.Namespace(t)
			kubectl(t, doc(ns, "nginx:1.27"), "apply", "--server-side", "--field-manager", kc)
			migrate, err := NewMigration(tc.migrate)
			if err != nil {
				t.Fatal(err)
			}
			ao := ApplyOptions{Policy: policyOf(t, ConflictFail), Migrate: migrate, RecordManagers: true}
			app := webApp(ns, "syncd-web")
			w := c.watchObject(t, deployments, ns, "web")
			plan := c.plan(t, app, doc(ns, "nginx:1.27"))
			cs := c.apply(t, plan, ao)
			wantChanges(t, cs, "Deployment web syncd-web configured")
			noValueChanged(t, w.stop(c, deployments))
			got := without(owners(t, c.get(t, deployments, ns, "web")), deployControllers...)
			_, shared := got[kc]
			if shared != tc.wantShared {
				t.Errorf("%s still owns fields = %v, want %v; owners %v", kc, shared, tc.wantShared, got)
			}
			if !tc.wantShared {
				if diff := cmp.Diff(planOwners(plan, "web", ao), got); diff != "" {
					t.Errorf("owners after the migration (-plan +live):\n%s", diff)
				}
				if len(cs.Changes[0].Moved) == 0 || cs.Changes[0].Moved[0].From != kc {
					t.Errorf("Moved = %v, want fields from %s", cs.Changes[0].Moved, kc)
				}
			}
			cs = c.apply(t, c.plan(t, app, doc(ns, "nginx:1.29")), ao)
			wantChanges(t, cs, tc.wantNext...)
		})
	}
}
