package daemon_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"

	"syncd.dev/syncd/internal/alert"
	"syncd.dev/syncd/internal/daemon"
	"syncd.dev/syncd/internal/inventory"
	"syncd.dev/syncd/internal/reconcile"
	"syncd.dev/syncd/internal/reconcile/reconciletest"
)

// hook is a signed-webhook alert receiver that keeps every payload.
type hook struct {
	mu  sync.Mutex
	got []alert.WebhookPayload
	dir string // holds the url and key files
}

func startHook(t *testing.T) *hook {
	t.Helper()
	key := []byte("alert-key")
	h := &hook{dir: t.TempDir()}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if err := alert.VerifyWebhook(key, r.Header, body, time.Now(), 5*time.Minute); err != nil {
			http.Error(w, err.Error(), http.StatusUnauthorized)
			return
		}
		var p alert.WebhookPayload
		if err := json.Unmarshal(body, &p); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		h.mu.Lock()
		h.got = append(h.got, p)
		h.mu.Unlock()
	}))
	t.Cleanup(srv.Close)
	for name, data := range map[string][]byte{"url": []byte(srv.URL), "key": key} {
		if err := os.WriteFile(filepath.Join(h.dir, name), data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return h
}

// config is the drift alert section of a config whose file is in h.dir.
func (h *hook) config() string {
	return fmt.Sprintf("alerts:\n- name: hook\n  type: webhook\n  urlFile: %s\n  hmacKeyFile: %s\n  events: [drift]\n",
		filepath.Join(h.dir, "url"), filepath.Join(h.dir, "key"))
}

func (h *hook) alerts() []alert.WebhookPayload {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]alert.WebhookPayload(nil), h.got...)
}

// find returns the first alert from index from on that match accepts.
func (h *hook) find(from int, match func(alert.WebhookPayload) bool) (int, bool) {
	got := h.alerts()
	for i := from; i < len(got); i++ {
		if match(got[i]) {
			return i, true
		}
	}
	return -1, false
}

func paths(p alert.WebhookPayload) []string {
	var out []string
	for _, f := range p.Fields {
		out = append(out, f.Path)
	}
	return out
}

// spy wraps the test's dynamic client: it records the label selector of
// every list and watch of ConfigMaps, and can run a hook after each
// server-side apply. The requests go to the real API server.
type spy struct {
	dynamic.Interface
	mu        sync.Mutex
	selectors map[string]bool // label selectors of ConfigMap lists and watches
	afterPut  func(name string, body []byte)
}

var configMapsGVR = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}

func (s *spy) Resource(gvr schema.GroupVersionResource) dynamic.NamespaceableResourceInterface {
	r := s.Interface.Resource(gvr)
	if gvr != configMapsGVR {
		return r
	}
	return &spyResource{NamespaceableResourceInterface: r, s: s}
}

func (s *spy) seen() map[string]bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[string]bool{}
	for k := range s.selectors {
		out[k] = true
	}
	return out
}

func (s *spy) record(o metav1.ListOptions) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.selectors == nil {
		s.selectors = map[string]bool{}
	}
	s.selectors[o.LabelSelector] = true
}

type spyResource struct {
	dynamic.NamespaceableResourceInterface
	s *spy
}

func (r *spyResource) Namespace(ns string) dynamic.ResourceInterface {
	return &spyNamespaced{ResourceInterface: r.NamespaceableResourceInterface.Namespace(ns), s: r.s}
}

func (r *spyResource) List(ctx context.Context, o metav1.ListOptions) (*unstructured.UnstructuredList, error) {
	r.s.record(o)
	return r.NamespaceableResourceInterface.List(ctx, o)
}

func (r *spyResource) Watch(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
	r.s.record(o)
	return r.NamespaceableResourceInterface.Watch(ctx, o)
}

type spyNamespaced struct {
	dynamic.ResourceInterface
	s *spy
}

func (r *spyNamespaced) List(ctx context.Context, o metav1.ListOptions) (*unstructured.UnstructuredList, error) {
	r.s.record(o)
	return r.ResourceInterface.List(ctx, o)
}

func (r *spyNamespaced) Watch(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
	r.s.record(o)
	return r.ResourceInterface.Watch(ctx, o)
}

func (r *spyNamespaced) Patch(ctx context.Context, name string, pt types.PatchType, data []byte, o metav1.PatchOptions, sub ...string) (*unstructured.Unstructured, error) {
	u, err := r.ResourceInterface.Patch(ctx, name, pt, data, o, sub...)
	r.s.mu.Lock()
	after := r.s.afterPut
	r.s.mu.Unlock()
	if err == nil && pt == types.ApplyPatchType && after != nil {
		after(name, data)
	}
	return u, err
}

// runDaemon runs a daemon on cfgPath until the test ends.
func runDaemon(t *testing.T, cfgPath string, cl reconcile.Cluster, opts reconcile.Options) *daemon.Daemon {
	t.Helper()
	return startDaemon(t, daemon.Options{ConfigPath: cfgPath, Cluster: cl, Options: opts, MaxBackoff: time.Hour})
}

