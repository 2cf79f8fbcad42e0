package main

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"sigs.k8s.io/yaml"

	"syncd.dev/syncd/internal/inventory"
)

// ownRig is one case's namespaces: the app's, syncd's own
// ($POD_NAMESPACE) and the inventory namespace.
type ownRig struct {
	app, sys, inv string
	dyn           dynamic.Interface
}

// ownCase is an app declaring one of syncd's own objects.
type ownCase struct {
	gvr schema.GroupVersionResource
	// manifest is what the app declares; setup creates the live object
	// first (nil: it does not exist).
	manifest func(r ownRig) string
	setup    func(t *testing.T, r ownRig)
	ns       func(r ownRig) string // "" for cluster-scoped
	name     string
	printed  func(r ownRig) string // the object as the refusal names it
	// liftable: installsSyncd lets the app apply it.
	liftable bool
}

var (
	gvrConfigMaps = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	gvrSecrets    = schema.GroupVersionResource{Version: "v1", Resource: "secrets"}
	gvrCRBs       = schema.GroupVersionResource{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "clusterrolebindings"}
	gvrCRs        = schema.GroupVersionResource{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "clusterroles"}
	gvrCRDs       = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
)

// syncdManagerCRB is manifests/' ClusterRoleBinding, with extra subjects.
func syncdManagerCRB(sys string, extra string) string {
	return fmt.Sprintf(`apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata:
  name: syncd-manager
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: ClusterRole
  name: syncd-manager
subjects:
- kind: ServiceAccount
  name: syncd
  namespace: %s
%s`, sys, extra)
}

func ownCases() map[string]ownCase {
	return map[string]ownCase{
		"the config ConfigMap in syncd's namespace": {
			gvr:  gvrConfigMaps,
			name: "syncd-config",
			ns:   func(r ownRig) string { return r.sys },
			setup: func(t *testing.T, r ownRig) {
				createManifest(t, r.dyn, gvrConfigMaps, "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: syncd-config, namespace: "+r.sys+"}\ndata: {syncd.yaml: installed}\n")
			},
			manifest: func(r ownRig) string {
				return "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: syncd-config, namespace: " + r.sys + "}\ndata: {syncd.yaml: rewritten by an app}\n"
			},
			printed:  func(r ownRig) string { return "ConfigMap " + r.sys + "/syncd-config" },
			liftable: true,
		},
		"a Secret in the inventory namespace": {
			gvr:  gvrSecrets,
			name: "git-credentials",
			ns:   func(r ownRig) string { return r.inv },
			manifest: func(r ownRig) string {
				return "apiVersion: v1\nkind: Secret\nmetadata: {name: git-credentials, namespace: " + r.inv + "}\nstringData: {token: planted}\n"
			},
			printed:  func(r ownRig) string { return "Secret " + r.inv + "/git-credentials" },
			liftable: true,
		},
		"another app's inventory Secret": {
			gvr:  gvrSecrets,
			name: inventory.ParentName("other"),
			ns:   func(r ownRig) string { return r.inv },
			setup: func(t *testing.T, r ownRig) {
				// App other is applied for real: syncd writes its parent.
				cfg := writeConfig(t, fmt.Sprintf("- name: other\n  source: repo\n  namespace: %s\n", r.app))
				dir := writeFiles(t, map[string]string{"cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: other}\ndata: {k: v}\n"})
				if res := syncd(t, "apply", "--config", cfg, "--path", dir); res.code != exitOK {
					t.Fatalf("apply of app other: exit %d\n%s%s", res.code, res.stdout, res.stderr)
				}
			},
			manifest: func(r ownRig) string {
				return "apiVersion: v1\nkind: Secret\nmetadata: {name: " + inventory.ParentName("other") + ", namespace: " + r.inv + "}\nstringData: {members: none}\n"
			},
			printed: func(r ownRig) string { return "Secret " + r.inv + "/" + inventory.ParentName("other") },
		},
		"syncd's ClusterRoleBinding": {
			gvr:  gvrCRBs,
			name: "syncd-manager",
			ns:   func(ownRig) string { return "" },
			setup: func(t *testing.T, r ownRig) {
				createManifest(t, r.dyn, gvrCRBs, syncdManagerCRB(r.sys, ""))
				t.Cleanup(func() {
					_ = r.dyn.Resource(gvrCRBs).Delete(context.Background(), "syncd-manager", metav1.DeleteOptions{})
				})
			},
			manifest: func(r ownRig) string {
				return syncdManagerCRB(r.sys, "- kind: User\n  apiGroup: rbac.authorization.k8s.io\n  name: mallory\n")
			},
			printed:  func(ownRig) string { return "rbac.authorization.k8s.io/ClusterRoleBinding syncd-manager" },
			liftable: true,
		},
		// Deleting or editing a CRD of syncd's group deletes every App
		// (or drops the admission rules); widgets.syncd.dev stands for
		// apps.syncd.dev, which the other tests of the package use.
		"a CRD of syncd's API group": {
			gvr:  gvrCRDs,
			name: "widgets.syncd.dev",
			ns:   func(ownRig) string { return "" },
			setup: func(t *testing.T, r ownRig) {
				// A CRD's deletion ends after the API server removed
				// its objects: a case that starts while the previous
				// test's CRD is still going would see it vanish as if
				// the command had written it.
				deleteCRD(t, r, "widgets.syncd.dev")
				t.Cleanup(func() { deleteCRD(t, r, "widgets.syncd.dev") })
			},
			manifest: func(ownRig) string {
				return "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata: {name: widgets.syncd.dev}\nspec:\n  group: syncd.dev\n  names: {kind: Widget, plural: widgets}\n  scope: Namespaced\n  versions:\n  - name: v1\n    served: true\n    storage: true\n    schema: {openAPIV3Schema: {type: object}}\n"
			},
			printed:  func(ownRig) string { return "apiextensions.k8s.io/CustomResourceDefinition widgets.syncd.dev" },
			liftable: true,
		},
		// Its rules would be aggregated into syncd-manager: syncd's own
		// rights.
		"a ClusterRole aggregated into syncd-manager": {
			gvr:  gvrCRs,
			name: "team-extra-rights",
			ns:   func(ownRig) string { return "" },
			setup: func(t *testing.T, r ownRig) {
				t.Cleanup(func() {
					_ = r.dyn.Resource(gvrCRs).Delete(context.Background(), "team-extra-rights", metav1.DeleteOptions{})
				})
			},
			manifest: func(ownRig) string {
				return "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata:\n  name: team-extra-rights\n  labels: {syncd.dev/aggregate-to-manager: \"true\"}\nrules:\n- apiGroups: [\"\"]\n  resources: [configmaps]\n  verbs: [get]\n"
			},
			printed:  func(ownRig) string { return "rbac.authorization.k8s.io/ClusterRole team-extra-rights" },
			liftable: true,
		},
	}
}

