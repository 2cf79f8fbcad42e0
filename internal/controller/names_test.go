package controller

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"syncd.dev/syncd/internal/api/v1alpha1"
)

// world is a set of Apps for the offline claims: key → creation time
// and the managers it declares.
type world map[string]struct {
	created  time.Time
	managers []string
}

// contenders are, for each of managers, the Apps of w declaring or
// deriving it, as Controller.managerContenders reads them.
func (w world) contenders(managers []string) map[string][]contender {
	out := map[string][]contender{}
	for _, m := range managers {
		for key, a := range w {
			if slices.Contains(a.managers, m) || derivedManager(key) == m {
				out[m] = append(out[m], contender{key: key, created: a.created})
			}
		}
	}
	return out
}

// TestClaimManagers: an App may not apply as a file app's manager or
// another App's. Which App holds a manager does not depend on the order
// of the claims: the App it is the derived default of, else the oldest;
// another namespace's App is not named.
func TestClaimManagers(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	w := world{
		"team-a/api":   {t0, []string{"syncd-team-a-api", "syncd-images"}},
		"team-a/y":     {t0.Add(time.Hour), []string{"syncd-images"}},
		"team-b/x":     {t0.Add(2 * time.Hour), []string{"syncd-images", "syncd-web", "syncd-team-a-api"}},
		"team-c/squat": {t0, []string{"syncd-team-d-later"}},
		"team-d/later": {t0.Add(time.Hour), []string{"syncd-team-d-later"}},
	}
	steps := []struct {
		key      string
		managers []string
		want     string // fragment of the error; "" for none
	}{
		{key: "team-b/x", managers: []string{"syncd-team-b-x", "syncd-web"}, want: `field manager "syncd-web" is also the manager of an app in the syncd config file`},
		// The newest claims first: still refused, the oldest holds it.
		{key: "team-b/x", managers: []string{"syncd-images"}, want: `field manager "syncd-images" is also an App of another namespace's`},
		{key: "team-a/y", managers: []string{"syncd-images"}, want: `field manager "syncd-images" is also App team-a/api's`},
		{key: "team-a/api", managers: []string{"syncd-team-a-api", "syncd-images"}},
		{key: "team-b/x", managers: []string{"syncd-team-a-api"}, want: `is also an App of another namespace's`},
		// A squatter of another namespace's derived manager is refused,
		// older and first to claim though it is.
		{key: "team-c/squat", managers: []string{"syncd-team-d-later"}, want: `is also an App of another namespace's`},
		{key: "team-d/later", managers: []string{"syncd-team-d-later"}},
	}
	n := NewNames()
	n.SetFileManagers(map[string]string{"syncd-web": "web"})
	for i, s := range steps {
		_, err := n.claimManagers(s.key, s.managers, w.contenders(s.managers))
		switch {
		case s.want == "" && err != nil:
			t.Errorf("step %d: %s claims %v: %v", i, s.key, s.managers, err)
		case s.want != "" && (err == nil || !strings.Contains(err.Error(), s.want)):
			t.Errorf("step %d: %s claims %v: error %v, want one containing %q", i, s.key, s.managers, err, s.want)
		}
	}
}

// TestClaimManagersEvicts: an App that holds a manager because its
// holder had not claimed yet (before it existed, or a restart that
// reconciles Apps in another order) loses it, with every manager it
// held, when the holder claims; the evicted App's next claim is refused.
func TestClaimManagersEvicts(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	w := world{
		"team-a/squat": {t0, []string{"syncd-team-b-api", "syncd-squat-extra"}},
		"team-b/api":   {t0.Add(time.Hour), []string{"syncd-team-b-api"}},
	}
	squat := []string{"syncd-team-b-api", "syncd-squat-extra"}
	n := NewNames()
	before := world{"team-a/squat": w["team-a/squat"]} // team-b/api not created yet
	if _, err := n.claimManagers("team-a/squat", squat, before.contenders(squat)); err != nil {
		t.Fatal(err)
	}
	evicted, err := n.claimManagers("team-b/api", []string{"syncd-team-b-api"}, w.contenders([]string{"syncd-team-b-api"}))
	if err != nil || !cmp.Equal(evicted, []string{"team-a/squat"}) {
		t.Fatalf("team-b/api claims its derived manager: evicted %v, %v; want [team-a/squat]", evicted, err)
	}
	if _, err := n.claimManagers("team-a/squat", squat, w.contenders(squat)); err == nil {
		t.Errorf("the evicted squatter's next claim succeeded")
	}
	if _, err := n.claimManagers("team-c/other", []string{"syncd-squat-extra"}, nil); err != nil {
		t.Errorf("the squatter's other manager is still held: %v", err)
	}
}