// TestDaemonDriftWatchesMembersOnly: in a namespace shared with other
// apps' ConfigMaps, the app's drift watcher lists and watches ConfigMaps
// only with the app's ApplySet member label, and a member whose label is
// removed out of band is alerted as that label taken over, not as deleted.
func TestDaemonDriftWatchesMembersOnly(t *testing.T) {
	ns := env.Namespace(t)
	cs := env.Clientset(t)
	for i := range 3 {
		other := &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("other-%d", i), Labels: map[string]string{inventory.LabelPartOf: "another-app"}},
			Data:       map[string]string{"k": "v"},
		}
		_, err := cs.CoreV1().ConfigMaps(ns).Create(context.Background(), other, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
	}
	repo := reconciletest.NewRepo(t)
	repo.Commit("first", map[string]string{"app/cm.yaml": reconciletest.ConfigMap(ns, "blue")})
	h := startHook(t)
	cfgPath := filepath.Join(t.TempDir(), "syncd.yaml")
	writeConfig(t, cfgPath, repo.Dir, ns, "1h")
	appendFile(t, cfgPath, h.config())

	cl := cluster(t)
	sp := &spy{Interface: cl.Dynamic}
	cl.Dynamic = sp
	invNS := env.Namespace(t) // the inventory namespace is syncd's own: no app object may live there
	inv := newInventory(t, env.Config, cl, invNS)
	d := runDaemon(t, cfgPath, cl, reconcile.Options{Inventory: inv})
	reconciletest.Eventually(t, "first reconcile ok", func() (bool, string) {
		st := d.Status()
		return len(st) == 1 && st[0].Result == "ok", fmt.Sprintf("%+v", st)
	})
	member := inventory.LabelPartOf + "=" + inventory.AppID("web", invNS)
	reconciletest.Eventually(t, "the drift watcher listed ConfigMaps", func() (bool, string) {
		return len(sp.seen()) > 0, fmt.Sprint(sp.seen())
	})
	if diff := cmp.Diff(map[string]bool{member: true}, sp.seen()); diff != "" {
		t.Errorf("label selectors of ConfigMap lists and watches (-want +got):\n%s", diff)
	}

	_, err := cs.CoreV1().ConfigMaps(ns).Patch(context.Background(), "settings", types.MergePatchType,
		[]byte(`{"metadata":{"labels":{"`+inventory.LabelPartOf+`":null}}}`), metav1.PatchOptions{FieldManager: "kubectl-label"})
	if err != nil {
		t.Fatal(err)
	}
	labelPath := ".metadata.labels." + inventory.LabelPartOf
	reconciletest.Eventually(t, "the removed label alerted", func() (bool, string) {
		_, ok := h.find(0, func(p alert.WebhookPayload) bool {
			return p.State == "open" && p.Object.Name == "settings" && cmp.Equal(paths(p), []string{labelPath})
		})
		st := d.Status()
		return ok && st[0].Findings == 1, fmt.Sprintf("status=%+v alerts=%+v", st, h.alerts())
	})
	for _, p := range h.alerts() {
		for _, f := range p.Fields {
			if f.Class == "deleted" {
				t.Errorf("the unlabelled member was alerted as deleted: %+v", p)
			}
			if f.Path == labelPath && (f.Class != "taken-over" || f.Desired != inventory.AppID("web", invNS) || f.Live != "") {
				t.Errorf("label field = %+v, want taken-over, desired the app's ID, live absent", f)
			}
		}
	}
}

