package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/client-go/util/cert"
)

// httpClient is the tests' own: not http.DefaultTransport, which TestMain
// disabled in this process as main does. It accepts the self-signed
// certificate of --secure-status.
var httpClient = &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}, Timeout: 20 * time.Second}

// logged returns the value of key in syncd's "syncd started" log line.
func (p *syncdProcess) logged(key string) (string, bool) {
	f, err := os.Open(p.stderr)
	if err != nil {
		return "", false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var line map[string]any
		if json.Unmarshal(sc.Bytes(), &line) == nil && line["msg"] == "syncd started" {
			return fmt.Sprint(line[key]), true
		}
	}
	return "", false
}

// httpDaemon is a `syncd run` process with both listeners.
type httpDaemon struct {
	status, webhook string // base URLs
	ui              string // the base URL of --ui-listen, if given
	secret          string
}

// startHTTPDaemon runs syncd with an empty config (no apps) on loopback
// listeners, plus extra flags, and waits for its addresses.
func startHTTPDaemon(t *testing.T, extra ...string) httpDaemon {
	t.Helper()
	ns := env.Namespace(t)
	dir := writeFiles(t, map[string]string{
		"syncd.yaml":     "apiVersion: syncd/v1alpha1\nkind: Config\n",
		"webhook-secret": "push-s3cret\n",
	})
	args := append([]string{"run", "--config", filepath.Join(dir, "syncd.yaml"), "--kubeconfig", env.Kubeconfig,
		"--inventory-namespace", ns, "--leader-elect=false", "--cache-dir", t.TempDir(),
		"--listen", "127.0.0.1:0", "--webhook-listen", "127.0.0.1:0", "--webhook-secret-file", filepath.Join(dir, "webhook-secret")}, extra...)
	p := startSyncd(t, args...)
	d := httpDaemon{secret: "push-s3cret"}
	poll(t, "syncd logs its listeners", func() (bool, string) {
		status, ok := p.logged("listen")
		webhook, _ := p.logged("webhookListen")
		scheme := "http://"
		if tls, _ := p.logged("tls"); tls == "true" {
			scheme = "https://"
		}
		d.status, d.webhook = scheme+status, "http://"+webhook
		if ui, _ := p.logged("uiListen"); ui != "" {
			d.ui = scheme + ui
		}
		return ok && status != "" && webhook != "", "no \"syncd started\" line with both addresses yet"
	})
	return d
}

func (d httpDaemon) push(body string) *http.Request {
	m := hmac.New(sha256.New, []byte(d.secret))
	m.Write([]byte(body))
	req, _ := http.NewRequest(http.MethodPost, d.webhook+"/webhook/github", strings.NewReader(body))
	req.Header.Set("X-Hub-Signature-256", "sha256="+hex.EncodeToString(m.Sum(nil)))
	return req
}

func do(t *testing.T, req *http.Request) int {
	t.Helper()
	resp, err := httpClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", req.Method, req.URL, err)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode
}

func get(base, path, token string) *http.Request {
	req, _ := http.NewRequest(http.MethodGet, base+path, nil)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	return req
}

