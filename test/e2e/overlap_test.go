package e2e

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// overlapRole is the ClusterRole both of the overlap journey's apps
// declare, as a project's cluster-install and namespace-install both ship
// their aggregated roles; verbs is its rule's verbs.
func overlapRole(verbs string) string {
	return `apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: overlap-things-view
  labels: {rbac.authorization.k8s.io/aggregate-to-view: "true"}
rules:
  - apiGroups: [overlap.example.com]
    resources: [things]
    verbs: [` + verbs + `]
`
}

// overlapRepo is the repository of the overlap journey: apps/cluster and
// apps/ns declare the same ClusterRole (ns with the verbs given) and each
// its own ConfigMap.
func overlapRepo(nsVerbs string) map[string][]byte {
	return map[string][]byte{
		"apps/cluster/role.yaml":      []byte(overlapRole("get, list")),
		"apps/cluster/configmap.yaml": []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cluster-settings, namespace: overlap-a}\ndata: {k: a}\n"),
		"apps/cluster/namespace.yaml": []byte("apiVersion: v1\nkind: Namespace\nmetadata: {name: overlap-a}\n"),
		"apps/ns/role.yaml":           []byte(overlapRole(nsVerbs)),
		"apps/ns/configmap.yaml":      []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: ns-settings, namespace: overlap-b}\ndata: {k: b}\n"),
		"apps/ns/namespace.yaml":      []byte("apiVersion: v1\nkind: Namespace\nmetadata: {name: overlap-b}\n"),
	}
}

var overlapObjects = []objectRef{
	{group: "rbac.authorization.k8s.io", kind: "ClusterRole", name: "overlap-things-view"},
	{kind: "ConfigMap", namespace: "overlap-a", name: "cluster-settings"},
	{kind: "ConfigMap", namespace: "overlap-b", name: "ns-settings"},
}

