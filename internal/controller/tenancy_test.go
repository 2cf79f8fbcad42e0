package controller

import (
	"context"
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"syncd.dev/syncd/internal/api/v1alpha1"
)

// otherTeamApp creates, in a second namespace, an App rendering web/ of
// the rig's GitSource (in the rig's namespace); it returns the namespace.
func (r *rig) otherTeamApp(name string) string {
	r.t.Helper()
	ns := env.Namespace(r.t)
	u := object(r.t, fmt.Sprintf(`
kind: App
metadata: {name: %s}
spec: {sourceRef: {kind: GitSource, name: repo, namespace: %s}, path: web}`, name, r.ns))
	u.SetAPIVersion(v1alpha1.GroupVersion.String())
	if _, err := r.dyn.Resource(v1alpha1.AppResource).Namespace(ns).Create(context.Background(), u, metav1.CreateOptions{}); err != nil {
		r.t.Fatal(err)
	}
	return ns
}

// appIn reads an App of another namespace.
func (r *rig) appIn(ns, name string) (*v1alpha1.App, error) {
	u, err := r.dyn.Resource(v1alpha1.AppResource).Namespace(ns).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	return appFrom(u)
}

// TestCrossNamespaceSource: by default an App referencing a GitSource of
// another namespace is refused with a message naming the flag, and
// nothing is applied; with CrossNamespaceSources it is applied.
func TestCrossNamespaceSource(t *testing.T) {
	tests := map[string]struct {
		allow      bool
		wantReady  metav1.ConditionStatus
		wantReason v1alpha1.Reason
	}{
		"refused by default":  {wantReady: metav1.ConditionFalse, wantReason: v1alpha1.ReasonCrossNamespaceRef},
		"allowed by the flag": {allow: true, wantReady: metav1.ConditionTrue, wantReason: v1alpha1.ReasonSucceeded},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			r := newRigWith(t, "1h", Options{Tenancy: Tenancy{CrossNamespaceSources: tc.allow}})
			ns := r.otherTeamApp("web")
			var c *metav1.Condition
			eventually(t, "App "+ns+"/web "+string(tc.wantReason), func() (bool, string) {
				app, err := r.appIn(ns, "web")
				if err != nil {
					return false, err.Error()
				}
				c = ready(app)
				return c != nil && c.Reason == string(tc.wantReason), fmt.Sprintf("%+v", c)
			})
			if c.Status != tc.wantReady {
				t.Errorf("Ready = %+v, want %s", c, tc.wantReady)
			}
			_, err := env.Clientset(t).CoreV1().ConfigMaps(ns).Get(context.Background(), "web", metav1.GetOptions{})
			switch {
			case !tc.allow && !strings.Contains(c.Message, FlagCrossNamespaceSources):
				t.Errorf("the refusal does not name the flag %s: %s", FlagCrossNamespaceSources, c.Message)
			case !tc.allow && err == nil:
				t.Errorf("a refused App applied its ConfigMap")
			case tc.allow && err != nil:
				t.Errorf("ConfigMap web of the allowed App: %v", err)
			}
		})
	}
}

