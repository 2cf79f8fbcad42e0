package e2e

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"syncd.dev/syncd/internal/testenv/gitserver"
)

// storefront is one version of the shop's manifests: a directory of
// plain YAML, as teams without kustomize keep them.
type storefront struct {
	image    string
	password string // the database password, in a Secret's stringData
	// legacy keeps the old routes ConfigMap in Git.
	legacy bool
	// maintenance is shop-flags' .data.maintenance ("": not declared).
	maintenance string
}

// files are the storefront's files; a nil value deletes a file.
func (s storefront) files() map[string][]byte {
	flags := "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: shop-flags}\ndata:\n  checkout: v2\n"
	if s.maintenance != "" {
		flags += fmt.Sprintf("  maintenance: %q\n", s.maintenance)
	}
	files := map[string][]byte{
		"apps/shop/namespace.yaml": []byte("apiVersion: v1\nkind: Namespace\nmetadata: {name: pr-shop}\n"),
		"apps/shop/deployment.yaml": []byte(fmt.Sprintf(`apiVersion: apps/v1
kind: Deployment
metadata: {name: shop}
spec:
  replicas: 2
  selector:
    matchLabels: {app: shop}
  template:
    metadata:
      labels: {app: shop}
    spec:
      containers:
        - name: shop
          image: ghcr.io/example/shop:%s
          env:
            - name: DB_PASSWORD
              valueFrom: {secretKeyRef: {name: shop-db, key: password}}
`, s.image)),
		"apps/shop/service.yaml": []byte("apiVersion: v1\nkind: Service\nmetadata: {name: shop}\nspec:\n  selector: {app: shop}\n  ports: [{port: 80, targetPort: 8080}]\n"),
		"apps/shop/flags.yaml":   []byte(flags),
		"apps/shop/secret.yaml": []byte(fmt.Sprintf(`apiVersion: v1
kind: Secret
metadata: {name: shop-db}
type: Opaque
stringData:
  username: shop
  password: %s
`, s.password)),
		"apps/shop/legacy-routes.yaml": nil,
	}
	if s.legacy {
		files["apps/shop/legacy-routes.yaml"] = []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: shop-legacy-routes}\ndata:\n  cart: /basket\n")
	}
	return files
}

// prJourney is journey 10's state.
type prJourney struct {
	t    *testing.T
	w    *workspace
	cl   *cluster
	repo *gitserver.Repo
	app  []string // --config C --app pr-shop --cache-dir D
	step func(string)
}

const (
	prToken     = "ghp-e2e-Lq3vX8nB5tY1mK7w"
	prPassword  = "pg-main-Hx7Qm2Vr9Lk4Tz"
	prPassword2 = "pg-rotated-Wd6Fj1Sn8Pc3"
)

// prObjects are the storefront's objects while legacy routes are in
// Git.
var prObjects = []objectRef{
	{kind: "Namespace", name: "pr-shop"},
	{group: "apps", kind: "Deployment", namespace: "pr-shop", name: "shop"},
	{kind: "Service", namespace: "pr-shop", name: "shop"},
	{kind: "ConfigMap", namespace: "pr-shop", name: "shop-flags"},
	{kind: "ConfigMap", namespace: "pr-shop", name: "shop-legacy-routes"},
	{kind: "Secret", namespace: "pr-shop", name: "shop-db"},
}

