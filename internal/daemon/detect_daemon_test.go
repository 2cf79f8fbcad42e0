package daemon_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/tools/record"

	"syncd.dev/syncd/internal/alert"
	"syncd.dev/syncd/internal/daemon"
	"syncd.dev/syncd/internal/inventory"
	"syncd.dev/syncd/internal/reconcile"
	"syncd.dev/syncd/internal/reconcile/reconciletest"
)

// writeLog counts the requests of one client that are not reads.
type writeLog struct {
	mu     sync.Mutex
	writes []string
	next   http.RoundTripper
}

func (l *writeLog) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Method != http.MethodGet && req.Method != http.MethodHead {
		l.mu.Lock()
		l.writes = append(l.writes, req.Method+" "+req.URL.Path)
		l.mu.Unlock()
	}
	return l.next.RoundTrip(req)
}

func (l *writeLog) all() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.writes...)
}

// syncBuffer is a log destination safe for the daemon's goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// recordedCluster is a cluster identity whose every non-read request is
// recorded, with an inventory manager and an Event recorder on the same
// identity.
func recordedCluster(t *testing.T, ns string) (reconcile.Cluster, *inventory.Manager, record.EventRecorder, *writeLog) {
	t.Helper()
	log := &writeLog{}
	cfg := rest.CopyConfig(env.Config)
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		log.next = rt
		return log
	})
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	disc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	md, err := metadata.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(disc))
	// Not ns: the inventory namespace is syncd's own, no app object may
	// live there.
	inv, err := inventory.New(dyn, md, mapper, inventory.Options{Namespace: env.Namespace(t)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(inv.Stop)
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	broadcaster := record.NewBroadcaster()
	broadcaster.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: cs.CoreV1().Events("")})
	t.Cleanup(broadcaster.Shutdown)
	rec := broadcaster.NewRecorder(scheme.Scheme, corev1.EventSource{Component: "syncd"})
	return reconcile.Cluster{Dynamic: dyn, Mapper: mapper}, inv, rec, log
}

// runLoggedDaemon runs a daemon whose logs go to the returned buffer.
func runLoggedDaemon(t *testing.T, cfgPath string, cl reconcile.Cluster, opts reconcile.Options, events record.EventRecorder) (*daemon.Daemon, *syncBuffer) {
	t.Helper()
	logs := &syncBuffer{}
	opts.CacheDir = t.TempDir()
	d := launchDaemon(t, daemon.Options{
		ConfigPath: cfgPath, Cluster: cl, Options: opts, MaxBackoff: time.Hour, Events: events,
		Logger: slog.New(slog.NewTextHandler(logs, nil)),
	})
	reconciletest.Eventually(t, "first reconcile", func() (bool, string) { return d.Ready(), fmt.Sprintf("%+v", d.Status()) })
	return d, logs
}

