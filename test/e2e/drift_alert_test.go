package e2e

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"syncd.dev/syncd/internal/testenv/gitserver"
)

// Journey 11's secrets: none may be printed, logged or sent.
const (
	alertHMACKey  = "hmac-e2e-Jt5Ws8Lp2Qx9Vb3"
	alertURLToken = "tok-e2e-Bn4Hy7Kd1Rv6Zm8"
	pushSecret    = "push-e2e-Cz2Mf9Gt4Xe7Nw1"
)

// driftNS is the namespace of journey 11's app.
const driftNS = "drift-web"

// driftRepo is the app journey 11 runs: a namespace, a Deployment and
// its settings.
func driftRepo(image string) map[string][]byte {
	return map[string][]byte{
		"apps/web/namespace.yaml": []byte("apiVersion: v1\nkind: Namespace\nmetadata: {name: " + driftNS + "}\n"),
		"apps/web/configmap.yaml": []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: web-settings}\ndata: {LOG_LEVEL: info}\n"),
		"apps/web/deployment.yaml": []byte(fmt.Sprintf(`apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: 2
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      containers:
        - name: web
          image: ghcr.io/example/web:%s
          envFrom: [{configMapRef: {name: web-settings}}]
`, image)),
	}
}

var (
	driftDeployment = objectRef{group: "apps", kind: "Deployment", namespace: driftNS, name: "web"}
	driftObjects    = []objectRef{
		{kind: "Namespace", name: driftNS},
		{kind: "ConfigMap", namespace: driftNS, name: "web-settings"},
		driftDeployment,
	}
)

// The fields the hand edits take, in the API server's notation.
const (
	imagePath    = `.spec.template.spec.containers[name="web"].image`
	replicasPath = ".spec.replicas"
)

// driftJourney is journey 11's state.
type driftJourney struct {
	t        *testing.T
	w        *workspace
	cl       *cluster
	repo     *gitserver.Repo
	rcv      *receiver
	d        *daemon
	cliCache string
	step     func(string)
}

// TestJourneyDriftAlert: `syncd run` applies an app whose conflict
// policy forces kubectl edits back and whose alerts go to a signed
// webhook (its URL, with a token, and its HMAC key in files). Hand edits
// with kubectl set image and kubectl scale are alerted with the culprit
// (manager, operation, subresource, time) and reported by `syncd drift`
// (exit 2); a push webhook makes the daemon poll, which forces them back:
// resolved alerts, `syncd drift` exit 0. The journey is daemon-driven,
// so it goes through journey.run's steps itself: the first sync, a poll
// at the same revision that writes nothing, plan exit 0, a commit
// applied by the daemon, plan exit 0, and no secret printed anywhere
// (the daemon's log included).
func TestJourneyDriftAlert(t *testing.T) {
	j := newDriftJourney(t)
	sha := j.commit("web 1.0.0", "1.0.0")
	j.start()
	j.d.waitApplied("web", func(rev string) bool { return rev == sha })
	j.rcv.waitFor(t, func(a alert) bool { return a.Type == "sync" && a.Revision == sha })
	j.step("first sync, sync alert")

	j.checkPollWritesNothing(sha)
	j.w.must(exitOK, j.cli("plan")...)
	j.step("poll (no change), plan")

	edited := time.Now()
	j.handEdit()
	j.checkAlerts(edited)
	j.step("hand edit, alerts")

	j.checkDriftCommand()
	j.step("syncd drift")

	j.forceBack(sha)
	j.step("forced back")

	next := j.commit("web 1.1.0", "1.1.0")
	j.push(next)
	j.d.waitApplied("web", func(rev string) bool { return rev == next })
	j.checkLive("ghcr.io/example/web:1.1.0", 2)
	j.w.must(exitOK, j.cli("plan")...)
	j.step("commit applied, plan")

	j.d.stop()
	j.w.record(j.rcv.bodies()...)
	if r := j.rcv.refusals(); len(r) > 0 {
		t.Errorf("the receiver refused requests: %q", r)
	}
	j.w.checkNoSecrets(alertHMACKey, alertURLToken, pushSecret)
}

func newDriftJourney(t *testing.T) *driftJourney {
	j := &driftJourney{t: t, w: newWorkspace(t), cl: newCluster(t), rcv: startReceiver(t), step: stepper(t)}
	j.cliCache = filepath.Join(j.w.dir, "cache-cli")
	j.repo = gitserver.StartTest(t).NewTestRepo(t, "web")
	j.rcv.requireCheck(checkSignedAlert)
	return j
}

