package daemon_test

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/metadata"
	"sigs.k8s.io/yaml"

	"syncd.dev/syncd/internal/inventory"
	"syncd.dev/syncd/internal/reconcile"
	"syncd.dev/syncd/internal/reconcile/reconciletest"
)

// ownObject is one of syncd's own objects an app declares.
type ownObject struct {
	gvr      schema.GroupVersionResource
	ns, name string
	printed  string // as the refusal names it
	live     string // the live object before the app runs; "" for none
	declared string // what the app declares
	liftable bool   // installsSyncd lets the app apply it
}

// ownObjects are the config ConfigMap in syncd's namespace, a Secret in
// the inventory namespace, another app's inventory Secret and syncd's
// ClusterRoleBinding.
func ownObjects(sys, inv string) []ownObject {
	crb := func(extra string) string {
		return "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRoleBinding\nmetadata: {name: syncd-manager}\n" +
			"roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: syncd-manager}\n" +
			"subjects:\n- {kind: ServiceAccount, name: syncd, namespace: " + sys + "}\n" + extra
	}
	other := inventory.ParentName("other")
	return []ownObject{{
		gvr: schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}, ns: sys, name: "syncd-config",
		printed:  "ConfigMap " + sys + "/syncd-config",
		live:     "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: syncd-config, namespace: " + sys + "}\ndata: {syncd.yaml: installed}\n",
		declared: "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: syncd-config, namespace: " + sys + "}\ndata: {syncd.yaml: rewritten}\n",
		liftable: true,
	}, {
		gvr: schema.GroupVersionResource{Version: "v1", Resource: "secrets"}, ns: inv, name: "git-credentials",
		printed:  "Secret " + inv + "/git-credentials",
		declared: "apiVersion: v1\nkind: Secret\nmetadata: {name: git-credentials, namespace: " + inv + "}\nstringData: {token: planted}\n",
		liftable: true,
	}, {
		gvr: schema.GroupVersionResource{Version: "v1", Resource: "secrets"}, ns: inv, name: other,
		printed:  "Secret " + inv + "/" + other,
		live:     "apiVersion: v1\nkind: Secret\nmetadata: {name: " + other + ", namespace: " + inv + "}\nstringData: {k: v}\n",
		declared: "apiVersion: v1\nkind: Secret\nmetadata: {name: " + other + ", namespace: " + inv + "}\nstringData: {k: rewritten}\n",
	}, {
		gvr: schema.GroupVersionResource{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "clusterrolebindings"}, name: "syncd-manager",
		printed:  "rbac.authorization.k8s.io/ClusterRoleBinding syncd-manager",
		live:     crb(""),
		declared: crb("- {kind: User, apiGroup: rbac.authorization.k8s.io, name: mallory}\n"),
		liftable: true,
	}}
}