// TestRunHTTPListenersSplit: each listener serves its own paths only,
// and the webhook listener refuses oversized and unsigned bodies.
func TestRunHTTPListenersSplit(t *testing.T) {
	d := startHTTPDaemon(t)
	push := `{"ref":"refs/heads/main","repository":{"clone_url":"https://git.example.com/org/none.git"}}`
	huge := `{"repository":{"clone_url":"https://git.example.com/org/none.git"},"pad":"` + strings.Repeat("x", 2<<20) + `"}`
	badSig := d.push("not json")
	badSig.Header.Set("X-Hub-Signature-256", "sha256="+strings.Repeat("00", 32))
	postStatus, _ := http.NewRequest(http.MethodPost, d.status+"/webhook/github", strings.NewReader(push))

	got := map[string]int{
		"status /healthz":                do(t, get(d.status, "/healthz", "")),
		"status /status":                 do(t, get(d.status, "/status", "")),
		"status /metrics":                do(t, get(d.status, "/metrics", "")),
		"status POST /webhook/github":    do(t, postStatus),
		"webhook /status":                do(t, get(d.webhook, "/status", "")),
		"webhook /metrics":               do(t, get(d.webhook, "/metrics", "")),
		"webhook /healthz":               do(t, get(d.webhook, "/healthz", "")),
		"webhook signed push":            do(t, d.push(push)),
		"webhook signed 2 MiB push":      do(t, d.push(huge)),
		"webhook bad signature, no JSON": do(t, badSig),
	}
	want := map[string]int{
		"status /healthz":                200,
		"status /status":                 200,
		"status /metrics":                200,
		"status POST /webhook/github":    404,
		"webhook /status":                404,
		"webhook /metrics":               404,
		"webhook /healthz":               404,
		"webhook signed push":            202,
		"webhook signed 2 MiB push":      413,
		"webhook bad signature, no JSON": 401,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("status codes (-want +got):\n%s", diff)
	}
}

// TestRunHTTPTimeouts: a client that never finishes its headers is cut off
// by ReadHeaderTimeout on both listeners, and oversized headers are
// refused.
func TestRunHTTPTimeouts(t *testing.T) {
	d := startHTTPDaemon(t)
	var wg sync.WaitGroup
	for name, base := range map[string]string{"--listen": d.status, "--webhook-listen": d.webhook} {
		addr := strings.TrimPrefix(base, "http://")
		wg.Add(1)
		go func() {
			defer wg.Done()
			held, err := slowloris(addr, 30*time.Second)
			switch {
			case err != nil:
				t.Errorf("%s: %v", name, err)
			case held < 4*time.Second || held > 10*time.Second:
				t.Errorf("%s: a client that never finished its headers was held %s, want cut off after the 5s ReadHeaderTimeout", name, held)
			default:
				t.Logf("%s: slowloris client cut off after %s", name, held.Round(10*time.Millisecond))
			}
		}()
	}
	for name, base := range map[string]string{"--listen": d.status, "--webhook-listen": d.webhook} {
		req := get(base, "/healthz", "")
		req.Header.Set("X-Pad", strings.Repeat("x", 128<<10))
		if code := do(t, req); code != http.StatusRequestHeaderFieldsTooLarge {
			t.Errorf("%s: 128 KiB of headers: code %d, want 431", name, code)
		}
	}
	wg.Wait()
}

// slowloris opens a connection, sends part of a request's headers, one
// more header byte a second, and reports how long the server kept the
// connection open.
func slowloris(addr string, give time.Duration) (time.Duration, error) {
	conn, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return 0, err
	}
	defer conn.Close()
	start := time.Now()
	if _, err := conn.Write([]byte("GET /healthz HTTP/1.1\r\nHost: syncd\r\nX-Slow: ")); err != nil {
		return 0, err
	}
	closed := make(chan struct{})
	go func() {
		_, _ = io.Copy(io.Discard, conn) // returns when the server closes
		close(closed)
	}()
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	deadline := time.After(give)
	for {
		select {
		case <-closed:
			return time.Since(start), nil
		case <-tick.C:
			_, _ = conn.Write([]byte("x"))
		case <-deadline:
			return 0, errors.New("the server still held the connection after " + give.String())
		}
	}
}

