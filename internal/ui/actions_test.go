package ui

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"

	"syncd.dev/syncd/internal/api/v1alpha1"
	"syncd.dev/syncd/internal/appedit"
)

// TestActions: the App page's buttons make the edits of syncd
// suspend/resume/reconcile app with the credentials the UI has: suspend
// sets spec.suspend under syncd-cli and sends the browser back to the
// App page with what it did; reconcile of a suspended App is refused
// with the command's message; a form without the server's token or from
// another Origin is refused; a user whose RBAC may read Apps but not
// patch them gets the API server's message; a read-only UI refuses the
// POST.
func TestActions(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	shop := AppRef{Namespace: f.ns, Name: "shop"}
	admin := f.uiWith(t, f.cluster.Dynamic, true)

	token := csrfOf(t, admin, shop)
	code, loc, body := post(t, admin, url.Values{"csrf": {token}, "ns": {f.ns}, "app": {"shop"}, "action": {"suspend"}}, "")
	if code != http.StatusSeeOther || !strings.HasPrefix(loc, "/app?") {
		t.Fatalf("suspend: %d to %q, want 303 to the App page:\n%s", code, loc, body)
	}
	app := f.shopApp(t, ctx, f.cluster.Dynamic)
	if suspend, _, _ := unstructured.NestedBool(app.Object, "spec", "suspend"); !suspend {
		t.Errorf("after the suspend button the App has spec.suspend false")
	}
	if !managedBy(app, appedit.Manager.String()) {
		t.Errorf("the suspend was not written by %s: %v", appedit.Manager, app.GetManagedFields())
	}
	if _, page, _ := httpGet(t, admin.Client(), admin.URL+loc); !strings.Contains(page, "App "+shop.String()+" suspended") {
		t.Errorf("the App page after the redirect does not say the App was suspended:\n%s", page)
	}

	tests := map[string]struct {
		form   url.Values
		origin string
		srv    func() string
		want   int
		say    string
	}{
		"reconcile of a suspended App": {form: url.Values{"csrf": {token}, "ns": {f.ns}, "app": {"shop"}, "action": {"reconcile"}},
			want: http.StatusConflict, say: "is suspended (spec.suspend: true)"},
		"no token":       {form: url.Values{"ns": {f.ns}, "app": {"shop"}, "action": {"resume"}}, want: http.StatusForbidden, say: "did not come from this UI"},
		"another origin": {form: url.Values{"csrf": {token}, "ns": {f.ns}, "app": {"shop"}, "action": {"resume"}}, origin: "http://evil.example", want: http.StatusForbidden, say: "did not come from this UI"},
		"a file app":     {form: url.Values{"csrf": {token}, "app": {f.app.Name}, "action": {"resume"}}, want: http.StatusBadRequest},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			code, _, body := post(t, admin, tc.form, tc.origin)
			if code != tc.want || !strings.Contains(body, tc.say) {
				t.Errorf("status %d, want %d saying %q:\n%s", code, tc.want, tc.say, body)
			}
		})
	}

	t.Run("a user who may not patch Apps", func(t *testing.T) {
		cfg, err := env.ServiceAccountConfig(ctx, f.ns, "ui-viewer")
		if err != nil {
			t.Fatal(err)
		}
		read := []rbacv1.PolicyRule{{APIGroups: []string{v1alpha1.GroupVersion.Group}, Resources: []string{"apps"}, Verbs: []string{"get", "list", "watch"}}}
		if err := env.Grant(ctx, f.ns, "ui-viewer", "", read); err != nil {
			t.Fatal(err)
		}
		viewer := f.uiWith(t, dynamic.NewForConfigOrDie(cfg), true)
		code, _, body := post(t, viewer, url.Values{"csrf": {csrfOf(t, viewer, shop)}, "ns": {f.ns}, "app": {"shop"}, "action": {"resume"}}, "")
		if code != http.StatusForbidden || !strings.Contains(body, `cannot patch resource &#34;apps&#34; in API group &#34;syncd.dev&#34;`) {
			t.Errorf("resume as ui-viewer: %d, want 403 with the API server's message:\n%s", code, body)
		}
		if suspend, _, _ := unstructured.NestedBool(f.shopApp(t, ctx, f.cluster.Dynamic).Object, "spec", "suspend"); !suspend {
			t.Errorf("the refused resume changed the App")
		}
	})

	t.Run("a read-only UI", func(t *testing.T) {
		if _, page, _ := f.get(t, appURLOf(shop)); strings.Contains(page, `action="/action"`) {
			t.Errorf("the read-only UI's App page has buttons")
		}
		code, _, _ := post(t, f.httpSrv, url.Values{"csrf": {token}, "ns": {f.ns}, "app": {"shop"}, "action": {"resume"}}, "")
		if code != http.StatusMethodNotAllowed {
			t.Errorf("a POST to the read-only UI: %d, want 405", code)
		}
	})
}

// shopApp reads the fixture's App shop.
func (f *fixture) shopApp(t *testing.T, ctx context.Context, dyn dynamic.Interface) *unstructured.Unstructured {
	t.Helper()
	u, err := dyn.Resource(v1alpha1.AppResource).Namespace(f.ns).Get(ctx, "shop", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return u
}

func managedBy(u *unstructured.Unstructured, manager string) bool {
	for _, e := range u.GetManagedFields() {
		if e.Manager == manager {
			return true
		}
	}
	return false
}

var csrfInput = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

// csrfOf reads the token of the App page's forms.
func csrfOf(t *testing.T, srv *httptest.Server, app AppRef) string {
	t.Helper()
	code, page, _ := httpGet(t, srv.Client(), srv.URL+appURLOf(app))
	m := csrfInput.FindStringSubmatch(page)
	if code != http.StatusOK || m == nil {
		t.Fatalf("the App page of %s (%d) has no form token:\n%s", app, code, page)
	}
	return m[1]
}
