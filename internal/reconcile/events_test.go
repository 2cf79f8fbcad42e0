package reconcile_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/tools/record"

	"syncd.dev/syncd/internal/inventory"
	"syncd.dev/syncd/internal/reconcile"
)

// TestDaemonEvents: the daemon records Kubernetes Events on the app's
// inventory parent: Synced after an apply, ReconcileFailed after a broken
// commit.
func TestDaemonEvents(t *testing.T) {
	ns := env.Namespace(t)
	repo := newRepo(t)
	repo.commit("first", map[string]string{"app/cm.yaml": configMap(ns, "blue")})
	cfgPath := filepath.Join(t.TempDir(), "syncd.yaml")
	writeConfig(t, cfgPath, repo.dir, ns, "1h")

	cl := cluster(t)
	md, err := metadata.NewForConfig(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	invNS := env.Namespace(t) // the inventory namespace is syncd's own: no app object may live there
	inv, err := inventory.New(cl.Dynamic, md, cl.Mapper, inventory.Options{Namespace: invNS})
	if err != nil {
		t.Fatal(err)
	}
	defer inv.Stop()
	cs := env.Clientset(t)
	broadcaster := record.NewBroadcaster()
	broadcaster.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: cs.CoreV1().Events("")})
	defer broadcaster.Shutdown()

	d, err := reconcile.NewDaemon(reconcile.DaemonOptions{
		ConfigPath: cfgPath,
		Cluster:    cl,
		Options:    reconcile.Options{CacheDir: t.TempDir(), Inventory: inv},
		Events:     broadcaster.NewRecorder(scheme.Scheme, corev1.EventSource{Component: "syncd"}),
		Logger:     slog.New(slog.NewTextHandler(io.Discard, nil)),
		MaxBackoff: time.Hour,
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- d.Run(ctx) }()
	defer func() {
		cancel()
		<-done
	}()
	events := func(reason string) (bool, string) {
		list, err := cs.CoreV1().Events(invNS).List(context.Background(), metav1.ListOptions{})
		if err != nil {
			return false, err.Error()
		}
		var seen []string
		for _, e := range list.Items {
			seen = append(seen, e.Reason+"@"+e.InvolvedObject.Name)
			if e.Reason == reason && e.InvolvedObject.Kind == "Secret" && e.InvolvedObject.Name == inventory.ParentPrefix+"web" {
				return true, ""
			}
		}
		return false, fmt.Sprintf("events: %s", strings.Join(seen, ", "))
	}
	eventually(t, "Synced event", func() (bool, string) { return events("Synced") })
	repo.commit("broken", map[string]string{"app/cm.yaml": "kind: [\n"})
	if err := d.Trigger("repo"); err != nil {
		t.Fatal(err)
	}
	eventually(t, "ReconcileFailed event", func() (bool, string) { return events("ReconcileFailed") })
}