// TestRunSecureStatus: with --secure-status, /metrics and /status answer a
// ServiceAccount token allowed get on them (TokenReview and
// SubjectAccessReview by the real API server), 403 to one without the
// grant, 401 without a token or with a token the API server refuses;
// health stays open and the webhook listener is not affected.
func TestRunSecureStatus(t *testing.T) {
	ctx := context.Background()
	ns := env.Namespace(t)
	readerCfg, err := env.ServiceAccountConfig(ctx, ns, "prometheus")
	if err != nil {
		t.Fatal(err)
	}
	if err := env.Grant(ctx, ns, "prometheus", "", []rbacv1.PolicyRule{
		{NonResourceURLs: []string{"/metrics", "/status", "/ui"}, Verbs: []string{"get"}},
		// Even a user allowed to post is refused by the read-only UI.
		{NonResourceURLs: []string{"/ui"}, Verbs: []string{"post"}},
	}); err != nil {
		t.Fatal(err)
	}
	otherCfg, err := env.ServiceAccountConfig(ctx, ns, "nosy")
	if err != nil {
		t.Fatal(err)
	}
	d := startHTTPDaemon(t, "--secure-status", "--ui-listen", "127.0.0.1:0")
	reader, other := readerCfg.BearerToken, otherCfg.BearerToken

	got := map[string]int{}
	for _, path := range []string{"/metrics", "/status"} {
		got["reader "+path] = do(t, get(d.status, path, reader))
		got["reader again "+path] = do(t, get(d.status, path, reader)) // from the cache
		got["no grant "+path] = do(t, get(d.status, path, other))
		got["no token "+path] = do(t, get(d.status, path, ""))
		got["forged token "+path] = do(t, get(d.status, path, "eyJhbGciOiJSUzI1NiJ9.e30.c2ln"))
	}
	// The UI of --ui-listen: every page needs get on /ui; read-only.
	for _, path := range []string{"/", "/drift"} {
		got["reader UI "+path] = do(t, get(d.ui, path, reader))
		got["no grant UI "+path] = do(t, get(d.ui, path, other))
		got["no token UI "+path] = do(t, get(d.ui, path, ""))
	}
	post := get(d.ui, "/action", reader)
	post.Method = http.MethodPost
	got["reader UI POST /action"] = do(t, post)
	got["no token /healthz"] = do(t, get(d.status, "/healthz", ""))
	got["no token /readyz"] = do(t, get(d.status, "/readyz", ""))
	got["webhook signed push"] = do(t, d.push(`{"repository":{"clone_url":"https://git.example.com/org/none.git"}}`))
	// HTTPS only: a token is never accepted in clear.
	got["plain HTTP /healthz"] = do(t, get("http://"+strings.TrimPrefix(d.status, "https://"), "/healthz", ""))
	want := map[string]int{
		"reader /metrics": 200, "reader again /metrics": 200, "no grant /metrics": 403, "no token /metrics": 401, "forged token /metrics": 401,
		"reader /status": 200, "reader again /status": 200, "no grant /status": 403, "no token /status": 401, "forged token /status": 401,
		"reader UI /": 200, "no grant UI /": 403, "no token UI /": 401,
		"reader UI /drift": 200, "no grant UI /drift": 403, "no token UI /drift": 401,
		"reader UI POST /action": 405,
		"no token /healthz":      200, "no token /readyz": 200, "webhook signed push": 202,
		"plain HTTP /healthz": 400,
	}
	if !strings.HasPrefix(d.status, "https://") {
		t.Errorf("--secure-status serves %s, want HTTPS", d.status)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("status codes (-want +got):\n%s", diff)
	}

	// The 200 is the real answer, and a refusal tells whom it refused but
	// never echoes the token.
	resp, err := httpClient.Do(get(d.status, "/status", reader))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !bytes.Contains(body, []byte(`"apps"`)) {
		t.Errorf("/status as the reader: %s, want the status JSON", body)
	}
	resp, err = httpClient.Do(get(d.status, "/metrics", other))
	if err != nil {
		t.Fatal(err)
	}
	body, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(body), "system:serviceaccount:"+ns+":nosy") || strings.Contains(string(body), other) {
		t.Errorf("403 body %q: want the user named and no token", body)
	}
}