// TestJourneyPlanPullRequest: an app of a config file from a private Git
// repository goes through journey.run (render, apply, apply again, plan,
// a commit, plan, apply); then someone adds a field by hand, and a pull
// request's checkout (an image bump, a removed object, the hand-added
// field set from Git, a rotated Secret value) is previewed with
// `syncd plan -o markdown` and `-o json`: exit 2, the change, the prune
// and the conflict named, no Secret value, nothing written. The merge is
// applied and plans exit 0.
func TestJourneyPlanPullRequest(t *testing.T) {
	j := newPRJourney(t)
	base := storefront{image: "1.0.0", password: prPassword, legacy: true}
	(&journey{
		w: j.w, app: "pr-shop",
		render:   []string{"--path", filepath.Join(j.repo.Work, "apps", "shop")},
		rendered: []string{"ghcr.io/example/shop:1.0.0", "name: shop-legacy-routes", "<redacted>"},
		secrets:  j.secrets(),
		change:   j.bump(base),
	}).run(t)
	j.step = stepper(t)

	j.handEdit()
	pr := storefront{image: "1.2.0", password: prPassword2, maintenance: "false"}
	checkout := j.openPR(pr)
	before := j.untouched()
	j.step("hand edit, open PR")

	j.checkMarkdown(checkout)
	j.checkJSON(checkout)
	if diff := cmp.Diff(before, j.untouched()); diff != "" {
		t.Errorf("plan wrote to the cluster (-before +after):\n%s", diff)
	}
	j.step("plan the PR")

	j.merge()
	j.step("merge, apply, plan")
	j.w.checkNoSecrets(j.secrets()...)
}

func newPRJourney(t *testing.T) *prJourney {
	j := &prJourney{t: t, w: newWorkspace(t), cl: newCluster(t)}
	srv := gitserver.StartTest(t)
	j.repo = srv.NewTestRepo(t, "storefront")
	if _, err := j.repo.Commit("shop 1.0.0", storefront{image: "1.0.0", password: prPassword, legacy: true}.files()); err != nil {
		t.Fatal(err)
	}
	srv.RequireBasic("git", prToken)
	j.w.writeConfig(fmt.Sprintf(`apiVersion: syncd/v1alpha1
kind: Config
sources:
  - name: storefront
    git:
      url: %s
      branch: main
      interval: 1m
      auth: {tokenFile: %s}
apps:
  - name: pr-shop
    source: storefront
    path: apps/shop
    namespace: pr-shop
    conflicts:
      default: fail
      rules:
        - managers: ["kubectl-*"]   # hand edits are taken back
          action: force
`, j.repo.URL, j.w.file("git-token", prToken+"\n")))
	j.app = []string{"--config", j.w.config, "--app", "pr-shop", "--cache-dir", j.w.cache}
	return j
}

// secrets are the Git token and both passwords, as written and as the
// API server stores them (base64).
func (j *prJourney) secrets() []string {
	out := []string{prToken}
	for _, p := range []string{prPassword, prPassword2} {
		out = append(out, p, base64.StdEncoding.EncodeToString([]byte(p)))
	}
	return out
}

// bump is journey.run's change: shop 1.1.0 committed on main.
func (j *prJourney) bump(base storefront) func() func(*testing.T) {
	return func() func(*testing.T) {
		next := base
		next.image = "1.1.0"
		if _, err := j.repo.Commit("shop 1.1.0", next.files()); err != nil {
			j.t.Fatal(err)
		}
		return func(t *testing.T) { j.checkImage(t, "1.1.0") }
	}
}

// checkImage checks the live Deployment runs the shop at tag.
func (j *prJourney) checkImage(t *testing.T, tag string) {
	t.Helper()
	d, err := j.cl.get(prObjects[1])
	if err != nil {
		t.Fatal(err)
	}
	if got := containerImage(d); got != "ghcr.io/example/shop:"+tag {
		t.Errorf("Deployment pr-shop/shop: image %s, want %s", got, tag)
	}
}

// handEdit: someone adds .data.maintenance to the flags with kubectl
// (a field Git does not declare yet, so main's plan still exits 0).
func (j *prJourney) handEdit() {
	mustKubectl(j.t, "-n", "pr-shop", "patch", "configmap", "shop-flags", "--type=merge",
		"-p", `{"data":{"maintenance":"true"}}`, "--field-manager=kubectl-edit")
	j.w.must(exitOK, append([]string{"plan"}, j.app...)...)
}

// openPR commits pr on branch pr-42 and checks it out in a work tree of
// its own, main untouched; it returns the app's directory there.
func (j *prJourney) openPR(pr storefront) string {
	j.t.Helper()
	j.git("checkout", "-q", "-b", "pr-42")
	sha, err := j.repo.Commit("shop 1.2.0, rotate the password, drop legacy routes, maintenance off", pr.files())
	if err != nil {
		j.t.Fatal(err)
	}
	j.git("checkout", "-q", "main")
	checkout := filepath.Join(j.w.dir, "pr-42")
	j.git("worktree", "add", "-q", checkout, sha)
	return filepath.Join(checkout, "apps", "shop")
}

