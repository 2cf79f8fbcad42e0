package controller

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"syncd.dev/syncd/internal/alert"
	"syncd.dev/syncd/internal/api/v1alpha1"
)

// alertReceiver is a loopback HTTP endpoint that keeps the bodies
// posted to it; with a key it checks each body's webhook signature and
// refuses what does not verify.
type alertReceiver struct {
	t   *testing.T
	url string
	key []byte

	mu     sync.Mutex
	bodies []string
}

// newAlertReceiver starts a receiver on loopback until the test ends.
func newAlertReceiver(t *testing.T, key []byte) *alertReceiver {
	rcv := &alertReceiver{t: t, key: key}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if rcv.key != nil {
			if err := alert.VerifyWebhook(rcv.key, r.Header, body, time.Now(), 0); err != nil {
				rcv.t.Errorf("webhook signature: %v", err)
				w.WriteHeader(http.StatusUnauthorized)
				return
			}
		}
		rcv.mu.Lock()
		rcv.bodies = append(rcv.bodies, string(body))
		rcv.mu.Unlock()
	}))
	t.Cleanup(srv.Close)
	rcv.url = srv.URL + "/hook/s3cr3t-path"
	return rcv
}

// received returns the bodies posted so far.
func (rcv *alertReceiver) received() []string {
	rcv.mu.Lock()
	defer rcv.mu.Unlock()
	return append([]string(nil), rcv.bodies...)
}

// payloads decodes the webhook payloads received.
func (rcv *alertReceiver) payloads() []alert.WebhookPayload {
	var out []alert.WebhookPayload
	for _, b := range rcv.received() {
		var p alert.WebhookPayload
		if err := json.Unmarshal([]byte(b), &p); err != nil {
			rcv.t.Fatalf("webhook body: %v\n%s", err, b)
		}
		out = append(out, p)
	}
	return out
}

// createIn creates an object of syncd.dev/v1alpha1 in namespace.
func (r *rig) createIn(namespace, resource, manifest string) {
	r.t.Helper()
	u := object(r.t, manifest)
	u.SetAPIVersion(v1alpha1.GroupVersion.String())
	if _, err := r.dyn.Resource(v1alpha1.GroupVersion.WithResource(resource)).Namespace(namespace).Create(context.Background(), u, metav1.CreateOptions{}); err != nil {
		r.t.Fatalf("create %s in %s: %v", resource, namespace, err)
	}
}

// secret creates a Secret in namespace.
func (r *rig) secret(namespace, name string, data map[string]string) {
	r.t.Helper()
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace}, StringData: data}
	if _, err := env.Clientset(r.t).CoreV1().Secrets(namespace).Create(context.Background(), s, metav1.CreateOptions{}); err != nil {
		r.t.Fatal(err)
	}
}

// provider creates a Secret with address (and hmacKey when key is set)
// and an AlertProvider of type typ on it, both named name.
func (r *rig) provider(namespace, name, typ, address string, key []byte) {
	r.t.Helper()
	data := map[string]string{v1alpha1.SecretKeyAddress: address}
	if key != nil {
		data[v1alpha1.SecretKeyHMACKey] = string(key)
	}
	r.secret(namespace, name, data)
	r.createIn(namespace, "alertproviders", fmt.Sprintf(`
kind: AlertProvider
metadata: {name: %s}
spec: {type: %s, secretRef: {name: %s}}`, name, typ, name))
}

// alertReady returns an Alert's or AlertProvider's Ready condition.
func (r *rig) alertReady(namespace, resource, name string) (*metav1.Condition, error) {
	u, err := r.dyn.Resource(v1alpha1.GroupVersion.WithResource(resource)).Namespace(namespace).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	var st struct {
		Status v1alpha1.AlertStatus `json:"status"`
	}
	if err := jsonInto(u, &st); err != nil {
		return nil, err
	}
	for i := range st.Status.Conditions {
		if st.Status.Conditions[i].Type == string(v1alpha1.ConditionReady) && st.Status.Conditions[i].ObservedGeneration == u.GetGeneration() {
			return &st.Status.Conditions[i], nil
		}
	}
	return nil, nil
}

func jsonInto(u *unstructured.Unstructured, v any) error {
	b, err := json.Marshal(u.Object)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, v)
}

