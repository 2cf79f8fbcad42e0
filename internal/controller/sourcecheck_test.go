package controller

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"syncd.dev/syncd/internal/api/v1alpha1"
)

// sourceReady waits until the GitSource's Ready condition is want
// ("<status> <reason>") and returns it.
func (r *rig) sourceReady(name, want string) metav1.Condition {
	r.t.Helper()
	src := r.waitSourceOf(v1alpha1.KindGitSource, name, want)
	for _, c := range src.conditions() {
		if c.Type == string(v1alpha1.ConditionReady) {
			return c
		}
	}
	r.t.Fatalf("GitSource %s has no Ready condition", name)
	return metav1.Condition{}
}

// TestSourceCheckReadsAsItsApps: a GitSource's check reads its Secret as
// the Apps using it read it, so that its status tells the team no more
// than the account their Apps run as may read. Two GitSources name a
// Secret the account may not read: one that exists (with the token key
// a GitSource needs) and one that does not. Their statuses are the same
// but for the names: no App uses them yet (not read at all, or, with a
// default service account, read as it and refused), and once Apps
// running as the account use them (refused naming the account and what
// to grant). Granted get on the Secret that exists, its GitSource is
// Ready, read as the account, with nothing else changed (the refused
// check is retried), and its App applies.
func TestSourceCheckReadsAsItsApps(t *testing.T) {
	tests := map[string]struct {
		tenancy Tenancy
		// sa is the App's spec.serviceAccountName.
		sa string
		// unused is the Ready condition of a GitSource no App uses.
		unused string
	}{
		"service account of the Apps":            {sa: "deployer", unused: "True " + string(v1alpha1.ReasonValid)},
		"default service account of a namespace": {tenancy: Tenancy{DefaultServiceAccount: "deployer"}, unused: "False " + string(v1alpha1.ReasonSecretNotFound)},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			r := newRigWith(t, "1h", Options{Tenancy: tc.tenancy})
			ctx := context.Background()
			err := env.Grant(ctx, r.ns, "deployer", r.ns, []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get", "list", "watch", "create", "update", "patch", "delete"}}})
			if err != nil {
				t.Fatal(err)
			}
			secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "platform-api"}, StringData: map[string]string{"token": "platform-api-token-value"}}
			if _, err := env.Clientset(t).CoreV1().Secrets(r.ns).Create(ctx, secret, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			probes := map[string]string{"present": "platform-api", "absent": "no-such-secret"}
			apps := map[string]string{"present": "web", "absent": "api"}
			for probe, secret := range probes {
				r.create("gitsources", fmt.Sprintf(`
kind: GitSource
metadata: {name: %s}
spec: {url: %q, branch: main, interval: 1h, secretRef: {name: %s}}`, probe, r.repo.URL, secret))
			}
			// same is a condition with the names of the probe, its
			// Secret and its App taken out: what tells one probe from
			// the other.
			same := func(probe string, c metav1.Condition) string {
				msg := strings.NewReplacer(probes[probe], "SECRET", r.ns+"/"+apps[probe], "NS/APP", probe, "PROBE").Replace(c.Message)
				return fmt.Sprintf("%s %s: %s", c.Status, c.Reason, msg)
			}
			// checkSame waits until both probes' Ready conditions are
			// want and say every one of says, then compares them.
			checkSame := func(when, want string, says ...string) {
				t.Helper()
				got := map[string]string{}
				eventually(t, when+": both GitSources "+want+" saying "+strings.Join(says, ", "), func() (bool, string) {
					for probe := range probes {
						got[probe] = same(probe, r.sourceReady(probe, want))
						for _, s := range says {
							if !strings.Contains(got[probe], s) {
								return false, probe + ": " + got[probe]
							}
						}
					}
					return true, ""
				})
				if diff := cmp.Diff(got["absent"], got["present"]); diff != "" {
					t.Errorf("%s: the GitSource whose Secret exists tells it from the one whose Secret does not (-absent +present):\n%s", when, diff)
				}
			}
			account := "system:serviceaccount:" + r.ns + ":deployer"
			refusal := []string{"cannot be read as " + account, "grant it get on Secret SECRET"}
			if tc.unused == "True "+string(v1alpha1.ReasonValid) {
				checkSame("no App uses them", tc.unused, "its Secrets are not read until an App uses the source")
			} else {
				checkSame("no App uses them", tc.unused, append(refusal, "the default service account")...)
			}

			sa := ""
			if tc.sa != "" {
				sa = ", serviceAccountName: " + tc.sa
			}
			for probe, app := range apps {
				r.create("apps", fmt.Sprintf(`
kind: App
metadata: {name: %s}
spec: {sourceRef: {kind: GitSource, name: %s}, path: %s%s}`, app, probe, app, sa))
			}
			checkSame("Apps running as the account use them", "False "+string(v1alpha1.ReasonSecretNotFound), append(refusal, "the service account App")...)

			// The grant alone (no App, Secret or source event): the
			// refused check is retried with backoff and sees it.
			r.grantSecret("deployer", "platform-api")
			c := r.sourceReady("present", "True "+string(v1alpha1.ReasonValid))
			if want := "read as " + account; !strings.Contains(c.Message, want) {
				t.Errorf("GitSource present after the grant: Ready = %q; want it to say %q", c.Message, want)
			}
			// The App, refused as often as events came, may be minutes
			// from its next retry: a request runs it now.
			r.patchApp("web", `{"metadata":{"annotations":{"`+v1alpha1.RequestedAtAnnotation+`":"granted"}}}`)
			r.waitReady("web", r.sha)
		})
	}
}

// TestAssumedCredentials: a GitSource whose Secrets are not read is
// checked with the credentials its URL needs, so that only what no
// Secret could fix is refused.
func TestAssumedCredentials(t *testing.T) {
	const unread = "/nonexistent/unread"
	tests := map[string]struct {
		spec v1alpha1.GitSourceSpec
		want Credentials
	}{
		"https with a Secret": {spec: v1alpha1.GitSourceSpec{URL: "https://git.example.com/a.git", SecretRef: &v1alpha1.LocalObjectReference{Name: "s"}}, want: Credentials{TokenFile: unread}},
		"ssh URL":             {spec: v1alpha1.GitSourceSpec{URL: "ssh://git@git.example.com/a.git", SecretRef: &v1alpha1.LocalObjectReference{Name: "s"}}, want: Credentials{SSHKeyFile: unread, KnownHosts: unread}},
		"scp-like URL":        {spec: v1alpha1.GitSourceSpec{URL: "git@git.example.com:a.git", SecretRef: &v1alpha1.LocalObjectReference{Name: "s"}}, want: Credentials{SSHKeyFile: unread, KnownHosts: unread}},
		"verify only":         {spec: v1alpha1.GitSourceSpec{URL: "https://git.example.com/a.git", Verify: &v1alpha1.GitVerify{SecretRef: v1alpha1.LocalObjectReference{Name: "k"}}}, want: Credentials{KeysFile: unread}},
		"no Secret":           {spec: v1alpha1.GitSourceSpec{URL: "https://git.example.com/a.git"}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			src := Source{Git: &v1alpha1.GitSource{Spec: tc.spec}}
			if diff := cmp.Diff(tc.want, assumedCredentials(src)); diff != "" {
				t.Errorf("assumedCredentials (-want +got):\n%s", diff)
			}
		})
	}
}