func (j *prJourney) git(args ...string) {
	j.t.Helper()
	if _, err := j.repo.Git(args...); err != nil {
		j.t.Fatal(err)
	}
}

// checkMarkdown checks the PR comment: the image change, the prune, the
// conflict and its outcome, the Secret's key changed without its value.
func (j *prJourney) checkMarkdown(checkout string) {
	j.t.Helper()
	r := j.w.must(exitChanges, append(append([]string{"plan"}, j.app...), "--path", checkout, "-o", "markdown")...)
	if !imageBump.MatchString(r.stdout) {
		j.t.Errorf("plan -o markdown has no diff of the image 1.1.0 -> 1.2.0\n%s", r)
	}
	for _, want := range []string{
		"### syncd plan: app `pr-shop`",
		"`ConfigMap pr-shop/shop-legacy-routes` left Git: **deleted**",
		"`.data.maintenance` is owned by `kubectl-edit`: **force**",
		"<b>update</b> <code>Secret pr-shop/shop-db</code>",
		"password: <redacted, changed>",
	} {
		if !strings.Contains(r.stdout, want) {
			j.t.Errorf("plan -o markdown does not say %q\n%s", want, r)
		}
	}
}

// imageBump is the PR's image change as a diff shows it.
var imageBump = regexp.MustCompile(`(?m)^-\s+image: ghcr\.io/example/shop:1\.1\.0\n\+\s+image: ghcr\.io/example/shop:1\.2\.0$`)

// planJSON is the part of plan -o json (docs/preview.md, JSON) the
// journey reads.
type planJSON struct {
	Summary struct{ Create, Update, Unchanged, Prune, Conflicts int }
	Objects []struct {
		Object    struct{ Kind, Namespace, Name string }
		Action    string
		Diff      string
		Conflicts []struct{ Path, Manager, Outcome string }
	}
}

// checkJSON checks each object's action, the conflict and the Secret's
// diff in plan -o json.
func (j *prJourney) checkJSON(checkout string) {
	j.t.Helper()
	r := j.w.must(exitChanges, append(append([]string{"plan"}, j.app...), "--path", checkout, "-o", "json")...)
	var p planJSON
	if err := json.Unmarshal([]byte(r.stdout), &p); err != nil {
		j.t.Fatalf("plan -o json: %v\n%s", err, r)
	}
	got := map[string]string{}
	for _, o := range p.Objects {
		key := o.Object.Kind + " " + o.Object.Name
		got[key] = o.Action
		for _, c := range o.Conflicts {
			got[key+" conflict"] = fmt.Sprintf("%s %s %s", c.Path, c.Manager, c.Outcome)
		}
		if o.Object.Kind == "Deployment" && !imageBump.MatchString(o.Diff) {
			j.t.Errorf("the Deployment's diff does not show the image 1.1.0 -> 1.2.0:\n%s", o.Diff)
		}
		if o.Object.Kind == "Secret" && !strings.Contains(o.Diff, "password: <redacted, changed>") {
			j.t.Errorf("the Secret's diff does not show its password changed, redacted:\n%s", o.Diff)
		}
	}
	want := map[string]string{
		"Namespace pr-shop":             "unchanged",
		"Deployment shop":               "update",
		"Service shop":                  "unchanged",
		"ConfigMap shop-flags":          "update",
		"ConfigMap shop-flags conflict": ".data.maintenance kubectl-edit force",
		"ConfigMap shop-legacy-routes":  "prune",
		"Secret shop-db":                "update",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		j.t.Errorf("plan -o json objects (-want +got):\n%s\n%s", diff, r)
	}
}