// waitAlertReady waits until the Alert's Ready condition has status.
func (r *rig) waitAlertReady(namespace, resource, name string, status metav1.ConditionStatus) *metav1.Condition {
	r.t.Helper()
	var got *metav1.Condition
	eventually(r.t, fmt.Sprintf("%s %s/%s Ready=%s", resource, namespace, name, status), func() (bool, string) {
		c, err := r.alertReady(namespace, resource, name)
		if err != nil {
			return false, err.Error()
		}
		got = c
		return c != nil && c.Status == status, fmt.Sprintf("%+v", c)
	})
	return got
}

// TestAlertDeliversAppDrift: an Alert on a webhook AlertProvider and one
// on a Slack AlertProvider, both selecting the App (by name, and by
// labels), deliver its drift to loopback receivers with the culprit (the
// manager that changed the field), and the resolved message once the App
// takes the field back. An Alert of another namespace selecting every
// App there receives nothing.
func TestAlertDeliversAppDrift(t *testing.T) {
	r := newRigWith(t, "1s", Options{Alerts: alert.Options{RateLimit: 50, Burst: 50}})
	key := []byte("hmac-key-of-the-test")
	hook := newAlertReceiver(t, key)
	chat := newAlertReceiver(t, nil)
	other := newAlertReceiver(t, nil)

	r.provider(r.ns, "hook", "webhook", hook.url, key)
	r.provider(r.ns, "chat", "slack", chat.url, nil)
	r.createIn(r.ns, "alerts", `
kind: Alert
metadata: {name: oncall}
spec: {providerRef: {name: hook}, eventSources: [{name: web}], events: [drift]}`)
	r.createIn(r.ns, "alerts", `
kind: Alert
metadata: {name: team-chat}
spec: {providerRef: {name: chat}, eventSources: [{name: "*", matchLabels: {team: a}}], events: [drift]}`)
	otherNS := env.Namespace(t)
	r.provider(otherNS, "other", "discord", other.url, nil)
	r.createIn(otherNS, "alerts", `
kind: Alert
metadata: {name: everything}
spec: {providerRef: {name: other}, eventSources: [{name: "*"}]}`)
	for _, a := range []struct{ ns, name string }{{r.ns, "oncall"}, {r.ns, "team-chat"}, {otherNS, "everything"}} {
		r.waitAlertReady(a.ns, "alerts", a.name, metav1.ConditionTrue)
	}
	r.waitAlertReady(r.ns, "alertproviders", "hook", metav1.ConditionTrue)

	r.create("apps", `
kind: App
metadata: {name: web, labels: {team: a}}
spec: {sourceRef: {kind: GitSource, name: repo}, path: web, conflicts: {default: force}}`)
	r.waitReady("web", r.sha)
	r.editConfigMap("web", "edited")

	var drifted alert.WebhookPayload
	eventually(t, "the webhook receives the drift with its culprit", func() (bool, string) {
		for _, p := range hook.payloads() {
			if p.Type == "drift" && p.State != "resolved" {
				drifted = p
				return true, ""
			}
		}
		return false, fmt.Sprintf("%d payloads", len(hook.received()))
	})
	if drifted.App != r.ns+"/web" || drifted.Object.Kind != "ConfigMap" || drifted.Object.Name != "web" {
		t.Errorf("drift alert names app %q, object %+v; want %s/web, ConfigMap web", drifted.App, drifted.Object, r.ns)
	}
	if len(drifted.Fields) == 0 || drifted.Fields[0].Culprit == nil || drifted.Fields[0].Culprit.Manager != "kubectl-edit" {
		t.Errorf("drift alert fields %+v; want the culprit kubectl-edit", drifted.Fields)
	}
	eventually(t, "the webhook receives the drift resolved", func() (bool, string) {
		for _, p := range hook.payloads() {
			if p.Type == "drift" && p.State == "resolved" && p.Fingerprint == drifted.Fingerprint {
				return true, ""
			}
		}
		return false, fmt.Sprintf("%d payloads", len(hook.received()))
	})
	eventually(t, "the Slack receiver gets the drift naming the culprit", func() (bool, string) {
		for _, b := range chat.received() {
			if strings.Contains(b, "kubectl-edit") {
				return true, ""
			}
		}
		return false, strings.Join(chat.received(), "\n")
	})
	if got := other.received(); len(got) > 0 {
		t.Errorf("the Alert of namespace %s received %d message(s) about an App of %s:\n%s", otherNS, len(got), r.ns, strings.Join(got, "\n"))
	}
}

