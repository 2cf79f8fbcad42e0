package reconcile_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"syncd.dev/syncd/internal/applier"
	"syncd.dev/syncd/internal/config"
	"syncd.dev/syncd/internal/drift"
	"syncd.dev/syncd/internal/identity"
	"syncd.dev/syncd/internal/inventory"
	"syncd.dev/syncd/internal/reconcile"
	"syncd.dev/syncd/internal/reconcile/reconciletest"
)

// TestImpersonation: an app with serviceAccountName runs as that account:
// an object outside its RBAC fails with Forbidden. With validation (the
// default) that refusal writes nothing of the stage; without it the
// other object is applied.
func TestImpersonation(t *testing.T) {
	no := false
	tests := map[string]struct {
		validate    *bool
		wantAllowed applier.Action
	}{
		"validated stage": {wantAllowed: applier.Skipped},
		"validate false":  {validate: &no, wantAllowed: applier.Created},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			allowed, denied := env.Namespace(t), env.Namespace(t)
			if _, err := env.ServiceAccountConfig(ctx, allowed, "deployer"); err != nil {
				t.Fatal(err)
			}
			if err := env.Grant(ctx, allowed, "deployer", allowed, []rbacv1.PolicyRule{{
				APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get", "list", "watch", "create", "patch"},
			}}); err != nil {
				t.Fatal(err)
			}
			repo := reconciletest.NewRepo(t)
			repo.Commit("two namespaces", map[string]string{
				"app/ok.yaml":     reconciletest.ConfigMap(allowed, "blue"),
				"app/denied.yaml": reconciletest.ConfigMap(denied, "blue"),
			})
			cl := cluster(t)
			cl.Config = env.Config
			cfg := &config.Config{APIVersion: config.APIVersion, Kind: config.Kind, File: "test"}
			app := config.App{Name: "tenant", Source: "repo", Namespace: allowed, AppSpec: config.AppSpec{Path: "app", ServiceAccountName: "deployer", Validate: tc.validate}}
			cfg.Apps = []config.App{app}
			runner, err := reconcile.New(cfg, cl, reconcile.Options{CacheDir: t.TempDir()})
			if err != nil {
				t.Fatal(err)
			}
			_, cs, err := runner.Apply(ctx, app, repo.Dir+"/app", false)
			if err != nil {
				t.Fatal(err)
			}
			got := map[string]applier.Action{}
			for _, c := range cs.Changes {
				got[c.Object.Namespace] = c.Action
				if c.Object.Namespace == denied && (c.Err == nil || !strings.Contains(c.Err.Error(), "forbidden") || !strings.Contains(c.Err.Error(), "system:serviceaccount:"+allowed+":deployer")) {
					t.Errorf("denied object's error does not say the service account was forbidden: %v", c.Err)
				}
			}
			want := map[string]applier.Action{allowed: tc.wantAllowed, denied: applier.Failed}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Fatalf("actions by namespace (-want +got):\n%s", diff)
			}
			if _, err := env.Clientset(t).CoreV1().ConfigMaps(denied).Get(ctx, "settings", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
				t.Fatalf("the object outside the account's RBAC exists (get error %v)", err)
			}
		})
	}
}

// tenantApp is the tenant's app, rendered from its repository's app
// directory.
func tenantApp(tn *reconciletest.Tenant) config.App {
	all := 100 // the tests prune one of two objects
	return config.App{Name: "tenant", Source: "repo", Namespace: tn.NS, AppSpec: config.AppSpec{Path: "app", ServiceAccountName: tn.SA, PruneBudget: &all}}
}