// merge fast-forwards main to the PR, previews it with apply --dry-run
// (nothing written), applies it and checks the live state: the new
// image, the legacy routes pruned, the hand-added field taken back from
// kubectl-edit, the rotated password; then a second apply writes
// nothing and plan exits 0.
func (j *prJourney) merge() {
	j.t.Helper()
	j.git("merge", "-q", "--ff-only", "pr-42")
	j.git("push", "-q", "origin", "main")
	apply := append([]string{"apply"}, j.app...)
	before := j.untouched()
	j.checkMergeOutput(j.w.must(exitOK, append(apply, "--dry-run")...), " (dry run)")
	if diff := cmp.Diff(before, j.untouched()); diff != "" {
		j.t.Errorf("apply --dry-run wrote to the cluster (-before +after):\n%s", diff)
	}
	j.checkMergeOutput(j.w.must(exitOK, apply...), "")
	j.checkImage(j.t, "1.2.0")
	j.checkMerged()
	live := refSet(append(append([]objectRef{}, prObjects[:4]...), prObjects[5]))
	entries := j.cl.syncdEntries(j.t, live)
	r := j.w.must(exitOK, apply...)
	(&journey{}).checkWroteNothing(j.t, j.cl, r, entries)
	j.w.must(exitOK, append([]string{"plan"}, j.app...)...)
}

// checkMergeOutput checks what apply (suffix "") or apply --dry-run
// (" (dry run)") says of the merge: the flags forced, the Secret's
// rotated stringData named (never its value), the legacy routes deleted.
func (j *prJourney) checkMergeOutput(r result, suffix string) {
	j.t.Helper()
	outcomes := appliedObjects(r.stdout)
	for ref, want := range map[objectRef]string{prObjects[3]: "forced", prObjects[4]: "deleted", prObjects[5]: "configured"} {
		if outcomes[ref] != want {
			j.t.Errorf("apply of the merge: %s %q, want %s\n%s", ref, outcomes[ref], want, r)
		}
	}
	for _, want := range []string{
		"Secret pr-shop/shop-db configured" + suffix + "\n  changed: .stringData.password\n",
		"ConfigMap pr-shop/shop-legacy-routes deleted" + suffix + "\n",
	} {
		if !strings.Contains(r.stdout, want) {
			j.t.Errorf("apply of the merge does not say %q\n%s", want, r)
		}
	}
}

// checkMerged checks the live objects the merge changed besides the
// image.
func (j *prJourney) checkMerged() {
	j.t.Helper()
	if _, err := j.cl.get(prObjects[4]); !apierrors.IsNotFound(err) {
		j.t.Errorf("%s after the merge: %v, want it pruned", prObjects[4], err)
	}
	flags, err := j.cl.get(prObjects[3])
	if err != nil {
		j.t.Fatal(err)
	}
	if v, _, _ := unstructured.NestedString(flags.Object, "data", "maintenance"); v != "false" {
		j.t.Errorf("shop-flags .data.maintenance %q after the merge, want Git's false", v)
	}
	if owners := fieldOwners(flags, ".data.maintenance"); !cmp.Equal(owners, []string{"syncd-pr-shop"}) {
		j.t.Errorf("shop-flags .data.maintenance owned by %q after the merge, want syncd-pr-shop alone", owners)
	}
	secret, err := j.cl.get(prObjects[5])
	if err != nil {
		j.t.Fatal(err)
	}
	if v, _, _ := unstructured.NestedString(secret.Object, "data", "password"); v != base64.StdEncoding.EncodeToString([]byte(prPassword2)) {
		j.t.Errorf("Secret shop-db holds another password than the merged one")
	}
}

// untouched is what a plan must leave as it is: each object's
// resourceVersion, except the Deployment's, which kube-controller-manager
// moves as it writes the rollout's status; for it syncd's managedFields
// entries stand witness.
func (j *prJourney) untouched() map[objectRef]string {
	out := j.cl.syncdEntries(j.t, refSet(prObjects[1:2]))
	for _, ref := range prObjects {
		if ref.kind == "Deployment" {
			continue
		}
		obj, err := j.cl.get(ref)
		if err != nil {
			j.t.Fatalf("%s: %v", ref, err)
		}
		out[ref] = obj.GetResourceVersion()
	}
	return out
}

// refSet is refs as the set cluster.syncdEntries takes.
func refSet(refs []objectRef) map[objectRef]string {
	out := map[objectRef]string{}
	for _, r := range refs {
		out[r] = ""
	}
	return out
}
