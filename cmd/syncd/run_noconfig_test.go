package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestRunWithoutConfig: `syncd run` with no --config, as an App-only
// install runs it (leader election, both listeners). Started before the
// CRDs are installed it warns that nothing runs until they are, and is
// ready: there are no file apps to wait for. Once the CRDs are installed
// an App of a GitSource on a loopback Git server is applied and Ready;
// /status lists no file apps, and a push webhook is answered.
func TestRunWithoutConfig(t *testing.T) {
	dyn := appDynamic(t)
	waitCRDsGone(t, dyn) // the warning needs a cluster without them
	fx := newAppsFixture(t)
	sysNS := env.Namespace(t)
	secretDir := writeFiles(t, map[string]string{"webhook-secret": "push-s3cret\n"})
	p := startSyncd(t, "run", "--kubeconfig", env.Kubeconfig, "--inventory-namespace", env.Namespace(t),
		"--leader-elect", "--leader-elect-namespace", sysNS,
		"--leader-elect-lease-duration", "3s", "--leader-elect-renew-deadline", "2s", "--leader-elect-retry-period", "500ms",
		"--cache-dir", t.TempDir(), "--listen", "127.0.0.1:0",
		"--webhook-listen", "127.0.0.1:0", "--webhook-secret-file", filepath.Join(secretDir, "webhook-secret"))
	addr := p.addr(t)
	poll(t, "syncd warns that nothing runs until the CRDs are installed", func() (bool, string) {
		return p.logContains("there is no --config: nothing runs until they are"), "no warning logged yet"
	})
	// Ready as the leader ("ok"), not only as a standby.
	poll(t, "/readyz ok as the leader", func() (bool, string) {
		code, body := getBody(t, "http://"+addr+"/readyz")
		return code == http.StatusOK && body == "ok", fmt.Sprint(code, " ", body)
	})
	lease, err := env.Clientset(t).CoordinationV1().Leases(sysNS).Get(context.Background(), "syncd", metav1.GetOptions{})
	if err != nil || lease.Spec.HolderIdentity == nil || *lease.Spec.HolderIdentity == "" {
		t.Errorf("Lease %s/syncd: %v, want it held by the replica", sysNS, err)
	}

	freshAppCRDs(t, dyn)
	fx.createApp(t)
	fx.waitReady(t, fx.sha) // within appCRDPoll (10 s) and the apply
	cm, err := env.Clientset(t).CoreV1().ConfigMaps(fx.ns).Get(context.Background(), "web", metav1.GetOptions{})
	if err != nil || cm.Data["value"] != "1" {
		t.Errorf("ConfigMap web: %v, %v; want value 1", cm.Data, err)
	}

	if code, body := getBody(t, "http://"+addr+"/readyz"); code != http.StatusOK || body != "ok" {
		t.Errorf("/readyz with the App applied: %d %q, want 200 ok", code, body)
	}
	code, body := getBody(t, "http://"+addr+"/status")
	var st runStatus
	if err := json.Unmarshal([]byte(body), &st); code != http.StatusOK || err != nil || len(st.Apps) != 0 || st.ConfigError != "" {
		t.Errorf("/status: %d %s (%v), want no file apps and no config error", code, body, err)
	}
	if cfg, _ := p.logged("config"); cfg != "none (App objects only)" {
		t.Errorf(`start line's config = %q, want "none (App objects only)"`, cfg)
	}
	webhook, _ := p.logged("webhookListen")
	d := httpDaemon{webhook: "http://" + webhook, secret: "push-s3cret"}
	if code := do(t, d.push(`{"repository":{"clone_url":"`+fx.repo.URL+`"}}`)); code != http.StatusAccepted {
		t.Errorf("signed push: %d, want 202", code)
	}
	if code, _ := getBody(t, "http://"+addr+"/metrics"); code != http.StatusOK {
		t.Errorf("/metrics: %d, want 200", code)
	}
}

// TestRunOnceNeedsConfig: `run --once` runs a config file's apps once;
// without --config it is refused, saying what to do, before it connects
// to anything.
func TestRunOnceNeedsConfig(t *testing.T) {
	r := syncd(t, "run", "--once")
	if r.code != exitError {
		t.Errorf("run --once without --config: code %d, want %d", r.code, exitError)
	}
	for _, want := range []string{"--once needs --config", "App objects are reconciled only by the long-running daemon", "syncd reconcile app NAME"} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("run --once without --config: stderr %q, want %q", r.stderr, want)
		}
	}
}

// getBody GETs url with the tests' client and returns the status code
// and the trimmed body (code 0 and the error when the request failed).
func getBody(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := httpClient.Get(url)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, strings.TrimSpace(string(b))
}