// TestDaemonDetectMode runs an app in drift mode detect, whose .data.password
// is marked sensitive. The first sync creates nothing and reports the
// ConfigMap Git declares as missing (deleted); an operator then creates it
// with other values: both fields are alerted as taken over, the password
// redacted in the alert and the logs; a later reconcile leaves the object
// exactly as the operator wrote it. syncd's client sends no write at all:
// no inventory, and no Kubernetes Event even for a failed render.
func TestDaemonDetectMode(t *testing.T) {
	ns := env.Namespace(t)
	repo := reconciletest.NewRepo(t)
	gitCM := fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\n  namespace: %s\ndata:\n  color: blue\n  password: git-hunter2\n", ns)
	repo.Commit("first", map[string]string{"app/cm.yaml": gitCM})
	h := startHook(t)
	cfgPath := filepath.Join(t.TempDir(), "syncd.yaml")
	writeConfig(t, cfgPath, repo.Dir, ns, "1h")
	appendFile(t, cfgPath, "  drift:\n    mode: detect\n  sensitive:\n  - kinds: [ConfigMap]\n    paths: [.data.password]\n"+h.config())

	cl, inv, events, writes := recordedCluster(t, ns)
	d, logs := runLoggedDaemon(t, cfgPath, cl, reconcile.Options{Inventory: inv}, events)
	reconciletest.Eventually(t, "the missing ConfigMap alerted", func() (bool, string) {
		_, ok := h.find(0, func(p alert.WebhookPayload) bool {
			return p.State == "open" && p.Object.Name == "settings" && len(p.Fields) == 1 && p.Fields[0].Class == "deleted"
		})
		st := d.Status()
		return ok && st[0].Result == "ok" && st[0].Mode == "detect" && st[0].Findings == 1, fmt.Sprintf("status=%+v alerts=%+v", st, h.alerts())
	})
	cs := env.Clientset(t)
	if _, err := cs.CoreV1().ConfigMaps(ns).Get(context.Background(), "settings", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("the first sync in detect mode: ConfigMap get err %v, want NotFound (nothing created)", err)
	}
	if _, err := cs.CoreV1().Secrets(inv.Namespace()).Get(context.Background(), inventory.ParentName("web"), metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("inventory Secret get err %v, want NotFound (detect mode writes no inventory)", err)
	}

	// A commit that does not render fails the app (an Event in correct
	// mode); the next commit renders again.
	repo.Commit("broken", map[string]string{"app/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: [\n"})
	if err := d.Trigger("repo"); err != nil {
		t.Fatal(err)
	}
	reconciletest.Eventually(t, "the broken commit failed", func() (bool, string) {
		st := d.Status()
		return st[0].Result == "failed", fmt.Sprintf("%+v", st)
	})
	repo.Commit("fixed", map[string]string{"app/cm.yaml": gitCM})
	if err := d.Trigger("repo"); err != nil {
		t.Fatal(err)
	}
	reconciletest.Eventually(t, "the fixed commit watched again", func() (bool, string) {
		st := d.Status()
		return st[0].Result == "ok" && st[0].Revision == repo.Head(), fmt.Sprintf("%+v", st)
	})

	// The operator creates the object with its own values.
	created, err := cs.CoreV1().ConfigMaps(ns).Create(context.Background(), &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "settings"},
		Data:       map[string]string{"color": "green", "password": "live-s3cret"},
	}, metav1.CreateOptions{FieldManager: "operator"})
	if err != nil {
		t.Fatal(err)
	}
	var taken alert.WebhookPayload
	reconciletest.Eventually(t, "the operator's values alerted", func() (bool, string) {
		i, ok := h.find(0, func(p alert.WebhookPayload) bool {
			return p.State == "open" && p.Object.Name == "settings" && len(p.Fields) == 2 && p.Fields[0].Class == "taken-over"
		})
		if ok {
			taken = h.alerts()[i]
		}
		_, resolved := h.find(0, func(p alert.WebhookPayload) bool {
			return p.State == "resolved" && len(p.Fields) == 1 && p.Fields[0].Class == "deleted"
		})
		return ok && resolved, fmt.Sprintf("alerts=%+v", h.alerts())
	})
	byPath := map[string]alert.WebhookField{}
	for _, f := range taken.Fields {
		byPath[f.Path] = f
	}
	if f := byPath[".data.color"]; f.Desired != "blue" || f.Live != "green" || f.Sensitive || f.Culprit == nil || f.Culprit.Manager != "operator" {
		t.Errorf(".data.color alert field = %+v, want blue vs green by operator, not sensitive", f)
	}
	if f := byPath[".data.password"]; !f.Sensitive || f.Desired != "<redacted>" || f.Live != "<redacted>" {
		t.Errorf(".data.password alert field = %+v, want sensitive with both values <redacted>", f)
	}
	all, err := json.Marshal(h.alerts())
	if err != nil {
		t.Fatal(err)
	}
	for _, secret := range []string{"git-hunter2", "live-s3cret"} {
		if strings.Contains(string(all), secret) {
			t.Errorf("an alert payload contains the sensitive value %q:\n%s", secret, all)
		}
		if strings.Contains(logs.String(), secret) {
			t.Errorf("the daemon's log contains the sensitive value %q:\n%s", secret, logs.String())
		}
	}
	if !strings.Contains(logs.String(), ".data.password") {
		t.Errorf("the daemon's log does not name the sensitive field's drift:\n%s", logs.String())
	}

	// Another reconcile (a push) renders and watches again, and still
	// writes nothing.
	before := d.Status()[0].LastRun
	if err := d.Trigger("repo"); err != nil {
		t.Fatal(err)
	}
	reconciletest.Eventually(t, "a second reconcile", func() (bool, string) {
		st := d.Status()
		return st[0].LastRun.After(before) && st[0].Result == "ok", fmt.Sprintf("%+v", st)
	})
	live, err := cs.CoreV1().ConfigMaps(ns).Get(context.Background(), "settings", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if live.ResourceVersion != created.ResourceVersion || live.Data["color"] != "green" {
		t.Errorf("after a reconcile in detect mode: resourceVersion %s (created %s), color %q; want the operator's object untouched",
			live.ResourceVersion, created.ResourceVersion, live.Data["color"])
	}
	if w := writes.all(); len(w) > 0 {
		t.Errorf("syncd's client wrote in detect mode: %q", w)
	}
}

// TestDaemonYieldedNotAlerted: the app's conflict policy yields
// .data.color to "operator". The operator's take-over is not alerted; a
// take-over of .data.size by someone else, later on the same object, is,
// and names only that field.
func TestDaemonYieldedNotAlerted(t *testing.T) {
	ns := env.Namespace(t)
	repo := reconciletest.NewRepo(t)
	repo.Commit("first", map[string]string{"app/cm.yaml": fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\n  namespace: %s\ndata:\n  color: blue\n  size: s\n", ns)})
	h := startHook(t)
	cfgPath := filepath.Join(t.TempDir(), "syncd.yaml")
	writeConfig(t, cfgPath, repo.Dir, ns, "1h")
	appendFile(t, cfgPath, "  conflicts:\n    rules:\n    - paths: [.data.color]\n      managers: [operator]\n      action: yield\n"+h.config())
	d := runDaemon(t, cfgPath, cluster(t), reconcile.Options{})
	reconciletest.Eventually(t, "first reconcile ok", func() (bool, string) {
		st := d.Status()
		return st[0].Result == "ok", fmt.Sprintf("%+v", st)
	})
	cms := env.Clientset(t).CoreV1().ConfigMaps(ns)
	for _, p := range []struct{ manager, data string }{{"operator", `{"color":"green"}`}, {"kubectl-edit", `{"size":"xl"}`}} {
		if _, err := cms.Patch(context.Background(), "settings", types.MergePatchType, []byte(`{"data":`+p.data+`}`), metav1.PatchOptions{FieldManager: p.manager}); err != nil {
			t.Fatal(err)
		}
	}
	reconciletest.Eventually(t, "the size take-over alerted", func() (bool, string) {
		_, ok := h.find(0, func(p alert.WebhookPayload) bool {
			return p.State == "open" && len(p.Fields) == 1 && p.Fields[0].Path == ".data.size"
		})
		return ok && d.Status()[0].Findings == 1, fmt.Sprintf("status=%+v alerts=%+v", d.Status(), h.alerts())
	})
	for _, p := range h.alerts() {
		for _, f := range p.Fields {
			if f.Path != ".data.size" {
				t.Errorf("alert about %s (%s); only .data.size is drift, .data.color is yielded to operator: %+v", f.Path, f.Class, p)
			}
		}
	}
}