// TestAlertNotReadyOnBadProvider: an Alert whose provider is missing,
// whose Secret is missing or incomplete, or whose address syncd may not
// reach is not Ready, with a reason and a message that says what to
// fix, and never the Secret's value.
func TestAlertNotReadyOnBadProvider(t *testing.T) {
	r := newRig(t, "1h")
	const token = "tok3n-in-the-url"
	tests := map[string]struct {
		setup      func(name string)
		wantReason v1alpha1.Reason
		want       string
	}{
		"no provider": {
			setup:      func(string) {},
			wantReason: v1alpha1.ReasonProviderNotFound,
			want:       "AlertProvider " + r.ns + "/no-provider not found",
		},
		"no Secret": {
			setup: func(name string) {
				r.createIn(r.ns, "alertproviders", fmt.Sprintf("kind: AlertProvider\nmetadata: {name: %s}\nspec: {type: slack, secretRef: {name: absent}}", name))
			},
			wantReason: v1alpha1.ReasonSecretNotFound,
			want:       "Secret " + r.ns + "/absent not found; create it with key address",
		},
		"webhook without hmacKey": {
			setup:      func(name string) { r.provider(r.ns, name, "webhook", "https://hooks.example.com/"+token, nil) },
			wantReason: v1alpha1.ReasonProviderInvalid,
			want:       "Secret " + r.ns + "/webhook-without-hmackey key hmacKey is empty",
		},
		"not a URL": {
			setup:      func(name string) { r.provider(r.ns, name, "discord", token, nil) },
			wantReason: v1alpha1.ReasonProviderInvalid,
			want:       "key address does not hold an http(s) URL",
		},
		"metadata address": {
			setup:      func(name string) { r.provider(r.ns, name, "msteams", "http://169.254.169.254/latest/"+token, nil) },
			wantReason: v1alpha1.ReasonProviderInvalid,
			want:       "plain http off loopback",
		},
		"link-local https": {
			setup:      func(name string) { r.provider(r.ns, name, "slack", "https://169.254.169.254/latest/"+token, nil) },
			wantReason: v1alpha1.ReasonProviderInvalid,
			want:       "169.254.169.254 is a link-local address",
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			obj := strings.ReplaceAll(strings.ToLower(name), " ", "-")
			tc.setup(obj)
			r.createIn(r.ns, "alerts", fmt.Sprintf("kind: Alert\nmetadata: {name: %s}\nspec: {providerRef: {name: %s}, eventSources: [{name: web}]}", obj, obj))
			c := r.waitAlertReady(r.ns, "alerts", obj, metav1.ConditionFalse)
			if c.Reason != string(tc.wantReason) || !strings.Contains(c.Message, tc.want) {
				t.Errorf("Ready = %s: %q; want reason %s and a message with %q", c.Reason, c.Message, tc.wantReason, tc.want)
			}
			if strings.Contains(c.Message, token) {
				t.Errorf("the Alert's status shows the Secret's value: %q", c.Message)
			}
		})
	}
}