// tenantRunner is a Runner of the tenant's app alone.
func tenantRunner(t *testing.T, tn *reconciletest.Tenant) *reconcile.Runner {
	t.Helper()
	cfg := &config.Config{APIVersion: config.APIVersion, Kind: config.Kind, File: "test", Apps: []config.App{tenantApp(tn)}}
	r, err := reconcile.New(cfg, tn.Cluster, reconcile.Options{CacheDir: t.TempDir(), Inventory: tn.Inventory})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

var configMapVerbs = []string{"get", "list", "watch", "create", "patch"}

// TestTenantPrune: a tenant's prune runs as its service account. Without
// delete it is refused whole before anything is removed, naming the
// object and the verb, and the object stays; with delete it is pruned.
// The inventory Secret, in a namespace the account has no permission in,
// is written by syncd either way.
func TestTenantPrune(t *testing.T) {
	tests := map[string]struct {
		verbs      []string
		wantReason inventory.Reason
		wantStays  bool
	}{
		"create but no delete": {verbs: configMapVerbs, wantReason: inventory.ReasonForbidden, wantStays: true},
		"delete granted":       {verbs: append([]string{"delete"}, configMapVerbs...)},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			tn := reconciletest.NewTenant(t, env, rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: tc.verbs})
			runner := tenantRunner(t, tn)
			dir := t.TempDir()
			write := func(files map[string]string) {
				t.Helper()
				for f, text := range files {
					p := filepath.Join(dir, f)
					if text == "" {
						_ = os.Remove(p)
					} else if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
						t.Fatal(err)
					}
				}
			}
			write(map[string]string{"keep.yaml": reconciletest.NamedConfigMap(tn.NS, "keep", "blue"), "gone.yaml": reconciletest.NamedConfigMap(tn.NS, "gone", "blue")})
			if _, cs, err := runner.Apply(ctx, tenantApp(tn), dir, false); err != nil || !cs.OK() {
				t.Fatalf("first apply: %v %v", err, cs)
			}
			write(map[string]string{"gone.yaml": ""})
			rendered, _, err := runner.Apply(ctx, tenantApp(tn), dir, false)
			if err != nil {
				t.Fatalf("second apply: %v", err)
			}
			rep := rendered.Prune
			var gotReason inventory.Reason
			if rep.Refused != nil {
				gotReason = rep.Refused.Reason
			}
			if diff := cmp.Diff(tc.wantReason, gotReason); diff != "" {
				t.Fatalf("prune refusal (-want +got):\n%s\nreport: %s", diff, rep)
			}
			_, err = env.Clientset(t).CoreV1().ConfigMaps(tn.NS).Get(ctx, "gone", metav1.GetOptions{})
			if stays := err == nil; stays != tc.wantStays {
				t.Fatalf("ConfigMap gone still there = %v (get error %v), want %v", stays, err, tc.wantStays)
			}
			if tc.wantReason != "" {
				for _, want := range []string{tn.User(), "delete ConfigMap " + tn.NS + "/gone"} {
					if !strings.Contains(rep.Refused.Message, want) {
						t.Errorf("refusal %q does not name %q", rep.Refused.Message, want)
					}
				}
				if len(rep.Spared) != 1 || rep.Spared[0].Reason != inventory.ReasonForbidden || !strings.Contains(rep.Spared[0].Message, "may not delete") {
					t.Errorf("spared = %+v, want ConfigMap gone spared as forbidden", rep.Spared)
				}
			} else if len(rep.Deleted) != 1 || rep.Deleted[0].Name != "gone" {
				t.Errorf("deleted = %v, want ConfigMap gone", rep.Deleted)
			}
			// The account may not touch syncd's namespace: the
			// inventory Secret there was written as syncd.
			sa, err := env.ServiceAccountConfig(ctx, tn.NS, tn.SA)
			if err != nil {
				t.Fatal(err)
			}
			saClient, err := kubernetes.NewForConfig(sa)
			if err != nil {
				t.Fatal(err)
			}
			parent := inventory.ParentName(tenantApp(tn).Name)
			if _, err := saClient.CoreV1().Secrets(tn.InventoryNS).Get(ctx, parent, metav1.GetOptions{}); !apierrors.IsForbidden(err) {
				t.Fatalf("the account's read of the inventory Secret: %v, want forbidden", err)
			}
			inv, err := tn.Inventory.Load(ctx, tenantApp(tn).Name)
			if err != nil {
				t.Fatal(err)
			}
			wantMembers := 1
			if tc.wantStays {
				wantMembers = 2 // the spared object stays a member
			}
			if len(inv.Members) != wantMembers {
				t.Errorf("inventory members = %d, want %d", len(inv.Members), wantMembers)
			}
		})
	}
}

// TestTenantDriftUnreadable: a tenant's drift report reads as its service
// account: an object it may not read is a warning naming the account,
// with no finding and none of its values; its own object is compared as
// usual.
func TestTenantDriftUnreadable(t *testing.T) {
	ctx := context.Background()
	tn := reconciletest.NewTenant(t, env, rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: configMapVerbs})
	other := env.Namespace(t)
	admin := env.Clientset(t)
	// Another tenant's object, with a value this tenant must not learn.
	if _, err := admin.CoreV1().ConfigMaps(other).Create(ctx, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "settings"}, Data: map[string]string{"color": "other-tenants-secret-value"},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// Its own object, changed out of band afterwards: real drift.
	dir := t.TempDir()
	for f, text := range map[string]string{"own.yaml": reconciletest.NamedConfigMap(tn.NS, "own", "blue"), "theirs.yaml": reconciletest.NamedConfigMap(other, "settings", "blue")} {
		if err := os.WriteFile(filepath.Join(dir, f), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	runner := tenantRunner(t, tn)
	app := tenantApp(tn)
	rendered, err := runner.Render(ctx, app, dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := admin.CoreV1().ConfigMaps(tn.NS).Create(ctx, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "own"}, Data: map[string]string{"color": "green"},
	}, metav1.CreateOptions{FieldManager: "kubectl-edit"}); err != nil {
		t.Fatal(err)
	}

	// What syncd drift does for one app.
	dyn, err := runner.Dynamic(app)
	if err != nil {
		t.Fatal(err)
	}
	live, unreadable, err := drift.Live(ctx, dyn, tn.Cluster.Mapper, rendered.Plan)
	if err != nil {
		t.Fatal(err)
	}
	opts, err := reconcile.DriftOptions(app)
	if err != nil {
		t.Fatal(err)
	}
	opts.Unreadable = drift.Unreadable{By: identity.Name(reconcile.TenantOf(app)), Objects: unreadable}
	rep := drift.Detect(rendered.Plan, live, opts)

	var objects []string
	for _, f := range rep.Findings {
		objects = append(objects, f.Object.String())
	}
	if diff := cmp.Diff([]string{"ConfigMap " + tn.NS + "/own"}, slices.Compact(objects)); diff != "" {
		t.Errorf("objects with findings (-want +got):\n%s", diff)
	}
	wantWarn := "ConfigMap " + other + "/settings: not readable by " + tn.User()
	if len(rep.Warnings) != 1 || !strings.HasPrefix(rep.Warnings[0], wantWarn) {
		t.Errorf("warnings = %q, want one starting %q", rep.Warnings, wantWarn)
	}
	var text, js strings.Builder
	if err := rep.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	if err := rep.WriteJSON(&js); err != nil {
		t.Fatal(err)
	}
	for name, out := range map[string]string{"text": text.String(), "json": js.String()} {
		if strings.Contains(out, "other-tenants-secret-value") {
			t.Errorf("%s report shows the unreadable object's value:\n%s", name, out)
		}
		if !strings.Contains(out, "not readable by "+tn.User()) {
			t.Errorf("%s report does not say the object is not readable by the account:\n%s", name, out)
		}
	}
}
