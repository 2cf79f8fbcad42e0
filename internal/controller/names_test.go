package controller

import (
	"fmt"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"syncd.dev/syncd/internal/api/v1alpha1"
)

// TestClaimManagers: an App may not apply as a file app's manager or
// another App's; a refused App holds none, and a released one frees its
// managers.
func TestClaimManagers(t *testing.T) {
	n := NewNames()
	n.SetFileManagers(map[string]string{"syncd-web": "web"})
	if _, err := n.claimManagers("team-a/api", []string{"syncd-team-a-api", "syncd-images"}); err != nil {
		t.Fatalf("first claim: %v", err)
	}
	steps := []struct {
		key      string
		managers []string
		want     string // fragment of the error; "" for none
	}{
		{"team-b/x", []string{"syncd-team-b-x", "syncd-web"}, `field manager "syncd-web" is also the manager of an app in the syncd config file`},
		// Another namespace's App is not named to the claimant.
		{"team-b/x", []string{"syncd-images"}, `field manager "syncd-images" is also an App of another namespace's`},
		{"team-a/y", []string{"syncd-images"}, `field manager "syncd-images" is also App team-a/api's`},
		// team-a/api re-claims without syncd-images: the name is free again.
		{"team-a/api", []string{"syncd-team-a-api"}, ""},
		{"team-b/x", []string{"syncd-images"}, ""},
		// A refused claim leaves the App holding nothing.
		{"team-b/x", []string{"syncd-team-a-api"}, `is also an App of another namespace's`},
		{"team-c/y", []string{"syncd-images"}, ""},
	}
	for i, s := range steps {
		_, err := n.claimManagers(s.key, s.managers)
		switch {
		case s.want == "" && err != nil:
			t.Errorf("step %d: %s claims %v: %v", i, s.key, s.managers, err)
		case s.want != "" && (err == nil || !strings.Contains(err.Error(), s.want)):
			t.Errorf("step %d: %s claims %v: error %v, want one containing %q", i, s.key, s.managers, err, s.want)
		}
	}
	n.release("team-c/y")
	if _, err := n.claimManagers("team-d/z", []string{"syncd-images"}); err != nil {
		t.Errorf("after release: %v", err)
	}
}

// TestClaimDerivedManager: an App's derived default manager
// (syncd-<namespace>-<name>) is its own whichever claims first: an App
// that took it by spec.manager loses it, with every manager it held, and
// is returned to be reconciled again; it cannot take it back.
func TestClaimDerivedManager(t *testing.T) {
	n := NewNames()
	if evicted, err := n.claimManagers("team-a/squat", []string{"syncd-team-b-api", "syncd-squat-extra"}); err != nil || evicted != "" {
		t.Fatalf("squatter's first claim: evicted %q, %v", evicted, err)
	}
	evicted, err := n.claimManagers("team-b/api", []string{"syncd-team-b-api"})
	if err != nil || evicted != "team-a/squat" {
		t.Fatalf("team-b/api claims its own default manager: evicted %q, %v; want team-a/squat evicted", evicted, err)
	}
	_, err = n.claimManagers("team-a/squat", []string{"syncd-team-b-api", "syncd-squat-extra"})
	if err == nil || !strings.Contains(err.Error(), `field manager "syncd-team-b-api" is also an App of another namespace's`) {
		t.Errorf("squatter claims again: %v, want a refusal", err)
	}
	if _, err := n.claimManagers("team-c/other", []string{"syncd-squat-extra"}); err != nil {
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