// TestAlertEditResolvesWhatItAlerted: a drift alerted before its Alert is
// edited (a new notifier is built) is resolved by the new one, once, when
// the field goes back to Git's value.
func TestAlertEditResolvesWhatItAlerted(t *testing.T) {
	r := newRigWith(t, "1s", Options{Alerts: alert.Options{RateLimit: 50, Burst: 50}})
	key := []byte("hmac-key-of-the-test")
	hook := newAlertReceiver(t, key)
	r.provider(r.ns, "hook", "webhook", hook.url, key)
	r.createIn(r.ns, "alerts", `
kind: Alert
metadata: {name: oncall}
spec: {providerRef: {name: hook}, eventSources: [{name: web}], events: [drift]}`)
	r.waitAlertReady(r.ns, "alerts", "oncall", metav1.ConditionTrue)
	// fail: the edit's manager keeps the field, so the drift stays open.
	r.create("apps", `
kind: App
metadata: {name: web}
spec: {sourceRef: {kind: GitSource, name: repo}, path: web, conflicts: {default: fail}}`)
	r.waitReady("web", r.sha)
	r.editConfigMap("web", "edited")
	var open alert.WebhookPayload
	eventually(t, "the drift is alerted", func() (bool, string) {
		for _, p := range hook.payloads() {
			if p.Type == "drift" && p.State != "resolved" {
				open = p
				return true, ""
			}
		}
		return false, fmt.Sprintf("%d payloads", len(hook.received()))
	})

	if _, err := r.dyn.Resource(v1alpha1.AlertResource).Namespace(r.ns).Patch(context.Background(), "oncall", types.MergePatchType, []byte(`{"spec":{"events":["drift","error"]}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	r.waitAlertReady(r.ns, "alerts", "oncall", metav1.ConditionTrue) // of the edited generation
	r.editConfigMap("web", open.Fields[0].Desired)                   // the editor puts Git's value back
	eventually(t, "the new notifier resolves the drift the old one alerted", func() (bool, string) {
		n := 0
		for _, p := range hook.payloads() {
			if p.Type == "drift" && p.State == "resolved" && p.Fingerprint == open.Fingerprint {
				n++
			}
		}
		return n == 1, fmt.Sprintf("%d resolved of %d payloads: %s", n, len(hook.received()), strings.Join(hook.received(), "\n"))
	})
}

// TestAppSpecEditResolvesDriftOnce: a drift alerted while the App's
// conflicts policy is fail, then an edit of the App's spec (which builds
// its Runner and drift watcher anew). The new watcher takes over what the
// old one found: a policy of force takes the field back and the drift is
// resolved, once; an edit that leaves the field taken neither resolves
// nor alerts it again, and it is resolved, once, when the editor puts
// Git's value back.
func TestAppSpecEditResolvesDriftOnce(t *testing.T) {
	tests := map[string]struct {
		patch string
		// fixed: the edit takes the field back; else the editor does.
		fixed bool
	}{
		"fail to force":  {patch: `{"spec":{"conflicts":{"default":"force"}}}`, fixed: true},
		"unrelated edit": {patch: `{"spec":{"conflicts":{"rules":[{"managers":["nobody-writes-this"],"action":"yield"}]}}}`},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			r := newRigWith(t, "1s", Options{Alerts: alert.Options{RateLimit: 50, Burst: 50}})
			key := []byte("hmac-key-of-the-test")
			hook := newAlertReceiver(t, key)
			r.provider(r.ns, "hook", "webhook", hook.url, key)
			r.createIn(r.ns, "alerts", `
kind: Alert
metadata: {name: oncall}
spec: {providerRef: {name: hook}, eventSources: [{name: web}], events: [drift]}`)
			r.waitAlertReady(r.ns, "alerts", "oncall", metav1.ConditionTrue)
			// fail: the edit's manager keeps the field, so the drift stays open.
			r.create("apps", `
kind: App
metadata: {name: web}
spec: {sourceRef: {kind: GitSource, name: repo}, path: web, conflicts: {default: fail}}`)
			r.waitReady("web", r.sha)
			r.editConfigMap("web", "edited")
			var open alert.WebhookPayload
			eventually(t, "the drift is alerted", func() (bool, string) {
				for _, p := range hook.payloads() {
					if p.Type == "drift" && p.State != "resolved" {
						open = p
						return true, ""
					}
				}
				return false, fmt.Sprintf("%d payloads", len(hook.received()))
			})

			r.patchApp("web", tc.patch)
			r.waitApp("web", "reconciled after the edit", func(a *v1alpha1.App) bool {
				c := ready(a)
				return c != nil && c.ObservedGeneration == a.Generation
			})
			if !tc.fixed {
				r.editConfigMap("web", open.Fields[0].Desired) // the editor puts Git's value back
			}
			resolved := func(p alert.WebhookPayload) bool {
				return p.Type == "drift" && p.State == "resolved" && p.Fingerprint == open.Fingerprint
			}
			eventually(t, "the drift is resolved", func() (bool, string) {
				return countPayloads(hook, resolved) > 0, strings.Join(hook.received(), "\n")
			})
			if v, err := r.configMapValue("web"); err != nil || v != open.Fields[0].Desired {
				t.Errorf("ConfigMap web value = %q (%v); want Git's %q", v, err, open.Fields[0].Desired)
			}
			// The editor's Update leaves it a co-owner of the field (a
			// finding of its own, alerted apart); none else is alerted.
			opened := func(p alert.WebhookPayload) bool {
				return p.Type == "drift" && p.State != "resolved" && (tc.fixed || p.Fingerprint == open.Fingerprint)
			}
			if n, m := countPayloads(hook, opened), countPayloads(hook, resolved); n != 1 || m != 1 {
				t.Errorf("%d drift alert(s) and %d resolution(s), want 1 and 1:\n%s", n, m, strings.Join(hook.received(), "\n"))
			}
		})
	}
}

// countPayloads is how many of the payloads rcv received match.
func countPayloads(rcv *alertReceiver, match func(alert.WebhookPayload) bool) int {
	n := 0
	for _, p := range rcv.payloads() {
		if match(p) {
			n++
		}
	}
	return n
}