// TestRunWebhookListenNeedsSecret: a webhook listener without a secret
// could only refuse, so syncd refuses to start.
func TestRunWebhookListenNeedsSecret(t *testing.T) {
	dir := writeFiles(t, map[string]string{"syncd.yaml": "apiVersion: syncd/v1alpha1\nkind: Config\n"})
	r := syncd(t, "run", "--config", filepath.Join(dir, "syncd.yaml"), "--webhook-listen", "127.0.0.1:0")
	if r.code != exitError || !strings.Contains(r.stderr, "--webhook-secret-file") {
		t.Errorf("code %d, stderr %q: want exit %d naming --webhook-secret-file", r.code, r.stderr, exitError)
	}
}

// TestRunStatusTLSCertFile: --tls-cert-file and --tls-private-key-file
// serve the given certificate, and a rotated pair (cert-manager rewrites
// the files) is served from the next connection on without a restart.
func TestRunStatusTLSCertFile(t *testing.T) {
	dir := t.TempDir()
	certFile, keyFile := filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
	writePair := func() *x509.CertPool {
		t.Helper()
		certPEM, keyPEM, err := cert.GenerateSelfSignedCertKey("127.0.0.1", nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(keyFile, keyPEM, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(certFile, certPEM, 0o600); err != nil {
			t.Fatal(err)
		}
		pool := x509.NewCertPool()
		pool.AppendCertsFromPEM(certPEM)
		return pool
	}
	first := writePair()
	d := startHTTPDaemon(t, "--secure-status", "--tls-cert-file", certFile, "--tls-private-key-file", keyFile)
	verified := func(pool *x509.CertPool) error {
		c := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DisableKeepAlives: true, TLSClientConfig: &tls.Config{RootCAs: pool}}}
		resp, err := c.Get(d.status + "/healthz")
		if err != nil {
			return err
		}
		resp.Body.Close()
		return nil
	}
	if err := verified(first); err != nil {
		t.Fatalf("HTTPS with the given certificate: %v", err)
	}
	second := writePair()
	// A modification time later than the first pair's whatever the file
	// system's timestamp granularity.
	later := time.Now().Add(time.Minute)
	if err := os.Chtimes(certFile, later, later); err != nil {
		t.Fatal(err)
	}
	poll(t, "the rotated certificate is served", func() (bool, string) {
		err := verified(second)
		return err == nil, fmt.Sprint(err)
	})
	if err := verified(first); err == nil {
		t.Errorf("the first certificate is still served after the rotation")
	}
}

// TestRunTLSFlagsGoTogether: a certificate without its key is refused at
// start.
func TestRunTLSFlagsGoTogether(t *testing.T) {
	dir := writeFiles(t, map[string]string{"syncd.yaml": "apiVersion: syncd/v1alpha1\nkind: Config\n"})
	r := syncd(t, "run", "--config", filepath.Join(dir, "syncd.yaml"), "--listen", "127.0.0.1:0", "--secure-status", "--tls-cert-file", filepath.Join(dir, "tls.crt"))
	if r.code != exitError || !strings.Contains(r.stderr, "--tls-private-key-file") {
		t.Errorf("code %d, stderr %q: want exit %d naming --tls-private-key-file", r.code, r.stderr, exitError)
	}
}

// TestRunRefusesNoConcurrentApps: --concurrent-apps below 1 would let no
// app reconcile; it is refused at start, naming the flag.
func TestRunRefusesNoConcurrentApps(t *testing.T) {
	dir := writeFiles(t, map[string]string{"syncd.yaml": "apiVersion: syncd/v1alpha1\nkind: Config\n"})
	r := syncd(t, "run", "--config", filepath.Join(dir, "syncd.yaml"), "--listen", "127.0.0.1:0", "--concurrent-apps", "0")
	if r.code != exitError || !strings.Contains(r.stderr, "--concurrent-apps 0") {
		t.Errorf("code %d, stderr %q: want exit %d naming --concurrent-apps", r.code, r.stderr, exitError)
	}
}
