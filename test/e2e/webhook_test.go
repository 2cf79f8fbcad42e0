package e2e

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"syncd.dev/syncd/internal/testenv/gitserver"
)

// guardWebhook is an admission webhook for ConfigMaps in namespaces
// labelled e2e-guard=on, served by a Service with no endpoints: the shape
// of an ingress controller's or a cert manager's install before its pods
// run.
const guardWebhook = `apiVersion: v1
kind: Namespace
metadata:
  name: hooked
  labels: {e2e-guard: "on"}
---
apiVersion: v1
kind: Service
metadata: {name: guard, namespace: hooked}
spec:
  ports: [{port: 443, targetPort: 8443}]
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingWebhookConfiguration
metadata: {name: e2e-guard}
webhooks:
  - name: guard.e2e.syncd.dev
    admissionReviewVersions: [v1]
    sideEffects: None
    failurePolicy: Fail
    namespaceSelector: {matchLabels: {e2e-guard: "on"}}
    rules:
      - apiGroups: [""]
        apiVersions: [v1]
        operations: [CREATE, UPDATE]
        resources: [configmaps]
    clientConfig:
      service: {name: guard, namespace: hooked, path: /validate}
`

// TestWebhookWithoutEndpoints: with the control plane's aggregator
// routing, a webhook whose Service has no endpoints fails at once
// (never a dial to a ClusterIP off the machine), and syncd apply names
// the webhook instead of telling the user to fix the object in Git.
func TestWebhookWithoutEndpoints(t *testing.T) {
	w := newWorkspace(t)
	if out, err := kubectl("apply", "-f", w.file("guard.yaml", guardWebhook)); err != nil {
		t.Fatalf("kubectl apply: %v\n%s", err, out)
	}
	t.Cleanup(func() { _, _ = kubectl("delete", "validatingwebhookconfiguration", "e2e-guard", "--ignore-not-found") })
	w.file("app/settings.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: settings}\ndata: {mode: strict}\n")

	r := w.must(exitError, "apply", "--path", w.dir+"/app", "--manager", "e2e-hooked", "--namespace", "hooked")
	out := r.stdout + r.stderr
	for _, want := range []string{
		`no endpoints available for service "guard"`,
		`the admission webhook "guard.e2e.syncd.dev" could not be called`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("apply does not say %q\n%s", want, r)
		}
	}
	if strings.Contains(out, "fix the object in Git") {
		t.Errorf("apply blames the object for a webhook that could not be called\n%s", r)
	}
}

// pushNS is the namespace of the push webhook journey's app.
const pushNS = "push-hooks"

// pushSource is its source: it follows branch main.
const pushSource = "push-hooks"

// pushAppNS is the namespace of the journey's App object, whose
// GitSource pushGitSource follows branch release of the same
// repository.
const (
	pushAppNS     = "push-hooks-apps"
	pushGitSource = "releases"
)

// pushJourney is the push webhook journey's state.
type pushJourney struct {
	t    *testing.T
	w    *workspace
	cl   *cluster
	repo *gitserver.Repo
	d    *daemon
	step func(string)
}

