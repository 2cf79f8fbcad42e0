package e2e

import (
	"bufio"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"syncd.dev/syncd/internal/testenv/gitserver"
)

// uiSecret is the value of the UI journey's Secret: no page may show it.
const uiSecret = "ui-e2e-Qw7Rt2Yp9Ls4"

// uiSensitive is the value of a ConfigMap key the app declares sensitive
// (apps[].sensitive): no page may show it either.
const uiSensitive = "ui-e2e-cm-Hk3Vb8Zx1Nq6"

// uiSettingsPath is the query of the ConfigMap's Object page.
const uiSettingsPath = "/object?app=ui-shop&version=v1&kind=ConfigMap&namespace=ui-shop&name=settings"

// uiRepo is the UI journey's app: a namespace, a Deployment and a Secret.
func uiRepo() map[string][]byte {
	return map[string][]byte{
		"apps/shop/namespace.yaml": []byte("apiVersion: v1\nkind: Namespace\nmetadata: {name: ui-shop}\n"),
		"apps/shop/deployment.yaml": []byte(`apiVersion: apps/v1
kind: Deployment
metadata: {name: shop, namespace: ui-shop}
spec:
  replicas: 1
  selector: {matchLabels: {app: shop}}
  template:
    metadata: {labels: {app: shop}}
    spec:
      containers:
        - {name: shop, image: "nginx:1.27"}
`),
		"apps/shop/secret.yaml":   []byte("apiVersion: v1\nkind: Secret\nmetadata: {name: shop-db, namespace: ui-shop}\nstringData: {password: " + uiSecret + "}\n"),
		"apps/shop/settings.yaml": []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: settings, namespace: ui-shop}\ndata: {color: blue, password: " + uiSensitive + "}\n"),
	}
}

