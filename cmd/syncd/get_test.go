package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/clientcmd"

	"syncd.dev/syncd/internal/api/v1alpha1"
)

// appDynamic is the test's dynamic client.
func appDynamic(t *testing.T) dynamic.Interface {
	t.Helper()
	dyn, err := dynamic.NewForConfig(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	return dyn
}

// freshAppCRDs installs the App CRDs for one test (installAppCRDs) once
// an earlier test's are gone: a CRD being deleted is still there to
// Create (AlreadyExists) and then goes away under the test. It waits for
// its own to be gone at the end, for the tests that install them with
// installAppCRDs.
func freshAppCRDs(t *testing.T, dyn dynamic.Interface) {
	t.Helper()
	waitCRDsGone(t, dyn)
	t.Cleanup(func() { waitCRDsGone(t, dyn) }) // after installAppCRDs' deletes
	installAppCRDs(t, dyn)
	err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		_, err := dyn.Resource(v1alpha1.GitSourceResource).List(ctx, metav1.ListOptions{})
		return err == nil, nil
	})
	if err != nil {
		t.Fatalf("the GitSource CRD is not served: %v", err)
	}
}

// waitCRDsGone waits until no App or GitSource CRD exists: each read
// answers NotFound (an API server that does not answer is no witness).
func waitCRDsGone(t *testing.T, dyn dynamic.Interface) {
	t.Helper()
	var last error
	err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, 60*time.Second, true, func(ctx context.Context) (bool, error) {
		for _, name := range []string{"apps.syncd.dev", "gitsources.syncd.dev", "helmsources.syncd.dev", "ocisources.syncd.dev"} {
			_, last = dyn.Resource(crdResource).Get(ctx, name, metav1.GetOptions{})
			if !apierrors.IsNotFound(last) {
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		t.Fatalf("the App CRDs of an earlier test are still there: %v (last read: %v)", err, last)
	}
}

// createObjects creates GitSource and App manifests (JSON) in ns.
func createObjects(t *testing.T, dyn dynamic.Interface, ns string, manifests ...string) {
	t.Helper()
	for _, m := range manifests {
		u := &unstructured.Unstructured{}
		if err := u.UnmarshalJSON([]byte(m)); err != nil {
			t.Fatal(err)
		}
		gvr := v1alpha1.AppResource
		if u.GetKind() == v1alpha1.KindGitSource {
			gvr = v1alpha1.GitSourceResource
		}
		if _, err := dyn.Resource(gvr).Namespace(ns).Create(context.Background(), u, metav1.CreateOptions{}); err != nil {
			t.Fatalf("create %s %s/%s: %v", u.GetKind(), ns, u.GetName(), err)
		}
	}
}

// appJSON is a valid App of GitSource repo.
func appJSON(name string) string {
	return fmt.Sprintf(`{"apiVersion":"syncd.dev/v1alpha1","kind":"App","metadata":{"name":%q},"spec":{"sourceRef":{"kind":"GitSource","name":"repo"},"path":"web"}}`, name)
}

const sourceJSON = `{"apiVersion":"syncd.dev/v1alpha1","kind":"GitSource","metadata":{"name":"repo"},"spec":{"url":"https://git.example.com/team/repo.git","branch":"main","interval":"1h"}}`

// writeAppStatus writes an App's status as the controller would, through
// the status subresource.
func writeAppStatus(t *testing.T, dyn dynamic.Interface, ns, name string, st v1alpha1.AppStatus) {
	t.Helper()
	if err := patchAppStatus(context.Background(), dyn, ns, name, st); err != nil {
		t.Fatal(err)
	}
}

func patchAppStatus(ctx context.Context, dyn dynamic.Interface, ns, name string, st v1alpha1.AppStatus) error {
	data, err := json.Marshal(map[string]any{"status": st})
	if err != nil {
		return err
	}
	_, err = dyn.Resource(v1alpha1.AppResource).Namespace(ns).Patch(ctx, name, "application/merge-patch+json", data, metav1.PatchOptions{FieldManager: "test-controller"}, "status")
	if err != nil {
		return fmt.Errorf("App %s/%s: write status: %w", ns, name, err)
	}
	return nil
}

// readyStatus is the status of a reconcile that ended with Ready.
func readyStatus(ready metav1.ConditionStatus, reason v1alpha1.Reason, msg, revision string) v1alpha1.AppStatus {
	return v1alpha1.AppStatus{
		ObservedGeneration:  1,
		LastAppliedRevision: revision,
		Conditions: []metav1.Condition{{
			Type: string(v1alpha1.ConditionReady), Status: ready, Reason: string(reason), Message: msg,
			LastTransitionTime: metav1.Now(), ObservedGeneration: 1,
		}},
	}
}

// tableRows splits a table's lines into their whitespace-separated
// cells (the STATUS cell is cut to its first word).
func tableRows(out string) [][]string {
	var rows [][]string
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		rows = append(rows, strings.Fields(line))
	}
	return rows
}

// TestGetAppsWithoutCRDs: without the CRDs, get says to install them.
func TestGetAppsWithoutCRDs(t *testing.T) {
	waitCRDsGone(t, appDynamic(t))
	for _, args := range [][]string{{"get", "apps", "-A"}, {"get", "gitsources"}, {"reconcile", "app", "web"}, {"suspend", "app", "web"}} {
		r := syncd(t, args...)
		if r.code != exitError || !strings.Contains(r.stderr, "CRDs are not installed") || !strings.Contains(r.stderr, "syncd install installs them with the rest of syncd") {
			t.Errorf("syncd %s: code %d, want %d and an error saying to install the CRDs\n%s%s", strings.Join(args, " "), r.code, exitError, r.stdout, r.stderr)
		}
	}
}

// TestGetApps: the table has the App's columns, -A adds NAMESPACE and
// lists every namespace, -o json/yaml print the objects without
// managedFields, and the namespace defaults to the kubeconfig context's
// one with the kubeconfig from $KUBECONFIG.
func TestGetApps(t *testing.T) {
	dyn := appDynamic(t)
	freshAppCRDs(t, dyn)
	ns, other := env.Namespace(t), env.Namespace(t)
	createObjects(t, dyn, ns, sourceJSON, appJSON("web"), appJSON("api"))
	createObjects(t, dyn, other, sourceJSON, appJSON("db"))
	writeAppStatus(t, dyn, ns, "web", readyStatus(metav1.ConditionTrue, v1alpha1.ReasonSucceeded, "applied revision abc123", "abc123"))
	writeAppStatus(t, dyn, ns, "api", readyStatus(metav1.ConditionFalse, v1alpha1.ReasonRenderFailed, "app api: render web: no such directory\nsecond line", ""))
	if _, err := dyn.Resource(v1alpha1.AppResource).Namespace(other).Patch(context.Background(), "db", "application/merge-patch+json", []byte(`{"spec":{"suspend":true}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}

	r := syncd(t, "get", "apps", "-n", ns)
	if r.code != exitOK {
		t.Fatalf("get apps: code %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	rows := tableRows(r.stdout)
	want := [][]string{
		{"NAME", "READY", "REVISION", "AGE", "STATUS"},
		{"api", "False", "<none>", rows[1][3], "app", "api:", "render", "web:", "no", "such", "directory", "…"},
		{"web", "True", "abc123", rows[2][3], "applied", "revision", "abc123"},
	}
	if diff := cmp.Diff(want, rows); diff != "" {
		t.Errorf("get apps -n %s (-want +got):\n%s", ns, diff)
	}

	r = syncd(t, "get", "apps", "-A")
	var got [][]string
	for _, row := range tableRows(r.stdout) {
		if row[0] == "NAMESPACE" || row[0] == ns || row[0] == other {
			got = append(got, row[:3])
		}
	}
	want = [][]string{{"NAMESPACE", "NAME", "READY"}, {ns, "api", "False"}, {ns, "web", "True"}, {other, "db", "Unknown"}}
	if ns > other {
		want = [][]string{want[0], want[3], want[1], want[2]}
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("get apps -A (-want +got):\n%s%s", diff, r.stderr)
	}
	if !strings.Contains(r.stdout, "suspended") {
		t.Errorf("get apps -A does not mark the suspended App db:\n%s", r.stdout)
	}

	r = syncd(t, "get", "apps", "-n", ns, "-o", "json")
	var list struct {
		Kind  string
		Items []v1alpha1.App
	}
	if err := json.Unmarshal([]byte(r.stdout), &list); err != nil {
		t.Fatalf("get apps -o json: %v\n%s%s", err, r.stdout, r.stderr)
	}
	if list.Kind != "List" || len(list.Items) != 2 || list.Items[1].Status.LastAppliedRevision != "abc123" {
		t.Errorf("get apps -o json = kind %q, %d items, want a List of api and web with web's status:\n%s", list.Kind, len(list.Items), r.stdout)
	}
	r = syncd(t, "get", "app", "web", "-n", ns, "-o", "yaml")
	if r.code != exitOK || !strings.HasPrefix(r.stdout, "apiVersion: syncd.dev/v1alpha1\nkind: App\n") || strings.Contains(r.stdout, "managedFields") {
		t.Errorf("get app web -o yaml: code %d, want the App alone without managedFields:\n%s%s", r.code, r.stdout, r.stderr)
	}

	r = syncd(t, "get", "gitsources", "-n", ns)
	rows = tableRows(r.stdout)
	if len(rows) != 2 || rows[0][1] != "URL" || rows[1][0] != "repo" || rows[1][1] != "https://git.example.com/team/repo.git" {
		t.Errorf("get gitsources -n %s:\n%s%s", ns, r.stdout, r.stderr)
	}

	// No flags: $KUBECONFIG, and its context's namespace.
	t.Setenv("KUBECONFIG", kubeconfigWithNamespace(t, other))
	var out, errOut bytes.Buffer
	if code := run(context.Background(), []string{"get", "apps"}, &out, &errOut); code != exitOK || !strings.Contains(out.String(), "db ") || strings.Contains(out.String(), "web") {
		t.Errorf("get apps with KUBECONFIG whose context's namespace is %s: code %d, want App db only:\n%s%s", other, code, out.String(), errOut.String())
	}
}

// kubeconfigWithNamespace writes the test kubeconfig with its current
// context's namespace set.
func kubeconfigWithNamespace(t *testing.T, ns string) string {
	t.Helper()
	cfg, err := clientcmd.LoadFromFile(env.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Contexts[cfg.CurrentContext].Namespace = ns
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestAppTable: the cells of the App table, offline.
func TestAppTable(t *testing.T) {
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	app := func(name string, suspend bool, st v1alpha1.AppStatus) unstructured.Unstructured {
		a := v1alpha1.App{
			TypeMeta:   metav1.TypeMeta{APIVersion: v1alpha1.GroupVersion.String(), Kind: v1alpha1.KindApp},
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "team-a", CreationTimestamp: metav1.NewTime(now.Add(-90 * time.Minute))},
			Spec:       v1alpha1.AppSpec{SourceRef: v1alpha1.SourceReference{Kind: v1alpha1.KindGitSource, Name: "repo"}, Suspend: suspend},
			Status:     st,
		}
		data, err := json.Marshal(a)
		if err != nil {
			t.Fatal(err)
		}
		u := unstructured.Unstructured{}
		if err := u.UnmarshalJSON(data); err != nil {
			t.Fatal(err)
		}
		return u
	}
	items := []unstructured.Unstructured{
		app("new", false, v1alpha1.AppStatus{}),
		app("web", false, readyStatus(metav1.ConditionTrue, v1alpha1.ReasonSucceeded, "applied revision v1@abc", "v1@abc")),
		app("paused", true, readyStatus(metav1.ConditionTrue, v1alpha1.ReasonSucceeded, "applied revision abc", "abc")),
		app("held", true, v1alpha1.AppStatus{}),
	}
	tests := map[string]struct {
		withNamespace, wide bool
		want                string
	}{
		"wide": {wide: true, want: `NAME     READY     REVISION   AGE   STATUS                                  SOURCE           PATH     CLUSTER
new      Unknown   <none>     90m   not reconciled yet                      GitSource/repo   <none>   <local>
web      True      v1@abc     90m   applied revision v1@abc                 GitSource/repo   <none>   <local>
paused   True      abc        90m   suspended; last: applied revision abc   GitSource/repo   <none>   <local>
held     Unknown   <none>     90m   suspended                               GitSource/repo   <none>   <local>
`},
		"one namespace": {want: `NAME     READY     REVISION   AGE   STATUS
new      Unknown   <none>     90m   not reconciled yet
web      True      v1@abc     90m   applied revision v1@abc
paused   True      abc        90m   suspended; last: applied revision abc
held     Unknown   <none>     90m   suspended
`},
		"all namespaces": {withNamespace: true, want: `NAMESPACE   NAME     READY     REVISION   AGE   STATUS
team-a      new      Unknown   <none>     90m   not reconciled yet
team-a      web      True      v1@abc     90m   applied revision v1@abc
team-a      paused   True      abc        90m   suspended; last: applied revision abc
team-a      held     Unknown   <none>     90m   suspended
`},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			var out bytes.Buffer
			if err := writeTable(&out, getApps, items, tc.withNamespace, tc.wide, true, now); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, out.String()); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// TestGetFlags: contradictory flags are refused before any request.
func TestGetFlags(t *testing.T) {
	tests := map[string]struct {
		args []string
		want string
	}{
		"bad output":     {args: []string{"get", "apps", "-o", "tree"}, want: `-o "tree": use wide, name, yaml or json`},
		"-A and -n":      {args: []string{"get", "apps", "-A", "-n", "x"}, want: "-A and -n x both given"},
		"-A with a name": {args: []string{"get", "apps", "-A", "web"}, want: "-A with names"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			var out, errOut bytes.Buffer
			code := run(context.Background(), append(tc.args, "--kubeconfig", filepath.Join(t.TempDir(), "none")), &out, &errOut)
			if code != exitError || !strings.Contains(errOut.String(), tc.want) {
				t.Errorf("code %d, want %d and %q:\n%s", code, exitError, tc.want, errOut.String())
			}
		})
	}
}