// newOwnRig makes the namespaces, points $POD_NAMESPACE at syncd's and
// runs the case's setup.
func newOwnRig(t *testing.T, tc ownCase) ownRig {
	t.Helper()
	dyn, err := dynamic.NewForConfig(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	r := ownRig{app: env.Namespace(t), sys: env.Namespace(t), inv: invNamespace(t), dyn: dyn}
	t.Setenv("POD_NAMESPACE", r.sys)
	if tc.setup != nil {
		tc.setup(t, r)
	}
	return r
}

// appFiles is the app's render: one ordinary ConfigMap and the case's
// object.
func appFiles(t *testing.T, r ownRig, tc ownCase) string {
	return writeFiles(t, map[string]string{
		"app.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: app-settings, namespace: " + r.app + "}\ndata: {k: v}\n",
		"own.yaml": tc.manifest(r),
	})
}

func appConfig(t *testing.T, r ownRig, installsSyncd bool) string {
	app := fmt.Sprintf("- name: web\n  source: repo\n  namespace: %s\n  conflicts:\n    default: force\n", r.app)
	if installsSyncd {
		app += "  installsSyncd: true\n"
	}
	return writeConfig(t, app)
}

// liveState is an object's resourceVersion, "" when it does not exist.
func liveState(t *testing.T, r ownRig, gvr schema.GroupVersionResource, ns, name string) string {
	t.Helper()
	var ri dynamic.ResourceInterface = r.dyn.Resource(gvr)
	if ns != "" {
		ri = r.dyn.Resource(gvr).Namespace(ns)
	}
	u, err := ri.Get(context.Background(), name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return ""
	case err != nil:
		t.Fatal(err)
	}
	return u.GetResourceVersion()
}

// written returns what the app wrote: the case's object if it changed,
// the app's own ConfigMap and its inventory Secret if they exist.
func written(t *testing.T, r ownRig, tc ownCase, before string) []string {
	t.Helper()
	var out []string
	if liveState(t, r, tc.gvr, tc.ns(r), tc.name) != before {
		out = append(out, tc.printed(r))
	}
	if liveState(t, r, gvrConfigMaps, r.app, "app-settings") != "" {
		out = append(out, "ConfigMap "+r.app+"/app-settings")
	}
	if liveState(t, r, gvrSecrets, r.inv, inventory.ParentName("web")) != "" {
		out = append(out, "the inventory Secret of app web")
	}
	return out
}

// deleteCRD deletes the CustomResourceDefinition name, if any, and waits
// until it is gone.
func deleteCRD(t *testing.T, r ownRig, name string) {
	t.Helper()
	ctx := context.Background()
	ri := r.dyn.Resource(gvrCRDs)
	if err := ri.Delete(ctx, name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		t.Fatal(err)
	}
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		_, err := ri.Get(ctx, name, metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})
	if err != nil {
		t.Fatalf("CustomResourceDefinition %s not gone: %v", name, err)
	}
}

