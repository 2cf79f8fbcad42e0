package main

import (
	"context"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"

	"syncd.dev/syncd/internal/api/v1alpha1"
)

// handleRequests plays the controller's part for one App until the test
// ends: each new requestedAt value is answered with a status that
// records it as handled, with the given Ready condition.
func handleRequests(t *testing.T, dyn dynamic.Interface, ns, name string, ready metav1.ConditionStatus, reason v1alpha1.Reason, msg string) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	t.Cleanup(func() { cancel(); <-done })
	go func() {
		defer close(done)
		tick := time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			u, err := dyn.Resource(v1alpha1.AppResource).Namespace(ns).Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				continue
			}
			app, err := decodeApp(u)
			at := app.Annotations[v1alpha1.RequestedAtAnnotation]
			if err != nil || at == "" || at == app.Status.LastHandledReconcileAt {
				continue
			}
			st := readyStatus(ready, reason, msg, "abc123")
			st.LastHandledReconcileAt = at
			if err := patchAppStatus(ctx, dyn, ns, name, st); err != nil && ctx.Err() == nil {
				t.Errorf("the test's controller: %v", err)
			}
		}
	}()
}

// TestReconcileApp: reconcile app sets the requestedAt annotation under
// syncd-cli; with --wait it returns when the status says the request was
// handled, exit 0 when Ready, 1 with the reason when not, 1 naming the
// request when nothing handles it in time.
func TestReconcileApp(t *testing.T) {
	dyn := appDynamic(t)
	freshAppCRDs(t, dyn)
	tests := map[string]struct {
		handle   bool
		ready    metav1.ConditionStatus
		reason   v1alpha1.Reason
		msg      string
		wantCode int
		want     string
	}{
		"ready":        {handle: true, ready: metav1.ConditionTrue, reason: v1alpha1.ReasonSucceeded, msg: "applied revision abc123", wantCode: exitOK, want: "is Ready: applied revision abc123"},
		"not ready":    {handle: true, ready: metav1.ConditionFalse, reason: v1alpha1.ReasonRenderFailed, msg: "render web: no such directory", wantCode: exitError, want: "reconciled but not Ready (RenderFailed): render web: no such directory"},
		"not handled":  {wantCode: exitError, want: "timed out after 1s: the controller has not handled the request syncd.dev/requestedAt="},
		"without wait": {wantCode: exitOK, want: "reconcile requested\n"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			ns := env.Namespace(t)
			createObjects(t, dyn, ns, sourceJSON, appJSON("web"))
			if tc.handle {
				handleRequests(t, dyn, ns, "web", tc.ready, tc.reason, tc.msg)
			}
			args := []string{"reconcile", "app", "web", "-n", ns}
			if name != "without wait" {
				args = append(args, "--wait", "--timeout", "1s")
			}
			if tc.handle {
				args[len(args)-1] = "30s"
			}
			r := syncd(t, args...)
			if r.code != tc.wantCode || !strings.Contains(r.stdout+r.stderr, tc.want) {
				t.Fatalf("code %d, want %d and %q:\n%s%s", r.code, tc.wantCode, tc.want, r.stdout, r.stderr)
			}
			u, err := dyn.Resource(v1alpha1.AppResource).Namespace(ns).Get(context.Background(), "web", metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			at := u.GetAnnotations()[v1alpha1.RequestedAtAnnotation]
			if _, err := time.Parse(time.RFC3339Nano, at); err != nil {
				t.Errorf("annotation %s = %q, want a time: %v", v1alpha1.RequestedAtAnnotation, at, err)
			}
			if m := managerOf(u.GetManagedFields(), "f:"+v1alpha1.RequestedAtAnnotation); m != cliManager.String()+"/Update" {
				t.Errorf("the annotation is managed by %q, want %s/Update", m, cliManager)
			}
		})
	}
}

// managerOf names the manager (and operation) whose managedFields entry
// mentions field.
func managerOf(entries []metav1.ManagedFieldsEntry, field string) string {
	for _, e := range entries {
		if e.FieldsV1 != nil && strings.Contains(string(e.FieldsV1.Raw), field) {
			return e.Manager + "/" + string(e.Operation)
		}
	}
	return ""
}

// TestSuspendResume: suspend sets spec.suspend, a suspended App refuses
// reconcile (nothing would handle it), resume clears it and requests a
// reconcile; a missing App is named.
func TestSuspendResume(t *testing.T) {
	dyn := appDynamic(t)
	freshAppCRDs(t, dyn)
	ns := env.Namespace(t)
	createObjects(t, dyn, ns, sourceJSON, appJSON("web"))
	apps := dyn.Resource(v1alpha1.AppResource).Namespace(ns)
	read := func() *v1alpha1.App {
		t.Helper()
		u, err := apps.Get(context.Background(), "web", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		app, err := decodeApp(u)
		if err != nil {
			t.Fatal(err)
		}
		return app
	}

	if r := syncd(t, "suspend", "app", "web", "-n", ns); r.code != exitOK || r.stdout != "App "+ns+"/web suspended\n" {
		t.Fatalf("suspend: code %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if app := read(); !app.Spec.Suspend || managerOf(app.ManagedFields, "f:suspend") != cliManager.String()+"/Update" {
		t.Errorf("after suspend: spec.suspend = %v managed by %q, want true by %s", app.Spec.Suspend, managerOf(app.ManagedFields, "f:suspend"), cliManager)
	}
	r := syncd(t, "reconcile", "app", "web", "-n", ns)
	if r.code != exitError || !strings.Contains(r.stderr, "is suspended") || !strings.Contains(r.stderr, "syncd resume app web -n "+ns) {
		t.Errorf("reconcile of a suspended App: code %d, want %d and a hint to resume:\n%s", r.code, exitError, r.stderr)
	}
	if at := read().Annotations[v1alpha1.RequestedAtAnnotation]; at != "" {
		t.Errorf("a refused reconcile set %s=%q", v1alpha1.RequestedAtAnnotation, at)
	}

	handleRequests(t, dyn, ns, "web", metav1.ConditionTrue, v1alpha1.ReasonSucceeded, "applied revision abc123")
	if r := syncd(t, "resume", "app", "web", "-n", ns, "--wait", "--timeout", "30s"); r.code != exitOK || !strings.Contains(r.stdout, "App "+ns+"/web resumed\n") || !strings.Contains(r.stdout, "is Ready") {
		t.Fatalf("resume --wait: code %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if app := read(); app.Spec.Suspend || app.Annotations[v1alpha1.RequestedAtAnnotation] == "" {
		t.Errorf("after resume: spec.suspend = %v, annotation %q; want false and a request", app.Spec.Suspend, app.Annotations[v1alpha1.RequestedAtAnnotation])
	}

	r = syncd(t, "suspend", "app", "nope", "-n", ns)
	if r.code != exitError || !strings.Contains(r.stderr, "App "+ns+"/nope not found") {
		t.Errorf("suspend of a missing App: code %d\n%s", r.code, r.stderr)
	}
}
