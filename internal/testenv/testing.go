package testenv

import (
	"context"
	"fmt"
	"os"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	_ "syncd.dev/syncd/internal/decrypt/sopsfile" // a render child of a test binary reads SOPS files
	"syncd.dev/syncd/internal/egress"
	"syncd.dev/syncd/internal/renderproc"
)

// Main starts one control plane for a test package, stores it in *env, runs
// the package's tests and stops it. Call it from TestMain:
//
//	var env *testenv.Env
//	func TestMain(m *testing.M) { testenv.Main(m, testenv.Options{}, &env) }
//
// A process the package's tests started as a render child (package
// renderproc: syncd runs each render in a child process of its own
// binary, here the test binary) renders and exits first, as in syncd's
// main. Then it installs the network block syncd's main installs
// (ForbidNetwork), so the package's tests run in a process like the one
// users run. A missing binary fails the package with the command that
// builds it.
func Main(m *testing.M, opts Options, env **Env) {
	renderproc.Main()
	ForbidNetwork()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	e, err := Start(ctx, opts)
	cancel()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	*env = e
	code := m.Run()
	if err := e.Stop(); err != nil {
		fmt.Fprintln(os.Stderr, "testenv: stop:", err)
	}
	os.Exit(code)
}

// Clientset returns a typed clientset with admin rights.
func (e *Env) Clientset(t testing.TB) kubernetes.Interface {
	t.Helper()
	cs, err := kubernetes.NewForConfig(e.Config)
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

var nsCounter atomic.Int64

var nonDNS = regexp.MustCompile(`[^a-z0-9-]+`)

// Namespace creates a fresh namespace named after the test and deletes it
// when the test ends.
func (e *Env) Namespace(t testing.TB) string {
	t.Helper()
	base := strings.Trim(nonDNS.ReplaceAllString(strings.ToLower(t.Name()), "-"), "-")
	if len(base) > 40 {
		base = strings.Trim(base[len(base)-40:], "-")
	}
	name := fmt.Sprintf("%s-%d", base, nsCounter.Add(1))
	cs := e.Clientset(t)
	ctx := context.Background()
	_, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create namespace %s: %v", name, err)
	}
	t.Cleanup(func() {
		_ = cs.CoreV1().Namespaces().Delete(context.Background(), name, metav1.DeleteOptions{})
	})
	return name
}

// ServiceAccountConfig returns a client config authenticated as the service
// account namespace/name (created if missing) with a short-lived token from
// the TokenRequest API. The account starts with no rights; give it some
// with Grant. Requests made with it pass through real authentication and
// RBAC.
func (e *Env) ServiceAccountConfig(ctx context.Context, namespace, name string) (*rest.Config, error) {
	cs, err := kubernetes.NewForConfig(e.Config)
	if err != nil {
		return nil, err
	}
	_, err = cs.CoreV1().ServiceAccounts(namespace).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return nil, fmt.Errorf("testenv: create service account %s/%s: %w", namespace, name, err)
	}
	expiry := int64(3600)
	tok, err := cs.CoreV1().ServiceAccounts(namespace).CreateToken(ctx, name, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &expiry},
	}, metav1.CreateOptions{})
	if err != nil {
		return nil, fmt.Errorf("testenv: token for %s/%s: %w", namespace, name, err)
	}
	cfg := rest.AnonymousClientConfig(e.Config)
	cfg.BearerToken = tok.Status.Token
	return cfg, nil
}

// Grant gives the service account namespace/name the rules in namespace
// ruleNS (a Role and RoleBinding), or cluster-wide when ruleNS is empty (a
// ClusterRole and ClusterRoleBinding).
func (e *Env) Grant(ctx context.Context, namespace, name, ruleNS string, rules []rbacv1.PolicyRule) error {
	if err := e.bind(ctx, namespace, name, ruleNS, rules); err != nil {
		return err
	}
	return e.awaitGrant(ctx, namespace, name, ruleNS, rules)
}