// TestJourneyPushWebhook: `syncd run` with push webhooks, as GitHub
// drives it, over a config file's source following main and a
// GitSource (of an App object) following release, both polled hourly.
// The ping GitHub sends when the hook is created answers 200 and polls
// nothing (a badly signed one is 401); a push of a branch neither
// follows answers 202, says so, and polls nothing; a push of main polls
// the config file's source only, which applies the new commit; a push
// of release polls the GitSource only, whose App applies the new
// commit. The source's polls are counted on /metrics: one at start, one
// for the push of main, none for the others.
func TestJourneyPushWebhook(t *testing.T) {
	j := &pushJourney{t: t, w: newWorkspace(t), cl: newCluster(t), step: stepper(t)}
	ensureNamespace(t, pushNS)
	j.repo = gitserver.StartTest(t).NewTestRepo(t, "push-hooks")
	first := j.commit("blue")
	release := j.commitOn("release", "amber")
	j.start()
	j.declareApp()
	j.d.waitApplied(pushNS+"-web", func(rev string) bool { return rev == first })
	j.waitAppApplied(release)
	polls := j.polls()
	j.step("first sync")

	j.expect("ping", githubPing(j.repo.URL), pushSecret, http.StatusOK, "ping received: this hook is set up")
	j.expect("ping", githubPing(j.repo.URL), "not-the-secret", http.StatusUnauthorized, "signature does not match")
	j.step("ping")

	feature := j.commitOn("feature", "red")
	j.expect("push", githubPush(j.repo.URL, "refs/heads/feature", feature), pushSecret, http.StatusAccepted,
		`ignored: no source follows "refs/heads/feature" of "`)
	j.step("push of another branch")

	next := j.commit("green")
	j.expect("push", githubPush(j.repo.URL, "refs/heads/main", next), pushSecret, http.StatusAccepted, "polling "+pushSource+"\n")
	j.d.waitApplied(pushNS+"-web", func(rev string) bool { return rev == next })
	j.checkColor(pushNS, "green")
	j.step("push of main applied")

	// Polls of one source never overlap and run in order: had the ping
	// or the push of feature polled, that poll would have ended before
	// the one that applied main's commit.
	if got := j.polls(); got != polls+1 {
		t.Errorf("the source was polled %d times after the first sync, want 1 (the push of main only)", got-polls)
	}

	released := j.commitOn("release", "violet")
	j.expect("push", githubPush(j.repo.URL, "refs/heads/release", released), pushSecret, http.StatusAccepted,
		"polling GitSource "+pushAppNS+"/"+pushGitSource+"\n")
	j.waitAppApplied(released)
	j.checkColor(pushAppNS, "violet")
	j.step("push of release applied by the App")

	families := scrape(t, j.d.addr)
	for res, want := range map[string]float64{"ping": 1, "unauthorized": 1, "ignored": 1, "triggered": 2} {
		if got := value(families, "syncd_webhook_requests_total", map[string]string{"provider": "github", "result": res}); got != want {
			t.Errorf("syncd_webhook_requests_total{provider=github,result=%s} = %v, want %v", res, got, want)
		}
	}
	j.d.stop()
	j.w.checkNoSecrets(pushSecret)
}

// commit commits the ConfigMap of color on main and returns its SHA.
func (j *pushJourney) commit(color string) string {
	j.t.Helper()
	sha, err := j.repo.Commit("color "+color, map[string][]byte{
		"app/settings.yaml": []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: settings}\ndata: {color: " + color + "}\n"),
	})
	if err != nil {
		j.t.Fatal(err)
	}
	return sha
}

// commitOn commits color on branch (made from main the first time) and
// goes back to main; it returns the branch's new SHA.
func (j *pushJourney) commitOn(branch, color string) string {
	j.t.Helper()
	if _, err := j.repo.Git("checkout", "-q", branch); err != nil {
		if out, err := j.repo.Git("checkout", "-q", "-b", branch); err != nil {
			j.t.Fatalf("git checkout -b %s: %v\n%s", branch, err, out)
		}
	}
	sha := j.commit(color)
	if out, err := j.repo.Git("checkout", "-q", "main"); err != nil {
		j.t.Fatalf("git checkout main: %v\n%s", err, out)
	}
	return sha
}

// start writes the config (one source following main, polled hourly so
// every other poll comes from a push) and starts `syncd run` with push
// webhooks.
func (j *pushJourney) start() {
	j.w.writeConfig(fmt.Sprintf(`apiVersion: syncd/v1alpha1
kind: Config
sources:
  - name: %s
    git: {url: %s, branch: main, interval: 1h}
apps:
  - {name: %s-web, source: %s, path: app, namespace: %s}
`, pushSource, j.repo.URL, pushNS, pushSource, pushNS))
	secretFile := j.w.file("push-secret", pushSecret+"\n")
	j.d = j.w.startDaemon("--webhook-listen", "127.0.0.1:0", "--webhook-secret-file", secretFile)
}