func createManifest(t *testing.T, dyn dynamic.Interface, gvr schema.GroupVersionResource, manifest string) {
	t.Helper()
	u := &unstructured.Unstructured{}
	if err := yaml.Unmarshal([]byte(manifest), &u.Object); err != nil {
		t.Fatal(err)
	}
	var ri dynamic.ResourceInterface = dyn.Resource(gvr)
	if ns := u.GetNamespace(); ns != "" {
		ri = dyn.Resource(gvr).Namespace(ns)
	}
	if _, err := ri.Create(context.Background(), u, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create %s %s: %v", gvr.Resource, u.GetName(), err)
	}
}

// TestApplyRefusesSyncdOwnObjects: an app declaring one of syncd's own
// objects is refused by syncd apply before anything is written, even
// under conflicts: force and with cluster-admin credentials, naming the
// object and what to do (exit 3); with installsSyncd the app applies it,
// except another app's inventory Secret.
func TestApplyRefusesSyncdOwnObjects(t *testing.T) {
	for name, tc := range ownCases() {
		t.Run(name, func(t *testing.T) {
			r := newOwnRig(t, tc)
			dir := appFiles(t, r, tc)
			before := liveState(t, r, tc.gvr, tc.ns(r), tc.name)

			res := syncd(t, "apply", "--config", appConfig(t, r, false), "--path", dir)
			t.Logf("syncd apply: exit %d\n%s%s", res.code, res.stdout, res.stderr)
			if res.code != exitConflict {
				t.Errorf("apply: exit %d, want %d\n%s%s", res.code, exitConflict, res.stdout, res.stderr)
			}
			for _, s := range []string{tc.printed(r) + " is syncd's own object", "remove it from app web's manifests"} {
				if !strings.Contains(res.stderr, s) {
					t.Errorf("apply's error does not say %q:\n%s", s, res.stderr)
				}
			}
			if got := written(t, r, tc, before); len(got) > 0 {
				t.Errorf("a refused apply wrote %v", got)
			}

			res = syncd(t, "apply", "--config", appConfig(t, r, true), "--path", dir)
			if !tc.liftable {
				if res.code != exitConflict || !strings.Contains(res.stderr, tc.printed(r)+" is syncd's own object") || strings.Contains(res.stderr, "installsSyncd") {
					t.Errorf("installsSyncd: exit %d, want %d and the refusal without the installsSyncd hint\n%s%s", res.code, exitConflict, res.stdout, res.stderr)
				}
				if got := written(t, r, tc, before); len(got) > 0 {
					t.Errorf("installsSyncd: a refused apply wrote %v", got)
				}
				return
			}
			if res.code != exitOK {
				t.Fatalf("installsSyncd: exit %d, want 0\n%s%s", res.code, res.stdout, res.stderr)
			}
			want := []string{tc.printed(r), "ConfigMap " + r.app + "/app-settings", "the inventory Secret of app web"}
			if diff := cmp.Diff(want, written(t, r, tc, before)); diff != "" {
				t.Errorf("installsSyncd: written (-want +got):\n%s", diff)
			}
		})
	}
}

// TestPlanRefusesSyncdOwnObjects: syncd plan reports the same refusal as
// a blocker (exit 3, the object named on stderr) without a dry run; with
// installsSyncd it previews the change.
func TestPlanRefusesSyncdOwnObjects(t *testing.T) {
	for name, tc := range ownCases() {
		t.Run(name, func(t *testing.T) {
			r := newOwnRig(t, tc)
			dir := appFiles(t, r, tc)
			before := liveState(t, r, tc.gvr, tc.ns(r), tc.name)
			for _, output := range []string{"text", "markdown", "json"} {
				res := syncd(t, "plan", "--config", appConfig(t, r, false), "--app", "web", "--path", dir, "-o", output)
				if res.code != exitConflict || !strings.Contains(res.stderr, tc.printed(r)+" is syncd's own object") {
					t.Errorf("plan -o %s: exit %d, want %d and the object named on stderr\n%s%s", output, res.code, exitConflict, res.stdout, res.stderr)
				}
			}
			res := syncd(t, "plan", "--config", appConfig(t, r, true), "--app", "web", "--path", dir)
			switch {
			case !tc.liftable && res.code != exitConflict:
				t.Errorf("plan with installsSyncd: exit %d, want %d (never lifted)\n%s%s", res.code, exitConflict, res.stdout, res.stderr)
			case tc.liftable && (res.code != exitChanges || !strings.Contains(res.stdout, tc.name+": ")):
				t.Errorf("plan with installsSyncd: exit %d, want %d and %s previewed\n%s%s", res.code, exitChanges, tc.printed(r), res.stdout, res.stderr)
			}
			if got := written(t, r, tc, before); len(got) > 0 {
				t.Errorf("plan wrote %v", got)
			}
		})
	}
}
