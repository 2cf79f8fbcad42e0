package reconcile_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"

	"syncd.dev/syncd/internal/applier"
	"syncd.dev/syncd/internal/config"
	"syncd.dev/syncd/internal/drift"
	"syncd.dev/syncd/internal/identity"
	"syncd.dev/syncd/internal/inventory"
	"syncd.dev/syncd/internal/reconcile"
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
			repo := newRepo(t)
			repo.commit("two namespaces", map[string]string{
				"app/ok.yaml":     configMap(allowed, "blue"),
				"app/denied.yaml": configMap(denied, "blue"),
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
			_, cs, err := runner.Apply(ctx, app, repo.dir+"/app", false)
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

// tenant is a service account in its own namespace with rules there, and
// the clients syncd uses for an app running as it.
type tenant struct {
	ns, sa string
	cl     reconcile.Cluster
	inv    *inventory.Manager
	// invNS is syncd's own namespace, holding the inventory Secrets; the
	// account has no permission in it.
	invNS string
}

// newTenant makes the account, grants it rules in its namespace, and an
// inventory manager on syncd's identity whose Config lets tenants' member
// reads, watches and deletes run as them.
func newTenant(t *testing.T, rules ...rbacv1.PolicyRule) *tenant {
	t.Helper()
	ctx := context.Background()
	tn := &tenant{ns: env.Namespace(t), sa: "deployer", invNS: env.Namespace(t)}
	if _, err := env.ServiceAccountConfig(ctx, tn.ns, tn.sa); err != nil {
		t.Fatal(err)
	}
	if err := env.Grant(ctx, tn.ns, tn.sa, tn.ns, rules); err != nil {
		t.Fatal(err)
	}
	tn.cl = cluster(t)
	tn.cl.Config = env.Config
	md, err := metadata.NewForConfig(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	tn.inv, err = inventory.New(tn.cl.Dynamic, md, tn.cl.Mapper, inventory.Options{Namespace: tn.invNS, Config: env.Config, SyncTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(tn.inv.Stop)
	return tn
}

// app is the tenant's app, rendered from dir.
func (tn *tenant) app() config.App {
	all := 100 // the tests prune one of two objects
	return config.App{Name: "tenant", Source: "repo", Namespace: tn.ns, AppSpec: config.AppSpec{Path: "app", ServiceAccountName: tn.sa, PruneBudget: &all}}
}

func (tn *tenant) user() string { return "system:serviceaccount:" + tn.ns + ":" + tn.sa }

func (tn *tenant) runner(t *testing.T) *reconcile.Runner {
	t.Helper()
	cfg := &config.Config{APIVersion: config.APIVersion, Kind: config.Kind, File: "test", Apps: []config.App{tn.app()}}
	r, err := reconcile.New(cfg, tn.cl, reconcile.Options{CacheDir: t.TempDir(), Inventory: tn.inv})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func namedConfigMap(ns, name, color string) string {
	return fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: %s\n  namespace: %s\ndata:\n  color: %s\n", name, ns, color)
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
			tn := newTenant(t, rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: tc.verbs})
			runner := tn.runner(t)
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
			write(map[string]string{"keep.yaml": namedConfigMap(tn.ns, "keep", "blue"), "gone.yaml": namedConfigMap(tn.ns, "gone", "blue")})
			if _, cs, err := runner.Apply(ctx, tn.app(), dir, false); err != nil || !cs.OK() {
				t.Fatalf("first apply: %v %v", err, cs)
			}
			write(map[string]string{"gone.yaml": ""})
			rendered, _, err := runner.Apply(ctx, tn.app(), dir, false)
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
			_, err = env.Clientset(t).CoreV1().ConfigMaps(tn.ns).Get(ctx, "gone", metav1.GetOptions{})
			if stays := err == nil; stays != tc.wantStays {
				t.Fatalf("ConfigMap gone still there = %v (get error %v), want %v", stays, err, tc.wantStays)
			}
			if tc.wantReason != "" {
				for _, want := range []string{tn.user(), "delete ConfigMap " + tn.ns + "/gone"} {
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
			sa, err := env.ServiceAccountConfig(ctx, tn.ns, tn.sa)
			if err != nil {
				t.Fatal(err)
			}
			saClient, err := kubernetes.NewForConfig(sa)
			if err != nil {
				t.Fatal(err)
			}
			parent := inventory.ParentName(tn.app().Name)
			if _, err := saClient.CoreV1().Secrets(tn.invNS).Get(ctx, parent, metav1.GetOptions{}); !apierrors.IsForbidden(err) {
				t.Fatalf("the account's read of the inventory Secret: %v, want forbidden", err)
			}
			inv, err := tn.inv.Load(ctx, tn.app().Name)
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
	tn := newTenant(t, rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: configMapVerbs})
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
	for f, text := range map[string]string{"own.yaml": namedConfigMap(tn.ns, "own", "blue"), "theirs.yaml": namedConfigMap(other, "settings", "blue")} {
		if err := os.WriteFile(filepath.Join(dir, f), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	runner := tn.runner(t)
	app := tn.app()
	rendered, err := runner.Render(ctx, app, dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := admin.CoreV1().ConfigMaps(tn.ns).Create(ctx, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "own"}, Data: map[string]string{"color": "green"},
	}, metav1.CreateOptions{FieldManager: "kubectl-edit"}); err != nil {
		t.Fatal(err)
	}

	// What syncd drift does for one app.
	dyn, err := runner.Dynamic(app)
	if err != nil {
		t.Fatal(err)
	}
	live, unreadable, err := drift.Live(ctx, dyn, tn.cl.Mapper, rendered.Plan)
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
	if diff := cmp.Diff([]string{"ConfigMap " + tn.ns + "/own"}, slices.Compact(objects)); diff != "" {
		t.Errorf("objects with findings (-want +got):\n%s", diff)
	}
	wantWarn := "ConfigMap " + other + "/settings: not readable by " + tn.user()
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
		if !strings.Contains(out, "not readable by "+tn.user()) {
			t.Errorf("%s report does not say the object is not readable by the account:\n%s", name, out)
		}
	}
}

// TestTenantDriftWatch: the daemon's drift watch of a tenant app lists
// and watches as its service account. The account may not watch
// ConfigMaps: the error is logged for that app as the account, not
// served by syncd's own identity.
func TestTenantDriftWatch(t *testing.T) {
	tn := newTenant(t, rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get", "list", "create", "patch"}})
	repo := newRepo(t)
	repo.commit("one", map[string]string{"app/cm.yaml": configMap(tn.ns, "blue")})
	cfgPath := filepath.Join(t.TempDir(), "syncd.yaml")
	cfg := fmt.Sprintf(`apiVersion: syncd/v1alpha1
kind: Config
sources:
- name: repo
  git:
    url: file://%s
    branch: main
    interval: 1h
apps:
- name: tenant
  source: repo
  path: app
  namespace: %s
  serviceAccountName: %s
`, repo.dir, tn.ns, tn.sa)
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	d, logs := runLoggedDaemon(t, cfgPath, tn.cl, reconcile.Options{Inventory: tn.inv}, nil)
	eventually(t, "tenant app applied", func() (bool, string) {
		st := d.Status()
		return len(st) == 1 && st[0].Result == "ok", fmt.Sprintf("%+v", st)
	})
	eventually(t, "watch error logged for the tenant", func() (bool, string) {
		for _, line := range strings.Split(logs.String(), "\n") {
			if strings.Contains(line, `msg="drift watch"`) && strings.Contains(line, "app=tenant") &&
				strings.Contains(line, "as="+tn.user()) && strings.Contains(line, "forbidden") &&
				strings.Contains(line, `cannot watch resource \"configmaps\"`) {
				return true, ""
			}
		}
		return false, logs.String()
	})
}