// TestDaemonOwnApplyIsNotDrift: a commit changes a value (blue → teal).
// The apply's write reaches the drift watcher before the daemon hands it
// the new plan (the spy holds the apply's return until a finding shows or
// a few seconds pass); the watcher must not report it as drift against the
// previous revision. A later out-of-band write is alerted at the new
// revision.
func TestDaemonOwnApplyIsNotDrift(t *testing.T) {
	ns := env.Namespace(t)
	repo := reconciletest.NewRepo(t)
	repo.Commit("first", map[string]string{"app/cm.yaml": reconciletest.ConfigMap(ns, "blue")})
	h := startHook(t)
	cfgPath := filepath.Join(t.TempDir(), "syncd.yaml")
	writeConfig(t, cfgPath, repo.Dir, ns, "1h")
	appendFile(t, cfgPath, h.config())

	cl := cluster(t)
	sp := &spy{Interface: cl.Dynamic}
	cl.Dynamic = sp
	var d *daemon.Daemon
	var dmu sync.Mutex
	sp.afterPut = func(name string, body []byte) {
		dmu.Lock()
		dd := d
		dmu.Unlock()
		if dd == nil || name != "settings" || !strings.Contains(string(body), "teal") {
			return
		}
		// Give a watcher still on the previous plan every chance to
		// judge this write: return once it reports a finding.
		deadline := time.Now().Add(3 * time.Second)
		for time.Now().Before(deadline) {
			if st := dd.Status(); len(st) == 1 && st[0].Findings > 0 {
				return
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	dd := runDaemon(t, cfgPath, cl, reconcile.Options{})
	dmu.Lock()
	d = dd
	dmu.Unlock()

	repo.Commit("teal", map[string]string{"app/cm.yaml": reconciletest.ConfigMap(ns, "teal")})
	sha := repo.Head()
	if err := d.Trigger("repo"); err != nil {
		t.Fatal(err)
	}
	reconciletest.Eventually(t, "teal applied", func() (bool, string) {
		st := d.Status()
		return len(st) == 1 && st[0].Revision == sha && st[0].Result == "ok", fmt.Sprintf("%+v", st)
	})
	_, err := env.Clientset(t).CoreV1().ConfigMaps(ns).Patch(context.Background(), "settings", types.MergePatchType,
		[]byte(`{"data":{"color":"green"}}`), metav1.PatchOptions{FieldManager: "operator"})
	if err != nil {
		t.Fatal(err)
	}
	// Alerts go out in order: anything the watcher published about the
	// apply arrives before the operator's alert.
	var at int
	reconciletest.Eventually(t, "the operator's write alerted", func() (bool, string) {
		var ok bool
		at, ok = h.find(0, func(p alert.WebhookPayload) bool {
			return p.State == "open" && len(p.Fields) == 1 && p.Fields[0].Live == "green"
		})
		return ok, fmt.Sprintf("alerts=%+v", h.alerts())
	})
	got := h.alerts()
	for _, p := range got[:at] {
		t.Errorf("alert before the out-of-band write (syncd's own apply judged as drift): %+v", p)
	}
	if p := got[at]; p.Revision != sha || p.Fields[0].Desired != "teal" || p.Fields[0].Culprit == nil || p.Fields[0].Culprit.Manager != "operator" {
		t.Errorf("alert = %+v, want teal vs green by operator at %s", p, sha)
	}
}

// TestDaemonDriftResolvedAlerts: two fields of one object drift at
// different times (two alerts); a new commit lands and the daemon, under
// conflict policy force, takes both back in one apply: each alert gets its
// resolved message, at the revision applied.
func TestDaemonDriftResolvedAlerts(t *testing.T) {
	ns := env.Namespace(t)
	cm := func(extra string) string {
		return fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\n  namespace: %s\ndata:\n  color: blue\n  size: s\n%s", ns, extra)
	}
	repo := reconciletest.NewRepo(t)
	repo.Commit("first", map[string]string{"app/cm.yaml": cm("")})
	h := startHook(t)
	cfgPath := filepath.Join(t.TempDir(), "syncd.yaml")
	writeConfig(t, cfgPath, repo.Dir, ns, "1h")
	appendFile(t, cfgPath, "  conflicts:\n    default: force\n"+h.config())
	d := runDaemon(t, cfgPath, cluster(t), reconcile.Options{})

	cs := env.Clientset(t)
	next := 0
	for _, patch := range []struct{ field, value string }{{"color", "green"}, {"size", "xl"}} {
		_, err := cs.CoreV1().ConfigMaps(ns).Patch(context.Background(), "settings", types.MergePatchType,
			[]byte(fmt.Sprintf(`{"data":{%q:%q}}`, patch.field, patch.value)), metav1.PatchOptions{FieldManager: "operator"})
		if err != nil {
			t.Fatal(err)
		}
		reconciletest.Eventually(t, "the "+patch.field+" drift alerted", func() (bool, string) {
			i, ok := h.find(next, func(p alert.WebhookPayload) bool {
				return p.State == "open" && cmp.Equal(paths(p), []string{".data." + patch.field})
			})
			if ok {
				next = i + 1
			}
			return ok, fmt.Sprintf("alerts=%+v", h.alerts())
		})
	}

	repo.Commit("more", map[string]string{"app/cm.yaml": cm("  shape: round\n")})
	sha := repo.Head()
	if err := d.Trigger("repo"); err != nil {
		t.Fatal(err)
	}
	reconciletest.Eventually(t, "both drift alerts resolved", func() (bool, string) {
		n := 0
		for _, field := range []string{"color", "size"} {
			if _, ok := h.find(next, func(p alert.WebhookPayload) bool {
				return p.State == "resolved" && cmp.Equal(paths(p), []string{".data." + field})
			}); ok {
				n++
			}
		}
		st := d.Status()
		return n == 2 && len(st) == 1 && st[0].Findings == 0, fmt.Sprintf("status=%+v alerts=%+v", st, h.alerts())
	})
	open := map[string]string{}
	for _, p := range h.alerts() {
		if p.State == "open" {
			open[p.Fingerprint] = strings.Join(paths(p), ",")
			continue
		}
		if _, ok := open[p.Fingerprint]; !ok {
			t.Errorf("resolved alert without an open one: %+v", p)
		}
		delete(open, p.Fingerprint)
		if p.Revision != sha {
			t.Errorf("resolved alert at revision %q, want the revision applied %s: %+v", p.Revision, sha, p)
		}
	}
	if len(open) > 0 {
		t.Errorf("alerts never resolved: %v", open)
	}
}

func appendFile(t *testing.T, path, text string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(text); err != nil {
		t.Fatal(err)
	}
}
