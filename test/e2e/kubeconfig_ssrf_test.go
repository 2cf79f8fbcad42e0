package e2e

import (
	"encoding/base64"
	"encoding/pem"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"syncd.dev/syncd/internal/testenv/gitserver"
)

// recorder is a loopback server that records every request and answers
// each with a 500 and a text body syncd must never print.
type recorder struct {
	srv *httptest.Server
	mu  sync.Mutex
	got []string
}

// recorderBody is what a recorder answers.
const recorderBody = "SECRET-BODY-of-an-internal-service"

func startRecorder(t *testing.T, tls bool) *recorder {
	t.Helper()
	r := &recorder{}
	h := http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		r.mu.Lock()
		r.got = append(r.got, req.Method+" "+req.URL.Path)
		r.mu.Unlock()
		w.Header().Set("Content-Type", "text/plain")
		w.WriteHeader(http.StatusInternalServerError)
		fmt.Fprint(w, recorderBody)
	})
	if tls {
		r.srv = httptest.NewTLSServer(h)
	} else {
		r.srv = httptest.NewServer(h)
	}
	t.Cleanup(r.srv.Close)
	return r
}

func (r *recorder) requests() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.got...)
}

// TestJourneyKubeconfigRequestForgery: a kubeconfig Secret that names a
// server other than an API server's root makes `syncd apply` send
// nothing there (a path prefix; a proxy-url without
// --allow-kubeconfig-proxy), and one whose server answers an error with
// a text body fails naming the HTTP status, never printing the body.
func TestJourneyKubeconfigRequestForgery(t *testing.T) {
	w := newWorkspace(t)
	plain, tlsRec := startRecorder(t, false), startRecorder(t, true)
	ca := base64.StdEncoding.EncodeToString(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: tlsRec.srv.Certificate().Raw}))
	srv := gitserver.StartTest(t)
	repo := srv.NewTestRepo(t, "forgery")
	if _, err := repo.Commit("edge", edgeRepo("https://api.example.com")); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		cluster string
		says    string
		probed  bool
	}{
		{name: "path", cluster: "server: " + tlsRec.srv.URL + "/api/v1/namespaces/x/services/y:80/proxy\n    certificate-authority-data: " + ca, says: "has a path"},
		{name: "proxy", cluster: "server: https://10.0.0.1:6443\n    proxy-url: " + plain.srv.URL + "\n    certificate-authority-data: " + ca, says: "--allow-kubeconfig-proxy"},
		{name: "body", cluster: "server: " + tlsRec.srv.URL + "\n    certificate-authority-data: " + ca, says: "is unreachable: HTTP 500", probed: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			secret := "forgery-" + tc.name
			putKubeconfigSecret(t, secret, []byte(fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: c
  cluster:
    %s
users:
- name: u
  user: {token: a-token}
contexts:
- name: c
  context: {cluster: c, user: u}
current-context: c
`, tc.cluster)))
			w.writeConfig(fmt.Sprintf(`apiVersion: syncd/v1alpha1
kind: Config
sources:
  - name: forgery
    git: {url: %s, branch: main, interval: 1m}
apps:
  - name: forgery-%s
    source: forgery
    path: clusters/edge-eu
    cluster: {name: forgery-%s, secretRef: {name: %s}}
`, repo.URL, tc.name, tc.name, secret))
			r := w.syncd("apply", "--config", w.config)
			if r.code == 0 || !strings.Contains(r.stdout+r.stderr, tc.says) {
				t.Errorf("want a failure saying %q\n%s", tc.says, r)
			}
			sent := append(plain.requests(), tlsRec.requests()...)
			for _, s := range sent {
				if !tc.probed || s != "GET /version" {
					t.Errorf("the recorders received %q", s)
				}
			}
			if tc.probed && len(sent) == 0 {
				t.Error("the probe never reached the server")
			}
		})
	}
	w.checkNoSecrets(recorderBody)
}