// bind creates the role and its binding of Grant.
func (e *Env) bind(ctx context.Context, namespace, name, ruleNS string, rules []rbacv1.PolicyRule) error {
	cs, err := kubernetes.NewForConfig(e.Config)
	if err != nil {
		return err
	}
	subject := rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Namespace: namespace, Name: name}
	roleName := fmt.Sprintf("testenv-%s-%s", namespace, name)
	if ruleNS == "" {
		if _, err := cs.RbacV1().ClusterRoles().Create(ctx, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: roleName}, Rules: rules}, metav1.CreateOptions{}); err != nil {
			return err
		}
		_, err = cs.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: roleName},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: roleName},
			Subjects:   []rbacv1.Subject{subject},
		}, metav1.CreateOptions{})
		return err
	}
	if _, err := cs.RbacV1().Roles(ruleNS).Create(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: roleName}, Rules: rules}, metav1.CreateOptions{}); err != nil {
		return err
	}
	_, err = cs.RbacV1().RoleBindings(ruleNS).Create(ctx, &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: roleName},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: roleName},
		Subjects:   []rbacv1.Subject{subject},
	}, metav1.CreateOptions{})
	return err
}

// awaitGrant waits until the API server's authorizer allows the service
// account the first verb on the first resource (and object, when the rule
// names objects) of the first rule: a new
// binding reaches the RBAC authorizer's cache a moment after it is
// created, and a request in between is refused.
func (e *Env) awaitGrant(ctx context.Context, namespace, name, ruleNS string, rules []rbacv1.PolicyRule) error {
	if len(rules) == 0 || len(rules[0].Verbs) == 0 || len(rules[0].Resources) == 0 || len(rules[0].APIGroups) == 0 {
		return nil
	}
	cs, err := kubernetes.NewForConfig(e.Config)
	if err != nil {
		return err
	}
	r := rules[0]
	resource, sub, _ := strings.Cut(r.Resources[0], "/")
	var object string
	if len(r.ResourceNames) > 0 {
		object = r.ResourceNames[0]
	}
	review := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
		User:               "system:serviceaccount:" + namespace + ":" + name,
		Groups:             []string{"system:serviceaccounts", "system:serviceaccounts:" + namespace},
		ResourceAttributes: &authorizationv1.ResourceAttributes{Namespace: ruleNS, Verb: r.Verbs[0], Group: r.APIGroups[0], Resource: resource, Subresource: sub, Name: object},
	}}
	deadline := time.Now().Add(30 * time.Second)
	for {
		got, err := cs.AuthorizationV1().SubjectAccessReviews().Create(ctx, review, metav1.CreateOptions{})
		if err != nil {
			return err
		}
		if got.Status.Allowed {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("grant to %s/%s: %s %s.%s still refused after 30 s: %s", namespace, name, r.Verbs[0], r.Resources[0], r.APIGroups[0], got.Status.Reason)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// WriteKubeconfig writes a kubeconfig for cfg (token auth) to path, for
// running syncd's commands as that identity.
func WriteKubeconfig(cfg *rest.Config, path string) error {
	return clientcmd.WriteToFile(kubeconfigFor(cfg, "user"), path)
}

// StartT starts another control plane for one test, e.g. a second
// cluster for remote-cluster tests, and stops it when the test ends.
// Each costs an etcd and a kube-apiserver: start one per test file and
// share it between subtests.
func StartT(t testing.TB, opts Options) *Env {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	e, err := Start(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := e.Stop(); err != nil {
			t.Errorf("testenv: stop: %v", err)
		}
	})
	return e
}

// ForbidNetwork installs, for the whole test binary, the network block
// syncd's main installs (egress.Forbid): http.DefaultTransport refuses
// every request and git may use no protocol. A client that falls back on
// the default transport then fails in the tests exactly as it fails in
// the built binary. Call it from TestMain, before any test starts; tests
// reach their own loopback servers through egress.Client or a server's
// Client. Main calls it.
func ForbidNetwork() {
	if _, err := egress.Forbid(); err != nil {
		fmt.Fprintln(os.Stderr, "testenv:", err)
		os.Exit(1)
	}
}