// declareApp creates the GitSource following release, polled hourly,
// and its App, whose objects land in its own namespace. At cleanup the
// daemon has stopped: the App loses its finalizer as it is deleted (its
// objects stay), so that later journeys do not meet it.
func (j *pushJourney) declareApp() {
	ensureNamespace(j.t, pushAppNS)
	manifest := j.w.file("push-app.yaml", fmt.Sprintf(`apiVersion: syncd.dev/v1alpha1
kind: GitSource
metadata: {name: %s}
spec: {url: %s, branch: release, interval: 1h}
---
apiVersion: syncd.dev/v1alpha1
kind: App
metadata: {name: web}
spec:
  sourceRef: {kind: GitSource, name: %s}
  path: app
`, pushGitSource, j.repo.URL, pushGitSource))
	mustKubectl(j.t, "-n", pushAppNS, "apply", "-f", manifest)
	j.t.Cleanup(func() {
		_, _ = kubectl("-n", pushAppNS, "delete", "app/web", "--ignore-not-found", "--wait=false")
		_, _ = kubectl("-n", pushAppNS, "patch", "app/web", "--type=merge", "-p", `{"metadata":{"finalizers":null}}`)
		_, _ = kubectl("-n", pushAppNS, "delete", "gitsource/"+pushGitSource, "--ignore-not-found")
	})
}

// waitAppApplied waits until the App is Ready with lastAppliedRevision
// sha.
func (j *pushJourney) waitAppApplied(sha string) {
	j.t.Helper()
	ref := objectRef{group: "syncd.dev", kind: "App", namespace: pushAppNS, name: "web"}
	waitFor(j.t, "App "+pushAppNS+"/web Ready at "+sha, 2*time.Minute, func() (bool, string) {
		app, err := j.cl.get(ref)
		if err != nil {
			return false, err.Error()
		}
		rev, _, _ := unstructured.NestedString(app.Object, "status", "lastAppliedRevision")
		return rev == sha && readyStatus(app) == "True", fmt.Sprint(app.Object["status"])
	})
}

// polls is how many polls of the source /metrics counts.
func (j *pushJourney) polls() uint64 {
	j.t.Helper()
	return count(scrape(j.t, j.d.addr), "syncd_source_fetch_duration_seconds", map[string]string{"source": pushSource})
}

// expect delivers a GitHub event signed with secret and checks the
// answer's code and that it says want.
func (j *pushJourney) expect(event string, body []byte, secret string, code int, want string) {
	j.t.Helper()
	got, answer := deliverGitHub(j.t, j.d.waitLogged("syncd started", "webhookListen"), event, body, secret)
	j.w.record(answer)
	if got != code || !strings.Contains(answer, want) {
		j.t.Errorf("GitHub %s event: %d %q; want %d and %q", event, got, answer, code, want)
	}
}

// checkColor checks the color of the live ConfigMap in ns.
func (j *pushJourney) checkColor(ns, want string) {
	j.t.Helper()
	cm, err := clientset(j.t).CoreV1().ConfigMaps(ns).Get(context.Background(), "settings", metav1.GetOptions{})
	if err != nil {
		j.t.Fatal(err)
	}
	if got := cm.Data["color"]; got != want {
		j.t.Errorf("ConfigMap %s/settings: color %q, want %q", ns, got, want)
	}
}

// githubPing is the ping GitHub sends to a new repository hook.
func githubPing(repoURL string) []byte {
	return []byte(fmt.Sprintf(`{"zen":"Practicality beats purity.","hook_id":4242,"hook":{"type":"Repository","id":4242,"events":["push"],"config":{"content_type":"json"}},"repository":{"clone_url":%q}}`, repoURL))
}

// githubPush is a GitHub push event of ref to sha, with a timestamp so
// that no two bodies are alike (the replay guard remembers bodies).
func githubPush(repoURL, ref, sha string) []byte {
	return []byte(fmt.Sprintf(`{"ref":%q,"after":%q,"repository":{"clone_url":%q},"head_commit":{"id":%q,"timestamp":%q}}`,
		ref, sha, repoURL, sha, time.Now().UTC().Format(time.RFC3339Nano)))
}

// deliverGitHub posts a GitHub delivery of event to the webhook
// listener at addr, signed with secret, and returns the answer.
func deliverGitHub(t *testing.T, addr, event string, body []byte, secret string) (int, string) {
	t.Helper()
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write(body)
	req, err := http.NewRequest(http.MethodPost, "http://"+addr+"/webhook/github", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-GitHub-Event", event)
	req.Header.Set("X-GitHub-Delivery", fmt.Sprintf("e2e-%s-%d", event, time.Now().UnixNano()))
	req.Header.Set("X-Hub-Signature-256", "sha256="+hex.EncodeToString(mac.Sum(nil)))
	resp, err := loopback.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	answer, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(answer)
}
