package ui

import (
	"bytes"
	"context"
	"encoding/base64"
	"image"
	"image/png"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/yaml"

	"syncd.dev/syncd/internal/config"
	"syncd.dev/syncd/internal/planner"
	"syncd.dev/syncd/internal/reconcile"
)

// updateScreenshotsEnv set to 1 makes TestBrowser write its screenshots
// into docs/ui/ (they are committed) instead of a temporary directory.
const updateScreenshotsEnv = "SYNCD_UPDATE_SCREENSHOTS"

const (
	chromium       = "/usr/bin/chromium"
	screenshotsDir = "../../docs/ui"
	windowW        = 1280
	windowH        = 900
)

// newBrowser starts headless Chromium (Debian's chromium package, as
// internal/preview's screenshot test uses) and returns its context.
func newBrowser(t *testing.T) context.Context {
	t.Helper()
	if _, err := os.Stat(chromium); err != nil {
		t.Fatalf("%s: %v: the browser tests drive headless Chromium; install Debian's chromium package (apt-get install -y chromium), as .ci/run does", chromium, err)
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chromium),
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(windowW, windowH),
		chromedp.Flag("no-proxy-server", true),
		chromedp.Flag("hide-scrollbars", true),
	)
	// The deadline only stops a hung browser.
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	t.Cleanup(cancel)
	actx, cancelAlloc := chromedp.NewExecAllocator(ctx, opts...)
	t.Cleanup(cancelAlloc)
	bctx, cancelBrowser := chromedp.NewContext(actx)
	t.Cleanup(cancelBrowser)
	if err := chromedp.Do(bctx); err != nil {
		t.Fatalf("start %s: %v", chromium, err)
	}
	return bctx
}

