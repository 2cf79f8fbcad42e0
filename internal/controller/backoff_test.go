package controller

import (
	"fmt"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"syncd.dev/syncd/internal/api/v1alpha1"
)

// TestAppBackingOffTakesNewRevision: an App whose reconcile failed, with
// its retry an hour away, still looks at its source on the GitSource's
// interval (1 s), as the file daemon polls. The looks that find the
// revision that failed do not reconcile it (its status stays that of the
// one failure); the commit that fixes it is applied at the next look,
// not in an hour.
func TestAppBackingOffTakesNewRevision(t *testing.T) {
	r := newRigWith(t, "1s", Options{Backoff: wait.Backoff{Duration: time.Hour, Factor: 2, Steps: 10, Cap: time.Hour}})
	r.app("late", "late", "") // late/ is not in the repository yet: render fails
	failed := r.waitApp("late", "failing", func(a *v1alpha1.App) bool {
		c := ready(a)
		return c != nil && c.Status == metav1.ConditionFalse
	})
	before := r.c.Reconciles(r.ns, "late")
	eventually(t, "three looks at the source of the failing App", func() (bool, string) {
		n := r.c.Reconciles(r.ns, "late") - before
		return n >= 3, fmt.Sprintf("%d looks", n)
	})
	app, _, err := r.get("late")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := app.Status.LastReconcileTime, failed.Status.LastReconcileTime; !got.Equal(want) {
		t.Errorf("the App was reconciled again at the revision that failed (lastReconcileTime %s, was %s) while its retry is an hour away", got, want)
	}

	next, err := r.repo.Commit("fix", map[string][]byte{"late/cm.yaml": []byte(configMap("late", "1"))})
	if err != nil {
		t.Fatal(err)
	}
	r.waitReady("late", next)
}