// TestAppTakingAnotherAppsManager: an App whose spec.manager is another
// App's default manager is not run (NameCollision, naming that App); the
// other App stays Ready.
func TestAppTakingAnotherAppsManager(t *testing.T) {
	r := newRig(t, "1h")
	r.app("owner", "web", "")
	r.waitReady("owner", r.sha)
	r.app("intruder", "api", ", manager: syncd-"+AppName(r.ns, "owner"))
	app := r.waitApp("intruder", "refused", func(a *v1alpha1.App) bool {
		c := ready(a)
		return c != nil && c.Status == metav1.ConditionFalse
	})
	c := ready(app)
	if c.Reason != string(v1alpha1.ReasonNameCollision) || !strings.Contains(c.Message, "is also App "+r.ns+"/owner's") {
		t.Errorf("intruder's Ready = %s: %s; want NameCollision naming App %s/owner", c.Reason, c.Message, r.ns)
	}
	if v, err := r.configMapValue("api"); err == nil {
		t.Errorf("the intruder's ConfigMap api was applied (value %q)", v)
	}
	r.waitReady("owner", r.sha)
}

// TestAppTakingAnotherTenantsManager: an App of another namespace whose
// spec.manager is a team's App's default manager is refused
// (NameCollision), and neither its status nor its Events name the other
// team's App: a team learns no other team's App names through syncd.
func TestAppTakingAnotherTenantsManager(t *testing.T) {
	r := newRigWith(t, "1h", Options{Tenancy: Tenancy{CrossNamespaceSources: true}})
	r.app("owner", "web", "")
	r.waitReady("owner", r.sha)
	intruderNS := env.Namespace(t)
	victim := r.ns + "/owner"
	r.createAppWith(intruderNS, "api", "api", ", manager: syncd-"+AppName(r.ns, "owner"))
	app := r.waitAppIn(intruderNS, "api", "refused", func(a *v1alpha1.App) bool {
		c := ready(a)
		return c != nil && c.Status == metav1.ConditionFalse
	})
	c := ready(app)
	if c.Reason != string(v1alpha1.ReasonNameCollision) || !strings.Contains(c.Message, "an App of another namespace") || strings.Contains(c.Message, victim) {
		t.Errorf("intruder's Ready = %s: %s; want NameCollision that does not name App %s", c.Reason, c.Message, victim)
	}
	eventually(t, "the intruder's Event", func() (bool, string) {
		msgs := r.eventMessagesIn(intruderNS, "api")
		return len(msgs) > 0, "no Event yet"
	})
	for _, m := range r.eventMessagesIn(intruderNS, "api") {
		if strings.Contains(m, victim) {
			t.Errorf("an Event of the intruder names App %s (another team's): %s", victim, m)
		}
	}
	r.waitReady("owner", r.sha)
}

// TestAppSquattingAnotherTenantsDefaultManager: an App of another
// namespace that took the default manager of an App not yet created
// (spec.manager: syncd-<ns>-<name>) does not keep that App from running:
// once it exists, it is Ready and the squatter is refused.
func TestAppSquattingAnotherTenantsDefaultManager(t *testing.T) {
	r := newRigWith(t, "1h", Options{Tenancy: Tenancy{CrossNamespaceSources: true}})
	squatterNS := env.Namespace(t)
	r.createAppWith(squatterNS, "squat", "api", ", manager: syncd-"+AppName(r.ns, "later"))
	r.waitAppIn(squatterNS, "squat", "Ready", readyAt(r.sha))
	r.app("later", "web", "")
	r.waitReady("later", r.sha)
	app := r.waitAppIn(squatterNS, "squat", "refused", func(a *v1alpha1.App) bool {
		c := ready(a)
		return c != nil && c.Status == metav1.ConditionFalse && c.Reason == string(v1alpha1.ReasonNameCollision)
	})
	if c := ready(app); strings.Contains(c.Message, r.ns+"/later") {
		t.Errorf("squatter's Ready message names App %s/later: %s", r.ns, c.Message)
	}
}

