package controller

import (
	"context"
	"encoding/base64"
	"encoding/pem"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"

	"syncd.dev/syncd/internal/api/v1alpha1"
	"syncd.dev/syncd/internal/egress"
	"syncd.dev/syncd/internal/reconcile"
)

// requestRecorder is a loopback HTTP server that records every request
// it gets and answers each with a 500 and a text body no status, Event
// or log may show.
type requestRecorder struct {
	srv *httptest.Server
	mu  sync.Mutex
	got []string
}

// secretBody is what the recorder answers; syncd must never show it.
const secretBody = "SECRET-BODY"

func newRequestRecorder(t *testing.T, tls bool) *requestRecorder {
	t.Helper()
	r := &requestRecorder{}
	h := http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		r.mu.Lock()
		r.got = append(r.got, req.Method+" "+req.Host+req.URL.RequestURI())
		r.mu.Unlock()
		w.Header().Set("Content-Type", "text/plain")
		w.WriteHeader(http.StatusInternalServerError)
		fmt.Fprint(w, secretBody)
	})
	if tls {
		r.srv = httptest.NewTLSServer(h)
	} else {
		r.srv = httptest.NewServer(h)
	}
	t.Cleanup(r.srv.Close)
	return r
}

// requests returns what the recorder received.
func (r *requestRecorder) requests() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.got...)
}

// caData is the TLS recorder's certificate, PEM, for a kubeconfig's
// certificate-authority-data.
func (r *requestRecorder) caData() string {
	return string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: r.srv.Certificate().Raw}))
}

// hostileKubeconfig is a kubeconfig with one context whose cluster has
// the given fields (YAML, indented under cluster:).
func hostileKubeconfig(cluster string) string {
	return `apiVersion: v1
kind: Config
clusters:
- name: c
  cluster:
` + cluster + `
users:
- name: u
  user: {token: a-token}
contexts:
- name: c
  context: {cluster: c, user: u}
current-context: c
`
}

// indent puts each line of s under a YAML key four spaces deep.
func indent(s string) string {
	return "    " + strings.ReplaceAll(strings.TrimRight(s, "\n"), "\n", "\n    ")
}

// TestAppKubeconfigIsNoRequestForgery: an App's kubeconfig (a Secret in
// its namespace) may not make syncd send a request anywhere but an
// https API server's root: plain http, a path prefix, a proxy-url and
// insecure-skip-tls-verify are refused before anything is sent (the
// recorder gets nothing), and an API server that answers with an error
// body is reported by the HTTP status alone: the body is in neither the
// App's status nor its Events.
func TestAppKubeconfigIsNoRequestForgery(t *testing.T) {
	tests := map[string]struct {
		// cluster is the kubeconfig's cluster, given a plain and a TLS
		// recorder and the latter's CA.
		cluster func(plain, tls *requestRecorder, ca string) string
		// says: the App's Ready message says these; never secretBody.
		says []string
		// probed: the TLS recorder receives the probe (again on each
		// retry) and nothing else; false: no recorder receives anything.
		probed bool
	}{
		"plain http": {
			cluster: func(plain, _ *requestRecorder, _ string) string { return "server: " + plain.srv.URL },
			says:    []string{"https"},
		},
		"path prefix": {
			cluster: func(_, tls *requestRecorder, ca string) string {
				return "server: " + tls.srv.URL + "/api/v1/namespaces/x/services/y:80/proxy\n" + ca
			},
			says: []string{"path"},
		},
		"proxy-url": {
			cluster: func(plain, _ *requestRecorder, ca string) string {
				return "server: https://10.0.0.1:6443\nproxy-url: " + plain.srv.URL + "\n" + ca
			},
			says: []string{"proxy-url", "--allow-kubeconfig-proxy"},
		},
		"insecure-skip-tls-verify": {
			cluster: func(_, tls *requestRecorder, _ string) string {
				return "server: " + tls.srv.URL + "\ninsecure-skip-tls-verify: true"
			},
			says: []string{"insecure-skip-tls-verify"},
		},
		"error body": {
			cluster: func(_, tls *requestRecorder, ca string) string { return "server: " + tls.srv.URL + "\n" + ca },
			says:    []string{"HTTP 500"},
			probed:  true,
		},
	}
	local, err := dynamic.NewForConfig(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	// Configure is what syncd run gives every remote client: its own
	// transport, never the refusing default one.
	targets := reconcile.NewTargets(reconcile.TargetsOptions{Local: local, ProbeTimeout: 2 * time.Second, Configure: egress.OwnRESTTransport})
	t.Cleanup(targets.Close)
	r := newRigWith(t, "1h", Options{Runner: reconcile.Options{Targets: targets}})
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			plain, tlsRec := newRequestRecorder(t, false), newRequestRecorder(t, true)
			ca := "certificate-authority-data: " + base64.StdEncoding.EncodeToString([]byte(tlsRec.caData()))
			app := strings.ReplaceAll(name, " ", "-")
			r.kubeconfigSecret(app, hostileKubeconfig(indent(tc.cluster(plain, tlsRec, ca))))
			r.app(app, "web", fmt.Sprintf(", cluster: {name: %s, kubeConfig: {secretRef: {name: %s}}}", app, app))
			got := r.waitApp(app, "not Ready", func(a *v1alpha1.App) bool {
				c := ready(a)
				return c != nil && c.Status == metav1.ConditionFalse
			})
			msg := ready(got).Message
			for _, w := range tc.says {
				if !strings.Contains(msg, w) {
					t.Errorf("Ready message does not say %q:\n%s", w, msg)
				}
			}
			if strings.Contains(msg, secretBody) {
				t.Errorf("Ready message shows the response body:\n%s", msg)
			}
			r.checkEventsWithout(app, secretBody)
			sent := append(plain.requests(), tlsRec.requests()...)
			probe := ""
			if tc.probed {
				probe = "GET " + tlsRec.srv.Listener.Addr().String() + "/version?timeout=2s"
			}
			if diff := cmp.Diff(wantRequests(probe, len(sent)), sent); diff != "" {
				t.Errorf("requests received (-want +got):\n%s", diff)
			}
		})
	}
}

// wantRequests is n times request, or none when request is empty.
func wantRequests(request string, n int) []string {
	if request == "" {
		return nil
	}
	return slices.Repeat([]string{request}, max(n, 1))
}

// kubeconfigSecret stores kubeconfig under key value of Secret name in
// the rig's namespace.
func (r *rig) kubeconfigSecret(name, kubeconfig string) {
	r.t.Helper()
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name}, Data: map[string][]byte{"value": []byte(kubeconfig)}}
	if _, err := env.Clientset(r.t).CoreV1().Secrets(r.ns).Create(context.Background(), s, metav1.CreateOptions{}); err != nil {
		r.t.Fatal(err)
	}
}

// checkEventsWithout fails if an Event of the App holds text; it waits
// for the App's first Warning Event first.
func (r *rig) checkEventsWithout(name, text string) {
	r.t.Helper()
	var evs *corev1.EventList
	eventually(r.t, "a Warning Event on App "+name, func() (bool, string) {
		var err error
		evs, err = env.Clientset(r.t).CoreV1().Events(r.ns).List(context.Background(), metav1.ListOptions{FieldSelector: "involvedObject.name=" + name + ",type=Warning"})
		if err != nil {
			return false, err.Error()
		}
		return len(evs.Items) > 0, "none"
	})
	for _, ev := range evs.Items {
		if strings.Contains(ev.Message, text) {
			r.t.Errorf("Event %s shows %q:\n%s", ev.Reason, text, ev.Message)
		}
	}
}