// TestBrowser drives headless Chromium through the UI: the Apps page
// lists the app, its link leads to the App page, the Deployment's link to
// its ownership map, where the image's line carries kubectl-edit's colour
// and number from the legend and the Secret's value shows nowhere; a hand
// edit of the image reaches the open page by the event stream within 5 s.
// Each page's screenshot is checked for content, and written to docs/ui/
// with SYNCD_UPDATE_SCREENSHOTS=1.
func TestBrowser(t *testing.T) {
	f := newFixture(t)
	ctx := newBrowser(t)
	shots := t.TempDir()
	if os.Getenv(updateScreenshotsEnv) == "1" {
		shots = screenshotsDir
		if err := os.MkdirAll(shots, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	do(t, ctx, "open the Apps page", chromedp.Navigate(f.httpSrv.URL+"/"), chromedp.WaitVisible(chromedp.CSS("table.apps")))
	appsText := result(t, ctx, "read the Apps table", chromedp.Text(chromedp.CSS("table.apps")))
	if !strings.Contains(appsText, f.app.Name) {
		t.Fatalf("the Apps page lists no %s:\n%s", f.app.Name, appsText)
	}
	screenshot(t, ctx, filepath.Join(shots, "apps.png"))

	do(t, ctx, "follow the app's link", chromedp.Click(chromedp.CSS(`a[href^="/app?"]`)), chromedp.WaitVisible(chromedp.CSS("table.objects")))
	screenshot(t, ctx, filepath.Join(shots, "app.png"))

	do(t, ctx, "follow the app's Plan link", chromedp.Click(chromedp.CSS(`a[href^="/plan?"]`)), chromedp.WaitVisible(chromedp.CSS("pre.plan")))
	screenshot(t, ctx, filepath.Join(shots, "plan.png"))
	do(t, ctx, "back to the App page", chromedp.NavigateBack(), chromedp.WaitVisible(chromedp.CSS("table.objects")))

	do(t, ctx, "follow the Deployment's link", chromedp.Click(chromedp.CSS(`a[href*="kind=Deployment"]`)), chromedp.WaitVisible(chromedp.CSS("pre.ownermap")))
	line := `document.querySelector('[data-path=' + JSON.stringify(` + jsString(`.spec.template.spec.containers[name="web"].image`) + `) + ']')`
	legend := `[...document.querySelectorAll("tr.manager")].find(r => r.querySelector(".manager-name").textContent === "kubectl-edit").querySelector(".swatch")`
	legendColour := result(t, ctx, "the legend's colour", chromedp.Evaluate[string](`getComputedStyle(`+legend+`).backgroundColor`))
	legendNumber := result(t, ctx, "the legend's number", chromedp.Evaluate[string](legend+`.textContent`))
	lineColour := result(t, ctx, "the image's owner colour", chromedp.Evaluate[string](`getComputedStyle(`+line+`.querySelector(".owners .swatch")).backgroundColor`))
	lineNumber := result(t, ctx, "the image's owner number", chromedp.Evaluate[string](line+`.querySelector(".owners .swatch").textContent`))
	if legendColour == "" || legendColour != lineColour || legendNumber != lineNumber {
		t.Errorf("the image's line shows owner %s in %s, the legend's kubectl-edit is %s in %s", lineNumber, lineColour, legendNumber, legendColour)
	}
	body := result(t, ctx, "the page", chromedp.Evaluate[string](`document.documentElement.outerHTML`))
	for _, v := range []string{secretValue, base64.StdEncoding.EncodeToString([]byte(secretValue))} {
		if strings.Contains(body, v) {
			t.Errorf("the Object page shows the Secret's value %q", v)
		}
	}
	screenshot(t, ctx, filepath.Join(shots, "object.png"))

	do(t, ctx, "open the drift feed", chromedp.Navigate(f.httpSrv.URL+"/drift"), chromedp.WaitVisible(chromedp.CSS("table.feed")))
	feed := result(t, ctx, "read the drift feed", chromedp.Text(chromedp.CSS("table.feed")))
	if !strings.Contains(feed, "kubectl-edit") || !strings.Contains(feed, "shop") {
		t.Errorf("the drift feed shows neither the hand edit nor the App's count:\n%s", feed)
	}
	screenshot(t, ctx, filepath.Join(shots, "drift.png"))

	demo := f.demoDeployment(t)
	do(t, ctx, "open the demo's Deployment", chromedp.Navigate(f.httpSrv.URL+demo), chromedp.WaitVisible(chromedp.CSS("pre.ownermap")))
	managers := result(t, ctx, "read the demo Deployment's legend", chromedp.Evaluate[[]string](`[...document.querySelectorAll("tr.manager .manager-name")].map(e => e.textContent)`))
	for _, m := range []string{"syncd-web", "syncd-web-release", "kubectl-edit", "kubectl"} {
		if !slices.Contains(managers, m) {
			t.Errorf("the demo Deployment's legend does not list %s: %q", m, managers)
		}
	}
	screenshot(t, ctx, filepath.Join(shots, "demo-deployment.png"))

	do(t, ctx, "back to the fixture's Deployment", chromedp.Navigate(f.httpSrv.URL+"/object?"+objectQuery(AppRef{Name: f.app.Name}, f.deployment())), chromedp.WaitVisible(chromedp.CSS("pre.ownermap")))
	f.editImage(t, "nginx:1.29-live")
	deadline := time.Now().Add(5 * time.Second)
	for {
		text := result(t, ctx, "read the image's line", chromedp.Evaluate[string](line+`.textContent`))
		if strings.Contains(text, "nginx:1.29-live") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the hand edit did not reach the open page within 5 s; the image's line reads %q", text)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// demoApp is the demo's app (hack/demo): examples/plain, with the
// Deployment's image split off to the release pipeline's manager.
const demoApp = `name: web
source: examples
path: examples/plain
split:
  - manager: syncd-web-release
    kinds: [apps/Deployment]
    paths: [".spec.template.spec.containers[*].image"]
`

// demoDeployment applies examples/plain as the demo's app, then makes
// the demo's out-of-band edits (an image hotfix by kubectl-edit, replicas
// 5 through /scale by kubectl, the manager kubectl scale writes as), and returns the path of the
// Deployment's ownership map: the README's picture of the demo.
func (f *fixture) demoDeployment(t *testing.T) string {
	t.Helper()
	ctx := context.Background()
	var a config.App
	if err := yaml.UnmarshalStrict([]byte(demoApp), &a); err != nil {
		t.Fatal(err)
	}
	cfg := &config.Config{APIVersion: config.APIVersion, Kind: config.Kind, File: "demo", Apps: []config.App{a}}
	runner, err := reconcile.New(cfg, f.cluster, reconcile.Options{CacheDir: t.TempDir(), Inventory: f.inv})
	if err != nil {
		t.Fatal(err)
	}
	if _, cs, err := runner.Apply(ctx, a, "../../examples/plain", false); err != nil || !cs.OK() {
		t.Fatalf("apply examples/plain: %v %v", err, cs)
	}
	f.demo = &dirApp{runner: runner, app: a, dir: "../../examples/plain"}
	ri := f.cluster.Dynamic.Resource(deploymentsGVR).Namespace("demo")
	hotfix := []byte(`{"spec":{"template":{"spec":{"containers":[{"name":"app","image":"nginx:1.28-hotfix"}]}}}}`)
	if _, err := ri.Patch(ctx, "web", types.StrategicMergePatchType, hotfix, metav1.PatchOptions{FieldManager: "kubectl-edit"}); err != nil {
		t.Fatal(err)
	}
	if _, err := ri.Patch(ctx, "web", types.MergePatchType, []byte(`{"spec":{"replicas":5}}`), metav1.PatchOptions{FieldManager: "kubectl"}, "scale"); err != nil {
		t.Fatal(err)
	}
	return "/object?" + objectQuery(AppRef{Name: a.Name}, planner.ObjectRef{Group: "apps", Version: "v1", Kind: "Deployment", Namespace: "demo", Name: "web"})
}

// jsString quotes s as a JavaScript string literal.
func jsString(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		if r == '"' || r == '\\' {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	b.WriteByte('"')
	return b.String()
}

// editImage changes the Deployment's image as kubectl edit does.
func (f *fixture) editImage(t *testing.T, img string) {
	t.Helper()
	patch := []byte(`{"spec":{"template":{"spec":{"containers":[{"name":"web","image":"` + img + `"}]}}}}`)
	if _, err := f.runnerDynamic(t).Resource(deploymentsGVR).Namespace(f.ns).Patch(context.Background(), "web", types.StrategicMergePatchType, patch, metav1.PatchOptions{FieldManager: "kubectl-edit"}); err != nil {
		t.Fatal(err)
	}
}

// do runs browser steps and fails the test naming what failed.
func do(t *testing.T, ctx context.Context, what string, steps ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	if err := chromedp.Do(ctx, steps...); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// result runs one browser action and returns its value.
func result[T any](t *testing.T, ctx context.Context, what string, a chromedp.Action[T]) T {
	t.Helper()
	v, err := chromedp.Run(ctx, a)
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	return v
}

// screenshot saves the whole page as a PNG at path and checks that it
// shows something: at least the window's width, and many colours (anti-aliased
// text and the managers' colours).
func screenshot(t *testing.T, ctx context.Context, path string) {
	t.Helper()
	buf := result(t, ctx, "screenshot "+filepath.Base(path), chromedp.FullScreenshot(100))
	img, err := png.Decode(bytes.NewReader(buf))
	if err != nil {
		t.Fatalf("screenshot %s: %v", path, err)
	}
	if w := img.Bounds().Dx(); w < windowW {
		t.Errorf("screenshot %s is %d pixels wide, want at least the window's %d", path, w, windowW)
	}
	if n := colours(img); n < 50 {
		t.Errorf("screenshot %s has %d colours: the page looks blank", path, n)
	}
	if err := os.WriteFile(path, buf, 0o644); err != nil {
		t.Fatal(err)
	}
}

func colours(img image.Image) int {
	seen := map[[3]uint32]bool{}
	b := img.Bounds()
	for y := b.Min.Y; y < b.Max.Y; y += 2 {
		for x := b.Min.X; x < b.Max.X; x += 2 {
			r, g, bl, _ := img.At(x, y).RGBA()
			seen[[3]uint32{r >> 8, g >> 8, bl >> 8}] = true
		}
	}
	return len(seen)
}