func (j *driftJourney) commit(msg, image string) string {
	j.t.Helper()
	sha, err := j.repo.Commit(msg, driftRepo(image))
	if err != nil {
		j.t.Fatal(err)
	}
	return sha
}

// start writes the config (the app, its conflict policy, the webhook
// sink) and starts `syncd run` with push webhooks.
func (j *driftJourney) start() {
	urlFile := j.w.file("alerts/oncall-url", j.rcv.url+"?token="+alertURLToken+"\n")
	keyFile := j.w.file("alerts/oncall-hmac-key", alertHMACKey+"\n")
	j.w.writeConfig(fmt.Sprintf(`apiVersion: syncd/v1alpha1
kind: Config
sources:
  - name: web
    git:
      url: %s
      branch: main
      interval: 1h                  # polls come from the push webhook
apps:
  - name: web
    source: web
    path: apps/web
    namespace: %s
    conflicts:
      default: fail
      rules:
        # Hand edits are taken back: kubectl set image writes as
        # kubectl-set, kubectl scale (which has no --field-manager) as
        # kubectl, after its User-Agent.
        - managers: ["kubectl", "kubectl-*"]
          action: force
alerts:
  - name: oncall
    type: webhook
    urlFile: %s
    hmacKeyFile: %s
`, j.repo.URL, driftNS, urlFile, keyFile))
	pushFile := j.w.file("push-secret", pushSecret+"\n")
	j.d = j.w.startDaemon("--webhook-listen", "127.0.0.1:0", "--webhook-secret-file", pushFile)
}

// cli is a command line for the app with the CLI's own cache.
func (j *driftJourney) cli(cmd string) []string {
	return []string{cmd, "--config", j.w.config, "--app", "web", "--cache-dir", j.cliCache}
}

// checkSignedAlert is the receiver's check (docs/alerts.md, Signature):
// the token of the URL the file holds, and X-Syncd-Signature over the
// timestamp and the raw body with the HMAC key.
func checkSignedAlert(req *http.Request, body []byte) error {
	if req.URL.Query().Get("token") != alertURLToken {
		return errors.New("the request's URL has not the token of the URL file")
	}
	ts := req.Header.Get("X-Syncd-Timestamp")
	secs, err := strconv.ParseInt(ts, 10, 64)
	if err != nil {
		return fmt.Errorf("X-Syncd-Timestamp %q: %w", ts, err)
	}
	if age := time.Since(time.Unix(secs, 0)); age > 5*time.Minute || age < -5*time.Minute {
		return fmt.Errorf("X-Syncd-Timestamp %s is %s away", ts, age)
	}
	mac := hmac.New(sha256.New, []byte(alertHMACKey))
	mac.Write([]byte(ts + "."))
	mac.Write(body)
	if want := "sha256=" + hex.EncodeToString(mac.Sum(nil)); !hmac.Equal([]byte(req.Header.Get("X-Syncd-Signature")), []byte(want)) {
		return errors.New("X-Syncd-Signature does not match")
	}
	return nil
}

// push sends a signed GitHub push event for the repository to the
// daemon's webhook listener, which polls the source at once, then sends
// the same delivery again: a replay, answered 200 without a poll. Each
// push is a delivery of its own (its id, and its body's head_commit
// timestamp, as GitHub's differ), so pushing one SHA twice polls twice.
func (j *driftJourney) push(sha string) {
	j.t.Helper()
	now := time.Now().UTC()
	body, err := json.Marshal(map[string]any{"ref": "refs/heads/main", "after": sha, "repository": map[string]string{"clone_url": j.repo.URL},
		"head_commit": map[string]string{"id": sha, "timestamp": now.Format(time.RFC3339Nano)}})
	if err != nil {
		j.t.Fatal(err)
	}
	delivery := fmt.Sprintf("e2e-%d", now.UnixNano())
	if code, answer := j.deliver(body, delivery); code != http.StatusAccepted {
		j.t.Fatalf("POST /webhook/github: %d: %s", code, answer)
	}
	if code, answer := j.deliver(body, delivery); code != http.StatusOK || !strings.Contains(answer, "already received") {
		j.t.Errorf("the same delivery again: %d: %s; want 200, already received", code, answer)
	}
}

