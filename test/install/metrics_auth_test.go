package install

import (
	"context"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestMetricsAuthRights installs manifests/ and checks, as the
// ServiceAccount syncd-system/syncd, what --secure-status does: review a
// Prometheus token (TokenReview), and ask whether its user may get
// /metrics and /status (SubjectAccessReview) — allowed once the user is
// bound to syncd-metrics-reader, and only for those two paths.
func TestMetricsAuthRights(t *testing.T) {
	installBase(t)
	ctx := context.Background()
	_, syncdCS, _ := saClients(t, "syncd-system", "syncd")
	ns := env.Namespace(t)
	promCfg, err := env.ServiceAccountConfig(ctx, ns, "prometheus")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := env.ServiceAccountConfig(ctx, ns, "nosy"); err != nil {
		t.Fatal(err)
	}
	_, err = env.Clientset(t).RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "syncd-metrics-reader-" + ns},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "syncd-metrics-reader"},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: ns, Name: "prometheus"}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = env.Clientset(t).RbacV1().ClusterRoleBindings().Delete(context.Background(), "syncd-metrics-reader-"+ns, metav1.DeleteOptions{})
	})

	tr, err := syncdCS.AuthenticationV1().TokenReviews().Create(ctx, &authenticationv1.TokenReview{Spec: authenticationv1.TokenReviewSpec{Token: promCfg.BearerToken}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("syncd creates a TokenReview: %v", err)
	}
	if want := "system:serviceaccount:" + ns + ":prometheus"; !tr.Status.Authenticated || tr.Status.User.Username != want {
		t.Fatalf("TokenReview: authenticated %v as %q, want %s", tr.Status.Authenticated, tr.Status.User.Username, want)
	}

	may := func(user, verb, path string) (bool, error) {
		sar, err := syncdCS.AuthorizationV1().SubjectAccessReviews().Create(ctx, &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
			User:                  "system:serviceaccount:" + ns + ":" + user,
			Groups:                []string{"system:serviceaccounts", "system:serviceaccounts:" + ns, "system:authenticated"},
			NonResourceAttributes: &authorizationv1.NonResourceAttributes{Path: path, Verb: verb},
		}}, metav1.CreateOptions{})
		if err != nil {
			return false, err
		}
		return sar.Status.Allowed, nil
	}
	got := map[string]bool{}
	for _, c := range []struct{ user, verb, path string }{
		{"prometheus", "get", "/metrics"}, {"prometheus", "get", "/status"},
		{"prometheus", "post", "/status"}, {"prometheus", "get", "/webhook/github"},
		{"nosy", "get", "/metrics"}, {"nosy", "get", "/status"},
	} {
		ok, err := may(c.user, c.verb, c.path)
		if err != nil {
			t.Fatalf("syncd creates a SubjectAccessReview: %v", err)
		}
		got[fmt.Sprintf("%s %s %s", c.user, c.verb, c.path)] = ok
	}
	want := map[string]bool{
		"prometheus get /metrics": true, "prometheus get /status": true,
		"prometheus post /status": false, "prometheus get /webhook/github": false,
		"nosy get /metrics": false, "nosy get /status": false,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("SubjectAccessReview answers (-want +got):\n%s", diff)
	}

	// The reviews are all syncd may do with them: no reading other
	// identities' tokens.
	_, err = syncdCS.CoreV1().ServiceAccounts(ns).CreateToken(ctx, "prometheus", &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
	if err == nil {
		t.Errorf("syncd can mint tokens for other ServiceAccounts")
	} else if !apierrors.IsForbidden(err) {
		t.Errorf("minting a token: got %v, want Forbidden", err)
	}
}
