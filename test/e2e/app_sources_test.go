package e2e

import (
	"encoding/base64"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"syncd.dev/syncd/internal/testenv/helmserver"
	"syncd.dev/syncd/internal/testenv/ociregistry"
)

// sourcesJourney is the state of the journey of Apps of a HelmSource
// and an OCISource.
type sourcesJourney struct {
	t  *testing.T
	w  *workspace
	cl *cluster
	ns string
}

// TestJourneyAppsOfHelmAndOCISources: a team declares, with kubectl, a
// HelmSource (a chart repository wanting basic auth, the password in a
// Secret) and an OCISource (a registry wanting basic auth, a Docker
// config in a kubernetes.io/dockerconfigjson-keyed Secret), and an App
// of each; `syncd run` without --config applies both, Ready; `syncd get
// helmsources` and `syncd get ocisources` show the fetched revisions; a
// reconcile of each App writes nothing; no credential is printed.
func TestJourneyAppsOfHelmAndOCISources(t *testing.T) {
	const (
		user     = "robot-team"
		password = "Zq4Lm8Xp2Vt6Kw9Rb3Hn"
	)
	j := &sourcesJourney{t: t, w: newWorkspace(t), cl: newCluster(t), ns: "team-sources"}
	step := stepper(t)
	charts := helmserver.Start()
	t.Cleanup(charts.Close)
	basic := base64.StdEncoding.EncodeToString([]byte(user + ":" + password))
	charts.RequireAuth("Basic " + basic)
	if _, err := charts.Publish(helmserver.Chart{Name: "greeter", Version: "1.4.0", Files: map[string]string{
		"values.yaml":       "greeting: hello\n",
		"templates/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: greeter\ndata:\n  greeting: {{ .Values.greeting | quote }}\n",
	}}); err != nil {
		t.Fatal(err)
	}
	reg := ociregistry.Start()
	t.Cleanup(reg.Close)
	reg.RequireBasic(user, password)
	digest, err := reg.PushFiles("team/bundle", "v1", map[string]string{
		"deploy/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: bundle\ndata:\n  release: v1\n",
	})
	if err != nil {
		t.Fatal(err)
	}
	j.declare(charts.URL, reg, user, password)
	d := j.w.startDaemon()
	step("declare, start")

	mustKubectl(t, "-n", j.ns, "wait", "--for=condition=Ready", "app/greeter", "app/bundle", "--timeout=120s")
	j.checkData("greeter", "greeting", "hi from the App")
	j.checkData("bundle", "release", "v1")
	step("Apps Ready")

	j.checkGet("helmsources", "charts", charts.URL, "greeter-1.4.0")
	j.checkGet("ocisources", "bundle", reg.URL("team/bundle"), "v1@"+digest)
	step("get helmsources, ocisources")

	j.checkReconcileWritesNothing("greeter")
	j.checkReconcileWritesNothing("bundle")
	step("reconcile (no change)")

	// plan --app previews Apps of GitSources only, and says so.
	r := j.w.must(exitError, "plan", "--app", "greeter", "-n", j.ns)
	if want := "App team-sources/greeter: its source is a HelmSource; plan --app previews Apps of GitSources only"; !strings.Contains(r.stderr, want) {
		t.Errorf("plan --app of a HelmSource App: stderr lacks %q:\n%s", want, r)
	}
	step("plan refuses clearly")

	// Deleted while syncd runs, each App prunes its ConfigMap through its
	// finalizer; cleanUp then has nothing left to wait for.
	mustKubectl(t, "-n", j.ns, "delete", "app/greeter", "app/bundle", "--timeout=60s")
	for _, name := range []string{"greeter", "bundle"} {
		if _, err := j.cl.get(objectRef{kind: "ConfigMap", namespace: j.ns, name: name}); !apierrors.IsNotFound(err) {
			t.Errorf("ConfigMap %s after its App was deleted: %v, want NotFound (pruned)", name, err)
		}
	}
	step("delete Apps (pruned)")
	d.stop()
	j.w.checkNoSecrets(password, basic)
}