// TestDefaultServiceAccount: with a default service account, an App
// without serviceAccountName applies as that account of its namespace:
// refused while the account has no RBAC (the message names it), applied
// once a Role lets it write ConfigMaps. An App targeting another
// namespace under it is refused.
func TestDefaultServiceAccount(t *testing.T) {
	r := newRigWith(t, "1h", Options{Tenancy: Tenancy{DefaultServiceAccount: "deployer"}})
	ctx := context.Background()
	if _, err := env.ServiceAccountConfig(ctx, r.ns, "deployer"); err != nil {
		t.Fatal(err)
	}
	r.app("web", "web", "")
	r.app("elsewhere", "web", ", targetNamespace: kube-system")
	denied := r.waitApp("web", "refused as the service account", func(a *v1alpha1.App) bool {
		c := ready(a)
		return c != nil && c.Status == metav1.ConditionFalse
	})
	if c := ready(denied); !strings.Contains(c.Message, "system:serviceaccount:"+r.ns+":deployer") {
		t.Errorf("Ready = %+v, want a refusal naming the default service account", c)
	}
	if _, err := r.configMapValue("web"); err == nil {
		t.Errorf("ConfigMap web exists though the App's service account may not write it")
	}
	other := r.waitApp("elsewhere", "refused", func(a *v1alpha1.App) bool { c := ready(a); return c != nil && c.Status == metav1.ConditionFalse })
	if c := ready(other); c.Reason != string(v1alpha1.ReasonInvalidSpec) || !strings.Contains(c.Message, FlagDefaultServiceAccount) {
		t.Errorf("App elsewhere: Ready = %+v, want InvalidSpec naming %s", c, FlagDefaultServiceAccount)
	}
	err := env.Grant(ctx, r.ns, "deployer", r.ns, []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get", "list", "watch", "create", "update", "patch", "delete"}}})
	if err != nil {
		t.Fatal(err)
	}
	patch := []byte(`{"metadata":{"annotations":{"` + v1alpha1.RequestedAtAnnotation + `":"granted"}}}`)
	if _, err := r.dyn.Resource(v1alpha1.AppResource).Namespace(r.ns).Patch(ctx, "web", types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	r.waitReady("web", r.sha)
	cm, err := env.Clientset(t).CoreV1().ConfigMaps(r.ns).Get(ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	managers := map[string]bool{}
	for _, mf := range cm.ManagedFields {
		managers[mf.Manager] = true
	}
	if !managers["syncd-"+AppName(r.ns, "web")] {
		t.Errorf("ConfigMap web managers = %v, want syncd-%s", managers, AppName(r.ns, "web"))
	}
}

// TestSubstituteFromReadAsServiceAccount: an App with serviceAccountName
// reads its substituteFrom Secret as that account. An account that may
// write ConfigMaps but not read Secrets cannot copy a Secret of its
// namespace into a ConfigMap through syncd's identity: the App is
// refused naming the account and what to do, and nothing is applied;
// once the account may read the Secret, the value is applied.
func TestSubstituteFromReadAsServiceAccount(t *testing.T) {
	r := newRig(t, "1h")
	ctx := context.Background()
	_, err := env.ServiceAccountConfig(ctx, r.ns, "deployer")
	if err != nil {
		t.Fatal(err)
	}
	cmRights := rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get", "list", "watch", "create", "update", "patch", "delete"}}
	if err := env.Grant(ctx, r.ns, "deployer", r.ns, []rbacv1.PolicyRule{cmRights}); err != nil {
		t.Fatal(err)
	}
	next, err := r.repo.Commit("substituted", map[string][]byte{"web/cm.yaml": []byte(configMap("web", "${TOKEN}"))})
	if err != nil {
		t.Fatal(err)
	}
	const token = "platform-only-token-value"
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "platform-token"}, StringData: map[string]string{"TOKEN": token}}
	if _, err := env.Clientset(t).CoreV1().Secrets(r.ns).Create(ctx, secret, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	r.app("web", "web", ", serviceAccountName: deployer, substituteFrom: [{kind: Secret, name: platform-token}], sensitive: [{kinds: [ConfigMap], paths: [.data.value]}]")
	denied := r.waitApp("web", "refused", func(a *v1alpha1.App) bool {
		c := ready(a)
		return c != nil && c.Status == metav1.ConditionFalse
	})
	c := ready(denied)
	for _, s := range []string{"substituteFrom[0] (Secret " + r.ns + "/platform-token)", "read as system:serviceaccount:" + r.ns + ":deployer", "grant that account get on it"} {
		if !strings.Contains(c.Message, s) {
			t.Errorf("Ready = %s: %s; want it to say %q", c.Reason, c.Message, s)
		}
	}
	if v, err := r.configMapValue("web"); err == nil {
		t.Errorf("ConfigMap web was applied with the Secret's value (%q) though the App's service account may not read it", v)
	}
	r.grantSecret("deployer", "platform-token")
	r.patchApp("web", `{"metadata":{"annotations":{"`+v1alpha1.RequestedAtAnnotation+`":"granted"}}}`)
	r.waitReady("web", next)
	if v, err := r.configMapValue("web"); err != nil || v != token {
		t.Errorf("ConfigMap web after the grant: %v (value equal: %v), want the Secret's value", err, v == token)
	}
}

// TestSourceSecretsReadAsServiceAccount: an App with serviceAccountName
// reads its GitSource's secretRef and its decryption Secret as that
// account. An account that may not read a Secret of its namespace cannot
// have syncd send it to a Git server of the team's choosing (as a token)
// or decrypt with it: each App is refused (SecretNotFound) naming the
// account and what to grant, before any request to the Git server; once
// the account may read the Secret, the App with the GitSource is Ready.
func TestSourceSecretsReadAsServiceAccount(t *testing.T) {
	r := newRig(t, "1h")
	ctx := context.Background()
	_, err := env.ServiceAccountConfig(ctx, r.ns, "deployer")
	if err != nil {
		t.Fatal(err)
	}
	cmRights := rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get", "list", "watch", "create", "update", "patch", "delete"}}
	if err := env.Grant(ctx, r.ns, "deployer", r.ns, []rbacv1.PolicyRule{cmRights}); err != nil {
		t.Fatal(err)
	}
	cs := env.Clientset(t)
	for name, data := range map[string]map[string]string{"platform-api": {"token": "platform-api-token-value"}, "platform-keys": {"keys": "AGE-SECRET-KEY-NOT-THE-TEAMS"}} {
		if _, err := cs.CoreV1().Secrets(r.ns).Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name}, StringData: data}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	r.create("gitsources", fmt.Sprintf(`
kind: GitSource
metadata: {name: private}
spec: {url: %q, branch: main, interval: 1h, secretRef: {name: platform-api}}`, r.repo.URL))
	requests := r.srv.Requests()
	r.create("apps", `
kind: App
metadata: {name: web}
spec: {sourceRef: {kind: GitSource, name: private}, path: web, serviceAccountName: deployer}`)
	r.create("apps", `
kind: App
metadata: {name: api}
spec: {sourceRef: {kind: GitSource, name: repo}, path: api, serviceAccountName: deployer, decryption: {provider: sops, secretRef: {name: platform-keys}}}`)
	for app, secret := range map[string]string{"web": "platform-api", "api": "platform-keys"} {
		refused := r.waitApp(app, "refused", func(a *v1alpha1.App) bool {
			c := ready(a)
			return c != nil && c.Status == metav1.ConditionFalse && c.Reason == string(v1alpha1.ReasonSecretNotFound)
		})
		c := ready(refused)
		for _, s := range []string{"Secret " + secret + " cannot be read as system:serviceaccount:" + r.ns + ":deployer", "grant it get on Secret " + secret} {
			if !strings.Contains(c.Message, s) {
				t.Errorf("App %s: Ready = %s: %s; want it to say %q", app, c.Reason, c.Message, s)
			}
		}
	}
	if got := r.srv.Requests(); got != requests {
		t.Errorf("the Git server had %d requests while the Apps were refused, want none", got-requests)
	}

	r.grantSecret("deployer", "platform-api")
	r.patchApp("web", `{"metadata":{"annotations":{"`+v1alpha1.RequestedAtAnnotation+`":"granted"}}}`)
	r.waitReady("web", r.sha)
}

// grantSecret lets the service account sa of the rig's namespace get
// Secret name (a Role with resourceNames and its RoleBinding) and waits
// until it may; revoke takes the grant back and waits until it may not.
func (r *rig) grantSecret(sa, name string) (revoke func()) {
	r.t.Helper()
	ctx := context.Background()
	saCfg, err := env.ServiceAccountConfig(ctx, r.ns, sa)
	if err != nil {
		r.t.Fatal(err)
	}
	asSA, err := kubernetes.NewForConfig(saCfg)
	if err != nil {
		r.t.Fatal(err)
	}
	cs := env.Clientset(r.t)
	role := "read-" + name
	_, err = cs.RbacV1().Roles(r.ns).Create(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: role},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"secrets"}, ResourceNames: []string{name}, Verbs: []string{"get"}}}}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		r.t.Fatal(err)
	}
	binding := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: role},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: role},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: r.ns, Name: sa}}}
	if _, err := cs.RbacV1().RoleBindings(r.ns).Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		r.t.Fatal(err)
	}
	readable := func() error {
		_, err := asSA.CoreV1().Secrets(r.ns).Get(ctx, name, metav1.GetOptions{})
		return err
	}
	eventually(r.t, sa+" may read Secret "+name, func() (bool, string) {
		err := readable()
		return !apierrors.IsForbidden(err), fmt.Sprint(err)
	})
	return func() {
		r.t.Helper()
		if err := cs.RbacV1().RoleBindings(r.ns).Delete(ctx, role, metav1.DeleteOptions{}); err != nil {
			r.t.Fatal(err)
		}
		eventually(r.t, sa+" may no longer read Secret "+name, func() (bool, string) {
			err := readable()
			return apierrors.IsForbidden(err), fmt.Sprint(err)
		})
	}
}
