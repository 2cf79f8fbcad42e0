package daemon_test

import (
	"archive/tar"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"syncd.dev/syncd/internal/daemon"
	"syncd.dev/syncd/internal/reconcile"
	"syncd.dev/syncd/internal/reconcile/reconciletest"
	"syncd.dev/syncd/internal/testenv/ociregistry"
)

// TestDaemonOCISource: the daemon applies an OCI artifact; a triggered
// poll whose tag did not move is one HEAD request; a re-pushed tag is
// applied; an artifact with a symlink out is refused with the previous
// state kept and the error in the status.
func TestDaemonOCISource(t *testing.T) {
	ns := env.Namespace(t)
	reg := ociregistry.Start()
	t.Cleanup(reg.Close)
	push := func(color string) {
		t.Helper()
		if _, err := reg.PushFiles("team/web", "prod", map[string]string{"app/cm.yaml": reconciletest.ConfigMap(ns, color)}); err != nil {
			t.Fatal(err)
		}
	}
	push("blue")
	cfgPath := filepath.Join(t.TempDir(), "syncd.yaml")
	cfg := fmt.Sprintf(`apiVersion: syncd/v1alpha1
kind: Config
sources:
- name: art
  oci: {url: %s, tag: prod, interval: 1h}
apps:
- name: web
  source: art
  path: app
  namespace: %s
`, reg.URL("team/web"), ns)
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	d := launchDaemon(t, daemon.Options{
		ConfigPath: cfgPath,
		Cluster:    cluster(t),
		Options:    reconcile.Options{CacheDir: t.TempDir()},
	})
	cms := env.Clientset(t).CoreV1().ConfigMaps(ns)
	color := func() string {
		cm, err := cms.Get(context.Background(), "settings", metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return "<absent>"
		}
		if err != nil {
			return err.Error()
		}
		return cm.Data["color"]
	}
	reconciletest.Eventually(t, "the artifact applied", func() (bool, string) {
		s := appStatus(d, "web")
		return color() == "blue" && s.Result == "ok", fmt.Sprintf("color=%s status=%+v", color(), s)
	})

	before := len(reg.Log())
	ran := appStatus(d, "web").LastRun
	if err := d.Trigger("art"); err != nil {
		t.Fatal(err)
	}
	// The poll is over once the app ran again on its (unchanged) revision.
	reconciletest.Eventually(t, "the app run after the triggered poll", func() (bool, string) {
		s := appStatus(d, "web")
		return s.LastRun.After(ran) && s.Result == "ok", fmt.Sprintf("status=%+v requests=%v", s, reg.Log()[before:])
	})
	if got := reg.Log()[before:]; len(got) != 1 || got[0] != "HEAD /v2/team/web/manifests/prod" {
		t.Errorf("a poll whose tag did not move sent %v, want one HEAD of the tag", got)
	}

	push("green")
	if err := d.Trigger("art"); err != nil {
		t.Fatal(err)
	}
	reconciletest.Eventually(t, "the re-pushed tag applied", func() (bool, string) {
		return color() == "green", "color=" + color()
	})

	if _, err := reg.Push("team/web", "prod", ociregistry.FluxConfig, ociregistry.FluxContent, []ociregistry.Entry{
		{Header: tar.Header{Name: "app/cm.yaml", Typeflag: tar.TypeReg, Mode: 0o644}, Body: reconciletest.ConfigMap(ns, "red")},
		{Header: tar.Header{Name: "app/host", Typeflag: tar.TypeSymlink, Linkname: "../../../../etc"}},
	}); err != nil {
		t.Fatal(err)
	}
	if err := d.Trigger("art"); err != nil {
		t.Fatal(err)
	}
	reconciletest.Eventually(t, "the refused artifact reported", func() (bool, string) {
		s := appStatus(d, "web")
		return strings.Contains(s.Error, "ArtifactRefused") && strings.Contains(s.Error, `entry "app/host"`), fmt.Sprintf("status=%+v", s)
	})
	if got := color(); got != "green" {
		t.Errorf("after a refused artifact the ConfigMap is %q, want green kept", got)
	}
}