// declare creates the namespace, the Secrets, the sources and the Apps
// with kubectl, as docs/sources.md shows; cleanup deletes the Apps
// (pruned) and the rest.
func (j *sourcesJourney) declare(chartsURL string, reg *ociregistry.Registry, user, password string) {
	ensureNamespace(j.t, j.ns)
	passwordFile := j.w.file("charts-password", password)
	mustKubectl(j.t, "-n", j.ns, "create", "secret", "generic", "charts-auth", "--from-literal=username="+user, "--from-file=password="+passwordFile)
	docker := j.w.file("docker-config.json", dockerConfig(reg.Host, user, password))
	mustKubectl(j.t, "-n", j.ns, "create", "secret", "generic", "registry-auth", "--from-file=.dockerconfigjson="+docker)
	manifest := j.w.file("team-sources.yaml", fmt.Sprintf(`apiVersion: syncd.dev/v1alpha1
kind: HelmSource
metadata:
  name: charts
spec:
  url: %s
  interval: 10m
  secretRef: {name: charts-auth}
---
apiVersion: syncd.dev/v1alpha1
kind: OCISource
metadata:
  name: bundle
spec:
  url: %s
  tag: v1
  interval: 10m
  secretRef: {name: registry-auth}
---
apiVersion: syncd.dev/v1alpha1
kind: App
metadata:
  name: greeter
spec:
  sourceRef: {kind: HelmSource, name: charts}
  helm:
    chart: greeter
    version: "~1.4"
    values: {greeting: hi from the App}
---
apiVersion: syncd.dev/v1alpha1
kind: App
metadata:
  name: bundle
spec:
  sourceRef: {kind: OCISource, name: bundle}
  path: deploy
`, chartsURL, reg.URL("team/bundle")))
	mustKubectl(j.t, "-n", j.ns, "apply", "-f", manifest)
	j.t.Cleanup(j.cleanUp)
}

// cleanUp deletes what declare created; an App whose prune does not end
// loses its finalizer so that later journeys do not meet it.
func (j *sourcesJourney) cleanUp() {
	for _, app := range []string{"greeter", "bundle"} {
		if _, err := kubectl("-n", j.ns, "delete", "app/"+app, "--ignore-not-found", "--timeout=60s"); err != nil {
			_, _ = kubectl("-n", j.ns, "patch", "app/"+app, "--type=merge", "-p", `{"metadata":{"finalizers":null}}`)
		}
	}
	_, _ = kubectl("-n", j.ns, "delete", "helmsource/charts", "ocisource/bundle", "secret/charts-auth", "secret/registry-auth", "--ignore-not-found")
}

// checkData checks that ConfigMap name of the namespace has key = want.
func (j *sourcesJourney) checkData(name, key, want string) {
	j.t.Helper()
	cm, err := j.cl.get(objectRef{kind: "ConfigMap", namespace: j.ns, name: name})
	if err != nil {
		j.t.Fatalf("ConfigMap %s: %v", name, err)
	}
	if got, _, _ := unstructured.NestedString(cm.Object, "data", key); got != want {
		j.t.Errorf("ConfigMap %s: %s = %q, want %q", name, key, got, want)
	}
}

// checkGet waits until `syncd get <resource>` shows the source Ready at
// revision.
func (j *sourcesJourney) checkGet(resource, name, url, revision string) {
	j.t.Helper()
	want := []string{name, url, "True", revision}
	waitFor(j.t, resource+" "+name+" at "+revision, time.Minute, func() (bool, string) {
		r := j.w.must(exitOK, "get", resource, "-n", j.ns)
		lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
		if got := strings.Join(strings.Fields(lines[0]), " "); got != "NAME URL READY REVISION AGE STATUS" {
			return false, "header " + got
		}
		for _, l := range lines[1:] {
			if row := strings.Fields(l); len(row) >= len(want) && cmp.Equal(row[:len(want)], want) {
				return true, ""
			}
		}
		return false, r.stdout
	})
}

// checkReconcileWritesNothing asks for a reconcile of the App with
// `syncd reconcile app --wait` and checks it wrote nothing to its
// ConfigMap (named as the App).
func (j *sourcesJourney) checkReconcileWritesNothing(app string) {
	j.t.Helper()
	refs := refSet([]objectRef{{kind: "ConfigMap", namespace: j.ns, name: app}})
	before := j.cl.syncdEntries(j.t, refs)
	j.w.must(exitOK, "reconcile", "app", app, "-n", j.ns, "--wait", "--timeout", "2m")
	if diff := cmp.Diff(before, j.cl.syncdEntries(j.t, refs)); diff != "" {
		j.t.Errorf("a reconcile of App %s at the same revision wrote its ConfigMap (syncd's managedFields -before +after):\n%s", app, diff)
	}
}
