package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"

	"syncd.dev/syncd/internal/api/v1alpha1"
	"syncd.dev/syncd/internal/testenv/gitserver"
)

// appsFixture is a loopback repository whose web/ holds one ConfigMap,
// a team namespace, and a config file with no apps (App objects only).
type appsFixture struct {
	dyn    dynamic.Interface
	repo   *gitserver.Repo
	sha    string
	ns     string
	config string
}

func newAppsFixture(t *testing.T) *appsFixture {
	t.Helper()
	dyn, err := dynamic.NewForConfig(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	repo := servedRepo(t, "apps")
	sha, err := repo.Commit("first", map[string][]byte{
		"web/cm.yaml": []byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: web\ndata:\n  value: \"1\"\n"),
	})
	if err != nil {
		t.Fatal(err)
	}
	dir := writeFiles(t, map[string]string{"syncd.yaml": "apiVersion: syncd/v1alpha1\nkind: Config\n"})
	return &appsFixture{dyn: dyn, repo: repo, sha: sha, ns: env.Namespace(t), config: filepath.Join(dir, "syncd.yaml")}
}

// createApp creates the GitSource repo and the App web rendering web/;
// the App is deleted when the test ends, while a syncd still runs.
func (fx *appsFixture) createApp(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	for _, m := range []string{
		fmt.Sprintf(`{"apiVersion":"syncd.dev/v1alpha1","kind":"GitSource","metadata":{"name":"repo"},"spec":{"url":%q,"branch":"main","interval":"1h"}}`, fx.repo.URL),
		`{"apiVersion":"syncd.dev/v1alpha1","kind":"App","metadata":{"name":"web"},"spec":{"sourceRef":{"kind":"GitSource","name":"repo"},"path":"web"}}`,
	} {
		u := &unstructured.Unstructured{}
		if err := u.UnmarshalJSON([]byte(m)); err != nil {
			t.Fatal(err)
		}
		gvr := v1alpha1.GroupVersion.WithResource(map[string]string{"GitSource": "gitsources", "App": "apps"}[u.GetKind()])
		if _, err := fx.dyn.Resource(gvr).Namespace(fx.ns).Create(ctx, u, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	apps := fx.dyn.Resource(v1alpha1.AppResource).Namespace(fx.ns)
	t.Cleanup(func() {
		_ = apps.Delete(context.Background(), "web", metav1.DeleteOptions{})
		poll(t, "App web gone", func() (bool, string) {
			l, err := apps.List(context.Background(), metav1.ListOptions{})
			return err == nil && len(l.Items) == 0, fmt.Sprint(err)
		})
	})
}

func (fx *appsFixture) waitReady(t *testing.T, revision string) {
	t.Helper()
	apps := fx.dyn.Resource(v1alpha1.AppResource).Namespace(fx.ns)
	poll(t, "App web Ready at "+revision, func() (bool, string) {
		status, reason, rev := readyOf(t, apps, "web")
		return status == "True" && rev == revision, status + " " + reason + " " + rev
	})
}

// TestRunLeaderFailoverWithApps: two `syncd run --leader-elect` replicas
// over App objects. The first holds the Lease and applies the App; when
// it is killed (SIGKILL: no release), the standby takes the Lease over
// and reconciles the App, a new commit included.
func TestRunLeaderFailoverWithApps(t *testing.T) {
	dyn, err := dynamic.NewForConfig(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	installAppCRDs(t, dyn)
	fx := newAppsFixture(t)
	sysNS, invNS := env.Namespace(t), env.Namespace(t)
	replica := func() *syncdProcess {
		return startSyncd(t, "run", "--config", fx.config, "--kubeconfig", env.Kubeconfig,
			"--inventory-namespace", invNS, "--leader-elect", "--leader-elect-namespace", sysNS,
			"--leader-elect-lease-duration", "3s", "--leader-elect-renew-deadline", "2s", "--leader-elect-retry-period", "500ms",
			"--cache-dir", t.TempDir(), "--listen", "127.0.0.1:0")
	}
	leases := env.Clientset(t).CoordinationV1().Leases(sysNS)
	holderOf := func() string {
		l, err := leases.Get(context.Background(), "syncd", metav1.GetOptions{})
		if err != nil || l.Spec.HolderIdentity == nil {
			return ""
		}
		return *l.Spec.HolderIdentity
	}
	first := replica()
	poll(t, "the first replica holds the Lease", func() (bool, string) { h := holderOf(); return h != "", h })
	leader := holderOf()
	// The standby starts before the App exists, so the App's deletion at
	// the end (a cleanup) still finds a syncd to remove its finalizer.
	replica()
	fx.createApp(t)
	fx.waitReady(t, fx.sha)
	if err := first.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-first.exited
	poll(t, "the standby takes the Lease over", func() (bool, string) {
		h := holderOf()
		return h != "" && h != leader, h
	})
	next, err := fx.repo.Commit("second", map[string][]byte{
		"web/cm.yaml": []byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: web\ndata:\n  value: \"2\"\n"),
	})
	if err != nil {
		t.Fatal(err)
	}
	patch := []byte(`{"metadata":{"annotations":{"` + v1alpha1.RequestedAtAnnotation + `":"after-failover"}}}`)
	if _, err := dyn.Resource(v1alpha1.AppResource).Namespace(fx.ns).Patch(context.Background(), "web", types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	fx.waitReady(t, next)
	cm, err := env.Clientset(t).CoreV1().ConfigMaps(fx.ns).Get(context.Background(), "web", metav1.GetOptions{})
	if err != nil || cm.Data["value"] != "2" {
		t.Errorf("ConfigMap web after the failover: %v, %v; want value 2", cm.Data, err)
	}
}

// TestRunPicksUpCRDsInstalledLater: `syncd run` started before the CRDs
// exist runs without the App controller, and starts it once they are
// installed (no restart): an App created then becomes Ready.
func TestRunPicksUpCRDsInstalledLater(t *testing.T) {
	dyn, err := dynamic.NewForConfig(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	// A CRD an earlier test deleted may still be going away.
	for _, name := range []string{"apps.syncd.dev", "gitsources.syncd.dev", "helmsources.syncd.dev", "ocisources.syncd.dev"} {
		poll(t, "no CRD "+name+" left from an earlier test", func() (bool, string) {
			_, err := dyn.Resource(crdResource).Get(context.Background(), name, metav1.GetOptions{})
			return apierrors.IsNotFound(err), fmt.Sprint(err)
		})
	}
	fx := newAppsFixture(t)
	p := startSyncd(t, "run", "--config", fx.config, "--kubeconfig", env.Kubeconfig,
		"--inventory-namespace", env.Namespace(t), "--leader-elect=false", "--cache-dir", t.TempDir(), "--listen", "127.0.0.1:0")
	poll(t, "syncd running without the CRDs", func() (bool, string) {
		data, err := os.ReadFile(p.stderr)
		return strings.Contains(string(data), "CRDs (App, GitSource, HelmSource, OCISource) are not all installed"), fmt.Sprint(err)
	})
	installAppCRDs(t, dyn)
	fx.createApp(t)
	fx.waitReady(t, fx.sha) // within appCRDPoll (10 s) and the apply
}