// deliver posts one signed GitHub push delivery and returns the answer.
func (j *driftJourney) deliver(body []byte, delivery string) (int, string) {
	j.t.Helper()
	mac := hmac.New(sha256.New, []byte(pushSecret))
	mac.Write(body)
	addr := j.d.waitLogged("syncd started", "webhookListen")
	req, err := http.NewRequest(http.MethodPost, "http://"+addr+"/webhook/github", bytes.NewReader(body))
	if err != nil {
		j.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-GitHub-Event", "push")
	req.Header.Set("X-GitHub-Delivery", delivery)
	req.Header.Set("X-Hub-Signature-256", "sha256="+hex.EncodeToString(mac.Sum(nil)))
	resp, err := loopback.Do(req)
	if err != nil {
		j.t.Fatal(err)
	}
	defer resp.Body.Close()
	answer, _ := io.ReadAll(resp.Body)
	j.w.record(string(answer))
	return resp.StatusCode, string(answer)
}

// pollNow pushes sha and waits for the daemon's next run of the app to
// end, returning its status.
func (j *driftJourney) pollNow(sha string) appStatus {
	j.t.Helper()
	before := j.status()
	j.push(sha)
	var got appStatus
	waitFor(j.t, "a run of app web after the push", 2*time.Minute, func() (bool, string) {
		got = j.status()
		return got.LastRun.After(before.LastRun) && got.Result != "" && got.Result != "pending", fmt.Sprintf("%+v", got)
	})
	return got
}

// status is app web's /status entry.
func (j *driftJourney) status() appStatus {
	j.t.Helper()
	apps, err := j.d.status()
	if err != nil {
		j.t.Fatal(err)
	}
	for _, a := range apps {
		if a.App == "web" {
			return a
		}
	}
	j.t.Fatalf("/status has no app web: %+v", apps)
	return appStatus{}
}

// checkPollWritesNothing: a poll at the same revision re-applies the
// app and the API server writes nothing.
func (j *driftJourney) checkPollWritesNothing(sha string) {
	j.t.Helper()
	before := j.cl.syncdEntries(j.t, refSet(driftObjects))
	st := j.pollNow(sha)
	if st.Revision != sha || st.Error != "" || st.Changed != 0 {
		j.t.Errorf("a poll at the same revision: %+v, want revision %s, no error, nothing changed", st, sha)
	}
	if diff := cmp.Diff(before, j.cl.syncdEntries(j.t, refSet(driftObjects))); diff != "" {
		j.t.Errorf("a poll at the same revision wrote objects (syncd's managedFields -before +after):\n%s", diff)
	}
}

// handEdit hot-fixes the image and scales the Deployment by hand.
func (j *driftJourney) handEdit() {
	mustKubectl(j.t, "-n", driftNS, "set", "image", "deployment/web", "web=ghcr.io/example/web:1.0.0-hotfix")
	mustKubectl(j.t, "-n", driftNS, "scale", "deployment/web", "--replicas=5")
}

// culprit is what a drift report says of one field.
type culprit struct {
	Class, Desired, Live            string
	Manager, Operation, Subresource string
	HasTime                         bool
}

// wantCulprits are the hand edits as the alerts must name them.
var wantCulprits = map[string]culprit{
	imagePath: {Class: "taken-over", Desired: "ghcr.io/example/web:1.0.0", Live: "ghcr.io/example/web:1.0.0-hotfix",
		Manager: "kubectl-set", Operation: "Update", HasTime: true},
	replicasPath: {Class: "taken-over", Desired: "2", Live: "5",
		Manager: "kubectl", Operation: "Update", Subresource: "scale"},
}

// checkAlerts waits for open drift alerts on the Deployment naming both
// fields with their culprits, and checks a culprit's time is the edit's.
func (j *driftJourney) checkAlerts(edited time.Time) {
	j.t.Helper()
	var got map[string]culprit
	var times []string
	waitFor(j.t, "drift alerts naming both hand edits", time.Minute, func() (bool, string) {
		got, times = j.openDrift()
		return len(got) == len(wantCulprits), fmt.Sprintf("%+v\n%s", got, strings.Join(j.rcv.bodies(), "\n"))
	})
	if diff := cmp.Diff(wantCulprits, got); diff != "" {
		j.t.Errorf("drift alerts' fields (-want +got):\n%s", diff)
	}
	for _, ts := range times {
		at, err := time.Parse(time.RFC3339, ts)
		if err != nil || at.Before(edited.Add(-2*time.Second).Truncate(time.Second)) || at.After(time.Now()) {
			j.t.Errorf("culprit time %q (%v), want the edit's, at %s", ts, err, edited.UTC().Format(time.RFC3339))
		}
	}
}

// openDrift reads the open drift alerts on the Deployment: each field
// with its culprit, and the culprits' times.
func (j *driftJourney) openDrift() (map[string]culprit, []string) {
	j.rcv.mu.Lock()
	defer j.rcv.mu.Unlock()
	got := map[string]culprit{}
	var times []string
	for _, a := range j.rcv.alerts {
		if a.Type != "drift" || a.State != "open" || a.Object.Kind != "Deployment" || a.Object.Name != "web" {
			continue
		}
		for _, f := range a.Fields {
			c := culprit{Class: f.Class, Desired: f.Desired, Live: f.Live}
			if f.Culprit != nil {
				c.Manager, c.Operation, c.Subresource, c.HasTime = f.Culprit.Manager, f.Culprit.Operation, f.Culprit.Subresource, f.Culprit.Time != ""
				if f.Culprit.Time != "" {
					times = append(times, f.Culprit.Time)
				}
			}
			got[f.Path] = c
		}
	}
	return got, times
}

// checkDriftCommand: `syncd drift` finds both fields and names the
// culprits, exit 2.
func (j *driftJourney) checkDriftCommand() {
	j.t.Helper()
	r := j.w.must(exitChanges, j.cli("drift")...)
	for _, want := range []string{
		"Deployment " + driftNS + "/web: " + imagePath + " was changed from ghcr.io/example/web:1.0.0 to ghcr.io/example/web:1.0.0-hotfix by kubectl-set (Update) at ",
		"Deployment " + driftNS + "/web: " + replicasPath + " was changed from 2 to 5 by kubectl (Update, subresource scale)",
	} {
		if !strings.Contains(r.stdout, want) {
			j.t.Errorf("syncd drift does not say %q\n%s", want, r)
		}
	}
}

// forceBack has the daemon poll (a push): the policy forces both fields
// back, each alert is resolved, and `syncd drift` and plan exit 0.
func (j *driftJourney) forceBack(sha string) {
	j.t.Helper()
	st := j.pollNow(sha)
	if st.Error != "" {
		j.t.Errorf("the poll that forces the edits back: %+v", st)
	}
	j.checkLive("ghcr.io/example/web:1.0.0", 2)
	waitFor(j.t, "resolved drift alerts for both fields", time.Minute, func() (bool, string) {
		return j.resolved() == len(wantCulprits), strings.Join(j.rcv.bodies(), "\n")
	})
	j.w.must(exitOK, j.cli("drift")...)
	j.w.must(exitOK, j.cli("plan")...)
}

// resolved counts the Deployment's fields that resolved drift alerts
// name.
func (j *driftJourney) resolved() int {
	j.rcv.mu.Lock()
	defer j.rcv.mu.Unlock()
	paths := map[string]bool{}
	for _, a := range j.rcv.alerts {
		if a.Type == "drift" && a.State == "resolved" && a.Object.Name == "web" {
			for _, f := range a.Fields {
				paths[f.Path] = true
			}
		}
	}
	return len(paths)
}

// checkLive checks the Deployment's image and replicas, and that syncd
// owns both again.
func (j *driftJourney) checkLive(image string, replicas int64) {
	j.t.Helper()
	d, err := j.cl.get(driftDeployment)
	if err != nil {
		j.t.Fatal(err)
	}
	gotReplicas, _, _ := unstructured.NestedInt64(d.Object, "spec", "replicas")
	if got := containerImage(d); got != image || gotReplicas != replicas {
		j.t.Errorf("Deployment %s: image %s, %d replicas; want %s and %d", driftDeployment, got, gotReplicas, image, replicas)
	}
	for _, path := range []string{imagePath, replicasPath} {
		if owners := fieldOwners(d, path); !cmp.Equal(owners, []string{"syncd-web"}) {
			j.t.Errorf("%s owned by %q, want syncd-web alone", path, owners)
		}
	}
}

// containerImage is the image of a Deployment's first container.
func containerImage(d *unstructured.Unstructured) string {
	cs, _, _ := unstructured.NestedSlice(d.Object, "spec", "template", "spec", "containers")
	if len(cs) == 0 {
		return ""
	}
	image, _ := cs[0].(map[string]any)["image"].(string)
	return image
}
