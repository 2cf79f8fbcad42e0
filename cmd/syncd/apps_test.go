package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"sigs.k8s.io/yaml"

	"syncd.dev/syncd/internal/api/v1alpha1"
	"syncd.dev/syncd/internal/controller"
)

var crdResource = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

// installAppCRDs creates the CRDs of manifests/crds for one test and
// deletes them when it ends (after the test's own cleanups, which must
// delete its Apps while syncd still runs to remove their finalizers).
func installAppCRDs(t *testing.T, dyn dynamic.Interface) {
	t.Helper()
	ctx := context.Background()
	for _, f := range []string{"syncd.dev_gitsources.yaml", "syncd.dev_helmsources.yaml", "syncd.dev_ocisources.yaml", "syncd.dev_apps.yaml"} {
		data, err := os.ReadFile(filepath.Join("../../manifests/crds", f))
		if err != nil {
			t.Fatal(err)
		}
		u := &unstructured.Unstructured{}
		if err := yaml.Unmarshal(data, &u.Object); err != nil {
			t.Fatal(err)
		}
		waitCRDNotTerminating(t, dyn, u.GetName())
		if _, err := dyn.Resource(crdResource).Create(ctx, u, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
		name := u.GetName()
		t.Cleanup(func() { _ = dyn.Resource(crdResource).Delete(context.Background(), name, metav1.DeleteOptions{}) })
	}
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		for _, gvr := range []schema.GroupVersionResource{v1alpha1.AppResource, v1alpha1.GitSourceResource, v1alpha1.HelmSourceResource, v1alpha1.OCISourceResource} {
			if _, err := dyn.Resource(gvr).List(ctx, metav1.ListOptions{}); err != nil {
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		t.Fatalf("the CRDs are not served: %v", err)
	}
}

// waitCRDNotTerminating waits until the CRD name is not being deleted
// (an earlier test's cleanup deletes the CRDs; a CRD going away still
// answers Get and List, but refuses new objects).
func waitCRDNotTerminating(t *testing.T, dyn dynamic.Interface, name string) {
	t.Helper()
	poll(t, "CRD "+name+" not terminating", func() (bool, string) {
		u, err := dyn.Resource(crdResource).Get(context.Background(), name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return true, ""
		}
		if err != nil {
			return false, err.Error()
		}
		return u.GetDeletionTimestamp() == nil, "terminating"
	})
}

// TestRunReconcilesAppObjects: `syncd run` with the CRDs installed runs
// App objects beside the config file's apps. An App becomes Ready at
// the repository's revision; an App whose app name is a file app's is
// refused with NameCollision, and the file app keeps running.
func TestRunReconcilesAppObjects(t *testing.T) {
	ctx := context.Background()
	dyn, err := dynamic.NewForConfig(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	installAppCRDs(t, dyn)
	repo := servedRepo(t, "apps")
	ns := env.Namespace(t)
	sha, err := repo.Commit("first", map[string][]byte{
		"web/cm.yaml":  []byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: web\ndata:\n  value: \"1\"\n"),
		"file/cm.yaml": []byte(fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: file\n  namespace: %s\ndata:\n  value: \"1\"\n", ns)),
	})
	if err != nil {
		t.Fatal(err)
	}
	clash := controller.AppName(ns, "clash")
	dir := writeFiles(t, map[string]string{"syncd.yaml": fmt.Sprintf(`apiVersion: syncd/v1alpha1
kind: Config
sources:
  - name: repo
    git: {url: %q, branch: main, interval: 1h}
apps:
  - name: %s
    source: repo
    path: file
`, repo.URL, clash)})
	p := startSyncd(t, "run", "--config", filepath.Join(dir, "syncd.yaml"), "--kubeconfig", env.Kubeconfig,
		"--inventory-namespace", env.Namespace(t), "--leader-elect=false", "--cache-dir", t.TempDir(), "--listen", "127.0.0.1:0")
	apps := dyn.Resource(v1alpha1.AppResource).Namespace(ns)
	t.Cleanup(func() {
		for _, name := range []string{"web", "clash"} {
			_ = apps.Delete(context.Background(), name, metav1.DeleteOptions{})
		}
		poll(t, "the test's Apps are gone", func() (bool, string) {
			l, err := apps.List(context.Background(), metav1.ListOptions{})
			return err == nil && len(l.Items) == 0, fmt.Sprint(err)
		})
	})
	for _, m := range []string{
		fmt.Sprintf(`{"apiVersion":"syncd.dev/v1alpha1","kind":"GitSource","metadata":{"name":"repo"},"spec":{"url":%q,"branch":"main","interval":"1h"}}`, repo.URL),
		`{"apiVersion":"syncd.dev/v1alpha1","kind":"App","metadata":{"name":"web"},"spec":{"sourceRef":{"kind":"GitSource","name":"repo"},"path":"web"}}`,
		`{"apiVersion":"syncd.dev/v1alpha1","kind":"App","metadata":{"name":"clash"},"spec":{"sourceRef":{"kind":"GitSource","name":"repo"},"path":"web"}}`,
	} {
		u := &unstructured.Unstructured{}
		if err := u.UnmarshalJSON([]byte(m)); err != nil {
			t.Fatal(err)
		}
		gvr := v1alpha1.GroupVersion.WithResource(map[string]string{"GitSource": "gitsources", "App": "apps"}[u.GetKind()])
		if _, err := dyn.Resource(gvr).Namespace(ns).Create(ctx, u, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	poll(t, "App web Ready at "+sha, func() (bool, string) {
		status, reason, rev := readyOf(t, apps, "web")
		return status == "True" && rev == sha, status + " " + reason + " " + rev
	})
	poll(t, "App clash refused with NameCollision", func() (bool, string) {
		status, reason, _ := readyOf(t, apps, "clash")
		return status == "False" && reason == string(v1alpha1.ReasonNameCollision), status + " " + reason
	})
	poll(t, "the file app applied its ConfigMap", func() (bool, string) {
		_, err := env.Clientset(t).CoreV1().ConfigMaps(ns).Get(ctx, "file", metav1.GetOptions{})
		return err == nil, fmt.Sprint(err)
	})
	// The collision shows on the file app too, in /status.
	poll(t, "/status shows the file app's collision", func() (bool, string) {
		addr, ok := p.listenAddr()
		if !ok {
			return false, "no listen address yet"
		}
		resp, err := httpClient.Get("http://" + addr + "/status")
		if err != nil {
			return false, err.Error()
		}
		defer resp.Body.Close()
		var st struct {
			Apps []struct {
				App, Collision string
			}
		}
		if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
			return false, err.Error()
		}
		for _, a := range st.Apps {
			if a.App == clash && strings.Contains(a.Collision, "App "+ns+"/clash") {
				return true, ""
			}
		}
		return false, fmt.Sprintf("%+v", st.Apps)
	})
	// Deleting the refused App must not prune the file app's objects,
	// whose inventory has the same name.
	if err := apps.Delete(ctx, "clash", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	poll(t, "App clash gone", func() (bool, string) {
		_, err := apps.Get(ctx, "clash", metav1.GetOptions{})
		return apierrors.IsNotFound(err), fmt.Sprint(err)
	})
	if _, err := env.Clientset(t).CoreV1().ConfigMaps(ns).Get(ctx, "file", metav1.GetOptions{}); err != nil {
		t.Errorf("the file app's ConfigMap after the colliding App was deleted: %v, want it kept", err)
	}
}

// readyOf returns an App's Ready status and reason and its last applied
// revision.
func readyOf(t *testing.T, apps dynamic.ResourceInterface, name string) (status, reason, revision string) {
	t.Helper()
	u, err := apps.Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		return "", err.Error(), ""
	}
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conds {
		m, _ := c.(map[string]any)
		if m["type"] == string(v1alpha1.ConditionReady) {
			status, reason = fmt.Sprint(m["status"]), fmt.Sprint(m["reason"])
		}
	}
	revision, _, _ = unstructured.NestedString(u.Object, "status", "lastAppliedRevision")
	return status, reason, revision
}