// TestDaemonRefusesSyncdOwnObjects: the daemon refuses an app declaring
// syncd's own objects before it writes anything (its /status says failed,
// naming each object), under conflicts: force and with cluster-admin
// credentials; with installsSyncd the app applies them, but never another
// app's inventory Secret.
func TestDaemonRefusesSyncdOwnObjects(t *testing.T) {
	tests := map[string]struct {
		installsSyncd bool
		declare       func(o ownObject) bool
		wantFailed    func(o ownObject) bool // refused objects; none: the sync succeeds
	}{
		"every one refused": {
			declare:    func(ownObject) bool { return true },
			wantFailed: func(ownObject) bool { return true },
		},
		"installsSyncd: applied": {
			installsSyncd: true,
			declare:       func(o ownObject) bool { return o.liftable },
			wantFailed:    func(ownObject) bool { return false },
		},
		"installsSyncd: another app's inventory Secret still refused": {
			installsSyncd: true,
			declare:       func(ownObject) bool { return true },
			wantFailed:    func(o ownObject) bool { return !o.liftable },
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			ns, sys, inv := env.Namespace(t), env.Namespace(t), env.Namespace(t)
			dyn, err := dynamic.NewForConfig(env.Config)
			if err != nil {
				t.Fatal(err)
			}
			objs := ownObjects(sys, inv)
			files := map[string]string{"app/settings.yaml": reconciletest.ConfigMap(ns, "blue")}
			before := map[string]string{}
			for i, o := range objs {
				if o.live != "" {
					createLive(t, dyn, o)
				}
				before[o.printed] = liveRV(t, dyn, o)
				if tc.declare(o) {
					files[fmt.Sprintf("app/own-%d.yaml", i)] = o.declared
				}
			}
			repo := reconciletest.NewRepo(t)
			repo.Commit("first", files)
			cfgPath := filepath.Join(t.TempDir(), "syncd.yaml")
			writeConfig(t, cfgPath, repo.Dir, ns, "1h")
			appendFile(t, cfgPath, "  conflicts:\n    default: force\n")
			if tc.installsSyncd {
				appendFile(t, cfgPath, "  installsSyncd: true\n")
			}
			cl := cluster(t)
			md, err := metadata.NewForConfig(env.Config)
			if err != nil {
				t.Fatal(err)
			}
			invm, err := inventory.New(cl.Dynamic, md, cl.Mapper, inventory.Options{Namespace: inv})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(invm.Stop)
			d := runDaemon(t, cfgPath, cl, reconcile.Options{Inventory: invm, Reserved: inventory.Reserved{Namespaces: []string{sys}}})
			st := d.Status()
			if len(st) != 1 {
				t.Fatalf("status: %+v", st)
			}

			var refused []ownObject
			for _, o := range objs {
				if tc.declare(o) && tc.wantFailed(o) {
					refused = append(refused, o)
				}
			}
			settings := liveRV(t, dyn, ownObject{gvr: schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}, ns: ns, name: "settings"})
			parent := liveRV(t, dyn, ownObject{gvr: schema.GroupVersionResource{Version: "v1", Resource: "secrets"}, ns: inv, name: inventory.ParentName("web")})
			if len(refused) > 0 {
				if st[0].Result != "failed" {
					t.Errorf("status result %q, want failed: %+v", st[0].Result, st[0])
				}
				for _, o := range refused {
					if !strings.Contains(st[0].Error, o.printed+" is syncd's own object") {
						t.Errorf("status error does not name %s:\n%s", o.printed, st[0].Error)
					}
				}
				for _, o := range objs {
					if got := liveRV(t, dyn, o); got != before[o.printed] {
						t.Errorf("%s was written by a refused sync (resourceVersion %q → %q)", o.printed, before[o.printed], got)
					}
				}
				if settings != "" || parent != "" {
					t.Errorf("a refused sync wrote the app's ConfigMap (rv %q) or its inventory Secret (rv %q)", settings, parent)
				}
				return
			}
			if st[0].Result != "ok" {
				t.Fatalf("status %+v, want ok", st[0])
			}
			var changed []string
			for _, o := range objs {
				if liveRV(t, dyn, o) != before[o.printed] {
					changed = append(changed, o.printed)
				}
			}
			var want []string
			for _, o := range objs {
				if tc.declare(o) {
					want = append(want, o.printed)
				}
			}
			if diff := cmp.Diff(want, changed); diff != "" {
				t.Errorf("objects written with installsSyncd (-want +got):\n%s", diff)
			}
			if settings == "" || parent == "" {
				t.Errorf("the app's ConfigMap (rv %q) or its inventory Secret (rv %q) is missing", settings, parent)
			}
		})
	}
}

func createLive(t *testing.T, dyn dynamic.Interface, o ownObject) {
	t.Helper()
	u := &unstructured.Unstructured{}
	if err := yaml.Unmarshal([]byte(o.live), &u.Object); err != nil {
		t.Fatal(err)
	}
	if _, err := resourceOf(dyn, o).Create(context.Background(), u, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create %s: %v", o.printed, err)
	}
	if o.ns == "" {
		t.Cleanup(func() { _ = resourceOf(dyn, o).Delete(context.Background(), o.name, metav1.DeleteOptions{}) })
	}
}

// liveRV returns the object's resourceVersion, "" when it does not exist.
func liveRV(t *testing.T, dyn dynamic.Interface, o ownObject) string {
	t.Helper()
	u, err := resourceOf(dyn, o).Get(context.Background(), o.name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return ""
	case err != nil:
		t.Fatal(err)
	}
	return u.GetResourceVersion()
}

func resourceOf(dyn dynamic.Interface, o ownObject) dynamic.ResourceInterface {
	if o.ns == "" {
		return dyn.Resource(o.gvr)
	}
	return dyn.Resource(o.gvr).Namespace(o.ns)
}