// TestJourneyOverlap: two apps of one `syncd run` declare the same
// ClusterRole with the same values. That is an overlap, not drift: each
// app's /status counts one, the webhook sink gets one overlap alert per
// app and no drift alert in 10 s, `syncd drift` exits 0 listing
// "overlap: ClusterRole overlap-things-view is also declared by app …",
// `syncd plan` exits 0, and a poll re-applies both apps with no write.
// Then one app changes a shared value: `syncd apply` exits 3 with a
// conflict naming the other app, and the role keeps the first app's
// value.
func TestJourneyOverlap(t *testing.T) {
	j := newDriftJourney(t)
	sha, err := j.repo.Commit("two installs", overlapRepo("get, list"))
	if err != nil {
		t.Fatal(err)
	}
	urlFile := j.w.file("alerts/oncall-url", j.rcv.url+"?token="+alertURLToken+"\n")
	keyFile := j.w.file("alerts/oncall-hmac-key", alertHMACKey+"\n")
	j.w.writeConfig(fmt.Sprintf(`apiVersion: syncd/v1alpha1
kind: Config
sources:
  - name: web
    git: {url: %s, branch: main, interval: 1h}
apps:
  - {name: cluster-install, source: web, path: apps/cluster}
  - {name: ns-install, source: web, path: apps/ns, dependsOn: [cluster-install]}
alerts:
  - {name: oncall, type: webhook, urlFile: %s, hmacKeyFile: %s}
`, j.repo.URL, urlFile, keyFile))
	pushFile := j.w.file("push-secret", pushSecret+"\n")
	j.d = j.w.startDaemon("--webhook-listen", "127.0.0.1:0", "--webhook-secret-file", pushFile)
	for _, app := range []string{"cluster-install", "ns-install"} {
		j.d.waitApplied(app, func(rev string) bool { return rev == sha })
	}
	j.step("both apps applied")

	other := map[string]string{"cluster-install": "ns-install", "ns-install": "cluster-install"}
	waitFor(t, "one overlap alert per app", time.Minute, func() (bool, string) {
		return len(j.openOverlaps()) == 2, strings.Join(j.rcv.bodies(), "\n")
	})
	time.Sleep(10 * time.Second) // the time the daemon has to alert drift, which it must not
	wantOverlaps := map[string]string{}
	for app, o := range other {
		wantOverlaps[app] = "overlap: ClusterRole overlap-things-view is also declared by app " + o + " (2 fields, same values); information, not drift"
	}
	if diff := cmp.Diff(wantOverlaps, j.openOverlaps()); diff != "" {
		t.Errorf("open overlap alerts by app (-want +got):\n%s\n%s", diff, strings.Join(j.rcv.bodies(), "\n"))
	}
	if n := j.alertsOf("drift"); n != 0 {
		t.Errorf("%d drift alerts for an overlap, want none:\n%s", n, strings.Join(j.rcv.bodies(), "\n"))
	}
	apps, err := j.d.status()
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range apps {
		if a.Findings != 0 || a.Overlaps != 1 {
			t.Errorf("/status of app %s: %d findings, %d overlaps; want 0 and 1", a.App, a.Findings, a.Overlaps)
		}
	}
	j.step("overlap alerts, no drift alert in 10 s, /status")

	for app, o := range other {
		r := j.w.must(exitOK, "drift", "--config", j.w.config, "--app", app, "--cache-dir", j.cliCache)
		want := "overlap: ClusterRole overlap-things-view is also declared by app " + o + " (2 fields, same values)"
		if !strings.Contains(r.stdout, want) || !strings.Contains(r.stdout, "no drift") {
			t.Errorf("syncd drift --app %s does not say %q and no drift:\n%s", app, want, r)
		}
		j.w.must(exitOK, "plan", "--config", j.w.config, "--app", app, "--cache-dir", j.cliCache)
	}
	j.step("syncd drift and plan exit 0")

	before := j.cl.syncdEntries(t, refSet(overlapObjects))
	j.push(sha)
	for _, app := range []string{"cluster-install", "ns-install"} {
		waitFor(t, "a run of app "+app+" after the push", 2*time.Minute, func() (bool, string) {
			apps, err := j.d.status()
			if err != nil {
				return false, err.Error()
			}
			for _, a := range apps {
				if a.App == app && a.Result != "" && a.Result != "pending" && a.LastRun.After(time.Now().Add(-time.Minute)) {
					return a.Changed == 0 && a.Error == "", fmt.Sprintf("%+v", a)
				}
			}
			return false, fmt.Sprintf("%+v", apps)
		})
	}
	if diff := cmp.Diff(before, j.cl.syncdEntries(t, refSet(overlapObjects))); diff != "" {
		t.Errorf("re-applying both apps wrote objects (syncd's managedFields -before +after):\n%s", diff)
	}
	j.d.stop()
	j.step("a poll re-applies both apps with no write")

	if _, err := j.repo.Commit("ns-install adds watch", overlapRepo("get, list, watch")); err != nil {
		t.Fatal(err)
	}
	r := j.w.must(exitConflict, "apply", "--config", j.w.config, "--app", "ns-install", "--cache-dir", j.cliCache)
	if !strings.Contains(r.stdout+r.stderr, `is owned by "syncd-cluster-install" of app cluster-install`) {
		t.Errorf("syncd apply of a changed shared value does not name the other app:\n%s", r)
	}
	role, err := j.cl.get(overlapObjects[0])
	if err != nil {
		t.Fatal(err)
	}
	if verbs := fmt.Sprint(role.Object["rules"]); strings.Contains(verbs, "watch") {
		t.Errorf("the refused apply changed the shared role: %s", verbs)
	}
	j.step("a changed shared value is a conflict naming the other app")
	j.w.record(j.rcv.bodies()...)
	j.w.checkNoSecrets(alertHMACKey, alertURLToken, pushSecret)
}

// openOverlaps returns the open overlap alerts' summaries by app.
func (j *driftJourney) openOverlaps() map[string]string {
	j.rcv.mu.Lock()
	defer j.rcv.mu.Unlock()
	out := map[string]string{}
	for _, a := range j.rcv.alerts {
		if a.Type == "overlap" && a.State == "open" {
			out[a.App] = a.Summary
		}
	}
	return out
}

// alertsOf counts the alerts of type typ received.
func (j *driftJourney) alertsOf(typ string) int {
	j.rcv.mu.Lock()
	defer j.rcv.mu.Unlock()
	n := 0
	for _, a := range j.rcv.alerts {
		if a.Type == typ {
			n++
		}
	}
	return n
}
