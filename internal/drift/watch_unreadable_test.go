package drift

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"

	"syncd.dev/syncd/internal/config"
)

// TestWatcherUnreadable: a watcher reading as a tenant's service account
// that may not list ConfigMaps in another namespace reports the object
// there as not readable by the account, with no finding and no value,
// and still reports drift on the object it may read.
func TestWatcherUnreadable(t *testing.T) {
	ctx := context.Background()
	c := newCluster(t)
	own, other := env.Namespace(t), env.Namespace(t)
	sa, err := env.ServiceAccountConfig(ctx, own, "deployer")
	if err != nil {
		t.Fatal(err)
	}
	if err := env.Grant(ctx, own, "deployer", own, []rbacv1.PolicyRule{{
		APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get", "list", "watch"},
	}}); err != nil {
		t.Fatal(err)
	}
	plan := mustPlan(t, config.App{Name: "app", Namespace: own}, `
apiVersion: v1
kind: ConfigMap
metadata: {name: seed}
data: {color: blue}
`, fmt.Sprintf(`
apiVersion: v1
kind: ConfigMap
metadata: {name: theirs, namespace: %s}
data: {color: blue}
`, other))
	c.applyPlan(t, plan, false)
	// The plan sorts by namespace, whose names carry a counter: find the
	// objects by name.
	byName := map[string]*unstructured.Unstructured{}
	for i := range plan.Objects {
		byName[plan.Objects[i].Desired.GetName()] = plan.Objects[i].Desired
	}
	seed, theirs := byName["seed"], byName["theirs"]
	if seed == nil || theirs == nil {
		t.Fatalf("plan objects: %v", byName)
	}
	// Another tenant changed its object: a value this tenant must not
	// learn through syncd.
	c.mergePatch(t, theirs, "other-tenant", `{"data":{"color":"other-tenants-secret-value"}}`)
	dyn, err := dynamic.NewForConfig(sa)
	if err != nil {
		t.Fatal(err)
	}
	reader := "system:serviceaccount:" + own + ":deployer"
	rec := newRecorder()
	w, err := NewWatcher(dyn, c.mapper, WatcherOptions{OnChange: rec.record, Reader: reader})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.SetPlan(plan, Options{}); err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = w.Run(wctx)
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})

	c.mergePatch(t, seed, "operator", `{"data":{"color":"green"}}`)
	rec.waitFor(t, 0, 30*time.Second, "a taken-over .data.color on the readable object", func(ch Delta) bool {
		return ch.Object.Name == "seed" && hasFinding(ch.New, ".data.color", TakenOver, "operator")
	})
	want := "ConfigMap " + other + "/theirs: not readable by " + reader
	deadline := time.Now().Add(30 * time.Second)
	for {
		rep := w.Report()
		if len(rep.Warnings) == 1 && strings.HasPrefix(rep.Warnings[0], want) {
			for _, f := range rep.Findings {
				if f.Object.Namespace == other {
					t.Errorf("finding on the unreadable object: %+v", f)
				}
			}
			var out strings.Builder
			if err := rep.WriteJSON(&out); err != nil {
				t.Fatal(err)
			}
			if strings.Contains(out.String(), "other-tenants-secret-value") {
				t.Errorf("report shows the unreadable object's value:\n%s", out.String())
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("warnings = %q, want one starting %q", rep.Warnings, want)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