// TestClaimNameStable: of two Apps whose app names collide, the same one
// holds the name whichever claims first and whatever a fresh Names (a
// restart) saw before: the one the inventory records as its owner once
// learnt, else the older; the refusal names the holder.
func TestClaimNameStable(t *testing.T) {
	older := contender{key: "team-b/web", created: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	newer := contender{key: "team/b-web", created: older.created.Add(time.Hour)}
	both := []contender{newer, older}
	tests := map[string]struct {
		recorded string // the owner the inventory records ("" unknown)
		order    []string
		want     string // the holder
	}{
		"older first":                     {order: []string{older.key, newer.key}, want: older.key},
		"newer first":                     {order: []string{newer.key, older.key}, want: older.key},
		"recorded owner, newer first":     {recorded: newer.key, order: []string{newer.key, older.key}, want: newer.key},
		"recorded owner, older first":     {recorded: newer.key, order: []string{older.key, newer.key}, want: newer.key},
		"recorded owner gone, held again": {recorded: "gone/app", order: []string{newer.key, older.key}, want: older.key},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			n := NewNames()
			if tc.recorded != "" {
				n.recordOwner("team-b-web", tc.recorded)
			}
			got := map[string]string{}
			for _, key := range tc.order {
				err := n.claim("team-b-web", key, both)
				got[key] = fmt.Sprint(err)
				if err == nil {
					got[key] = "holds"
				}
			}
			loser := older.key
			if tc.want == older.key {
				loser = newer.key
			}
			if got[tc.want] != "holds" {
				t.Errorf("%s: %s, want it to hold the name", tc.want, got[tc.want])
			}
			if !strings.Contains(got[loser], "is also that of an App of another namespace, which holds it") || !strings.Contains(got[loser], "rename it") || strings.Contains(got[loser], tc.want) {
				t.Errorf("%s: %s, want a refusal saying an App of another namespace holds it, not naming %s, and what to do", loser, got[loser], tc.want)
			}
		})
	}
}

// TestManagerHolderStableAcrossRestart: of two Apps of different
// namespaces with the same spec.manager, the older holds it: before and
// after a restart in which the newer claims it first (the restarted
// controller's first claim, whatever the order of reconciles).
func TestManagerHolderStableAcrossRestart(t *testing.T) {
	tenancy := Options{Tenancy: Tenancy{CrossNamespaceSources: true}}
	r := newRigWith(t, "1h", tenancy)
	// The manager is the test's own: Apps an earlier run of this test left
	// in terminating namespaces (their controller stopped) still contend.
	manager := "shared-" + r.ns
	r.app("older", "web", ", manager: "+manager)
	r.waitReady("older", r.sha)
	newerNS := env.Namespace(t)
	r.createAppWith(newerNS, "newer", "api", ", manager: "+manager)
	refused := func() {
		t.Helper()
		app := r.waitAppIn(newerNS, "newer", "refused", func(a *v1alpha1.App) bool {
			c := ready(a)
			return c != nil && c.Status == metav1.ConditionFalse && c.Reason == string(v1alpha1.ReasonNameCollision)
		})
		if c := ready(app); !strings.Contains(c.Message, `field manager "`+manager+`" is also an App of another namespace's`) {
			t.Errorf("newer's Ready = %s: %s", c.Reason, c.Message)
		}
		r.waitReady("older", r.sha)
	}
	refused()

	r.stop()
	names := NewNames()
	if _, err := names.claimManagers(newerNS+"/newer", []string{manager}, nil); err != nil {
		t.Fatal(err)
	}
	restarted := tenancy
	restarted.Names = names
	c, _ := r.startIn(r.invNS, restarted)
	eventually(t, "both Apps reconciled by the restarted controller", func() (bool, string) {
		o, n := c.Reconciles(r.ns, "older"), c.Reconciles(newerNS, "newer")
		return o > 0 && n > 0, fmt.Sprintf("older %d, newer %d", o, n)
	})
	refused()
}