// TestJourneyUI: after `syncd apply` and a hand edit of the Deployment's
// image with kubectl, `syncd ui --address 127.0.0.1:0 --config` prints
// the address it serves; the Apps page lists the app, its App page links
// the Deployment, whose ownership map names the hand edit's manager
// (kubectl-set) beside syncd's and the image's drift; no page shows the
// Secret's value nor the value of a ConfigMap key the app declares
// sensitive; a request naming another Host is refused; an App's
// Suspend button suspends it; and syncd run --ui-listen serves the same
// pages read-only.
func TestJourneyUI(t *testing.T) {
	w := newWorkspace(t)
	repo := gitserver.StartTest(t).NewTestRepo(t, "shop")
	if _, err := repo.Commit("shop", uiRepo()); err != nil {
		t.Fatal(err)
	}
	w.writeConfig(fmt.Sprintf(`apiVersion: syncd/v1alpha1
kind: Config
sources:
  - name: shop
    git: {url: %s, branch: main, interval: 1h}
apps:
  - name: ui-shop
    source: shop
    path: apps/shop
    sensitive: [{kinds: [ConfigMap], paths: [.data.password]}]
`, repo.URL))
	w.must(exitOK, "apply", "--config", w.config, "--cache-dir", w.cache)
	if out, err := kubectl("set", "image", "-n", "ui-shop", "deployment/shop", "shop=nginx:1.28-hotfix"); err != nil {
		t.Fatalf("kubectl set image: %v\n%s", err, out)
	}
	base := startUI(t, w, "--config", w.config, "--cache-dir", w.cache)

	apps := uiGet(t, w, base+"/")
	if !strings.Contains(apps, ">ui-shop</a>") {
		t.Fatalf("the Apps page does not list ui-shop:\n%s", apps)
	}
	app := uiGet(t, w, base+"/app?app=ui-shop")
	if !strings.Contains(app, "kind=Deployment") {
		t.Fatalf("the App page does not link the Deployment:\n%s", app)
	}
	obj := uiGet(t, w, base+"/object?app=ui-shop&group=apps&version=v1&kind=Deployment&namespace=ui-shop&name=shop")
	for _, want := range []string{"kubectl-set", "syncd-ui-shop", "nginx:1.28-hotfix", "taken-over"} {
		if !strings.Contains(obj, want) {
			t.Errorf("the Deployment's ownership map does not show %q:\n%s", want, obj)
		}
	}
	uiGet(t, w, base+"/object?app=ui-shop&version=v1&kind=Secret&namespace=ui-shop&name=shop-db")
	uiSettings(t, w, base)
	uiPlan(t, w, base)

	req, err := http.NewRequest(http.MethodGet, base+"/", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Host = "rebound.example:7480"
	resp, err := loopback.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMisdirectedRequest {
		t.Errorf("a request for Host rebound.example got %d, want %d", resp.StatusCode, http.StatusMisdirectedRequest)
	}
	uiButton(t, w, base)
	uiInDaemon(t, w)
	w.checkNoSecrets(uiSecret, uiSensitive)
}

// uiSettings opens the ConfigMap's Object page: its sensitive key is
// shown redacted, its other key in clear (checkNoSecrets reads the page
// for the value).
func uiSettings(t *testing.T, w *workspace, base string) {
	t.Helper()
	page := uiGet(t, w, base+uiSettingsPath)
	for _, want := range []string{"password", "&lt;redacted&gt;", "blue"} {
		if !strings.Contains(page, want) {
			t.Errorf("the ConfigMap's ownership map does not show %q:\n%s", want, page)
		}
	}
}

// uiPlan follows the App page's Plan link: the preview of the source
// as it is now (syncd plan's dry runs with the user's credentials) would
// put the hot-fixed image back but is held back by kubectl-set's
// ownership of it (conflict policy fail), and shows no Secret value
// (checkNoSecrets reads every page).
func uiPlan(t *testing.T, w *workspace, base string) {
	t.Helper()
	if app := uiGet(t, w, base+"/app?app=ui-shop"); !strings.Contains(app, `href="/plan?app=ui-shop"`) {
		t.Errorf("the App page does not link its plan:\n%s", app)
	}
	plan := uiGet(t, w, base+"/plan?app=ui-shop")
	for _, want := range []string{"Plan of", "Held back: conflicts", "Deployment ui-shop/shop: update", "owned by &#34;kubectl-set&#34;: fail", "-      - image: nginx:1.28-hotfix"} {
		if !strings.Contains(plan, want) {
			t.Errorf("the plan page does not show %q:\n%s", want, plan)
		}
	}
}

// uiInDaemon runs syncd run --ui-listen on loopback: the same pages,
// read-only (no buttons, a POST refused).
func uiInDaemon(t *testing.T, w *workspace) {
	t.Helper()
	d := w.startDaemon("--ui-listen", "127.0.0.1:0")
	base := "http://" + d.waitLogged("syncd started", "uiListen")
	if apps := uiGet(t, w, base+"/"); !strings.Contains(apps, ">ui-shop</a>") || !strings.Contains(apps, ">shop</a>") {
		t.Errorf("the daemon's UI does not list ui-shop and the App shop:\n%s", apps)
	}
	uiSettings(t, w, base)
	if app := uiGet(t, w, base+"/app?app=shop&ns=ui-shop"); strings.Contains(app, `action="/action"`) {
		t.Errorf("the daemon's UI has buttons:\n%s", app)
	}
	resp, err := loopback.PostForm(base+"/action", url.Values{"ns": {"ui-shop"}, "app": {"shop"}, "action": {"resume"}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("a POST to the daemon's UI: %d, want 405", resp.StatusCode)
	}
}

// uiButton presses the Suspend button of an App's page through the
// binary's UI, as a browser without JavaScript does (a form post with
// the page's token), and checks that the App is suspended, as syncd
// suspend app does.
func uiButton(t *testing.T, w *workspace, base string) {
	t.Helper()
	manifest := filepath.Join(t.TempDir(), "app.yaml")
	app := "apiVersion: syncd.dev/v1alpha1\nkind: App\nmetadata: {name: shop, namespace: ui-shop}\nspec: {sourceRef: {kind: GitSource, name: shop}}\n"
	if err := os.WriteFile(manifest, []byte(app), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := kubectl("apply", "-f", manifest); err != nil {
		t.Fatalf("kubectl apply the App: %v\n%s", err, out)
	}
	page := uiGet(t, w, base+"/app?app=shop&ns=ui-shop")
	m := regexp.MustCompile(`name="csrf" value="([^"]+)"`).FindStringSubmatch(page)
	if m == nil {
		t.Fatalf("the App page has no buttons:\n%s", page)
	}
	form := url.Values{"csrf": {m[1]}, "ns": {"ui-shop"}, "app": {"shop"}, "action": {"suspend"}}
	client := *loopback
	client.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	resp, err := client.PostForm(base+"/action", form)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("the Suspend button: %d, want 303 back to the App page", resp.StatusCode)
	}
	if done := uiGet(t, w, base+resp.Header.Get("Location")); !strings.Contains(done, "App ui-shop/shop suspended") {
		t.Errorf("the App page after Suspend does not say so:\n%s", done)
	}
	out, err := kubectl("get", "app", "-n", "ui-shop", "shop", "-o", "jsonpath={.spec.suspend}")
	if err != nil || strings.TrimSpace(string(out)) != "true" {
		t.Errorf("after the Suspend button spec.suspend is %q (%v), want true", out, err)
	}
}

// startUI runs `syncd ui --address 127.0.0.1:0` with args and returns the
// URL it prints; the process is stopped when the test ends.
func startUI(t *testing.T, w *workspace, args ...string) string {
	t.Helper()
	cmd := exec.Command(bin, append([]string{"ui", "--address", "127.0.0.1:0"}, args...)...)
	cmd.Env = w.environ()
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
		w.record(stderr.String())
	})
	addr := make(chan string, 1)
	go func() {
		defer close(done)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			w.record(sc.Text())
			if _, rest, ok := strings.Cut(sc.Text(), "serving "); ok {
				addr <- strings.Fields(rest)[0]
			}
		}
		_ = cmd.Wait()
	}()
	select {
	case a := <-addr:
		u, err := url.Parse(a)
		if err != nil {
			t.Fatalf("syncd ui printed %q: %v", a, err)
		}
		return strings.TrimSuffix(u.String(), "/")
	case <-done:
		t.Fatalf("syncd ui exited before serving:\n%s", stderr.String())
	case <-time.After(time.Minute):
		t.Fatalf("syncd ui printed no address within a minute:\n%s", stderr.String())
	}
	return ""
}

// uiGet fetches a page of the UI, fails the test unless it is 200, and
// records it for the secret check.
func uiGet(t *testing.T, w *workspace, u string) string {
	t.Helper()
	resp, err := loopback.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	w.record(string(body))
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d\n%s", u, resp.StatusCode, body)
	}
	return string(body)
}
