package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	"syncd.dev/syncd/internal/ownership"
	"syncd.dev/syncd/internal/testenv"
	"syncd.dev/syncd/internal/testenv/gitserver"
)

// The app the demo runs: examples/plain, in namespace demo.
const (
	app       = "web"
	ns        = "demo"
	appFile   = "examples/plain/web.yaml"
	interval  = 30 * time.Second
	hmacKey   = "demo-alert-hmac-key"
	pushToken = "demo-push-webhook-secret"
	// teamOpsBanner is what another team writes under its own manager.
	teamOpsBanner = "maintenance at 22:00"
)

// demo is the state the steps share.
type demo struct {
	root, dir string
	cleanups  []func() error

	stepNo   int
	stepName string

	env    *testenv.Env
	cs     kubernetes.Interface
	bin    string
	git    *gitserver.Server
	repo   *gitserver.Repo
	recv   *receiver
	daemon *daemon
	cfg    string

	daemonLog, daemonTail string

	// Commits of main, in order.
	shaA, shaB, shaC string
}

// onStop registers fn to run when the demo ends, in reverse order.
func (d *demo) onStop(fn func() error) { d.cleanups = append(d.cleanups, fn) }

// setUp starts the control plane, builds syncd, serves Git, starts the
// alert receiver, writes syncd.yaml and starts the daemon, one step each.
func (d *demo) setUp(ctx context.Context) error {
	for _, step := range []func(context.Context) error{
		d.startControlPlane,
		d.serveExamples,
		d.writeConfig,
		d.startSyncdRun,
	} {
		if err := step(ctx); err != nil {
			return err
		}
	}
	return nil
}

// startControlPlane starts etcd, kube-apiserver and
// kube-controller-manager while syncd builds, and creates the namespace
// the daemon keeps its Lease and the apps' inventories in.
func (d *demo) startControlPlane(ctx context.Context) error {
	d.step("Starting a local control plane (etcd, kube-apiserver and kube-controller-manager %s) and building syncd", testenv.Version)
	built := d.buildSyncd(ctx)
	env, err := d.startEnv(ctx)
	if err != nil {
		<-built
		return err
	}
	if err := <-built; err != nil {
		return err
	}
	if d.cs, err = kubernetes.NewForConfig(env.Config); err != nil {
		return err
	}
	say("API server %s, kubeconfig %s", env.Config.Host, env.Kubeconfig)
	say("syncd built at %s", d.bin)
	// The daemon keeps its Lease and the apps' inventories here.
	_, err = d.cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "syncd-system"}}, metav1.CreateOptions{})
	if err != nil {
		return err
	}
	// The App and GitSource CRDs, so the daemon also runs App objects.
	return d.installCRDs(ctx)
}

// buildSyncd builds ./cmd/syncd into d.bin, and syncd-render beside it,
// in the background; the channel gets the build's result.
func (d *demo) buildSyncd(ctx context.Context) <-chan error {
	d.bin = filepath.Join(d.dir, "bin", "syncd")
	built := make(chan error, 1)
	go func() {
		cmd := exec.CommandContext(ctx, "go", "build", "-ldflags", "-X main.version=demo", "-o", filepath.Dir(d.bin)+"/", "./cmd/syncd", "./cmd/syncd-render")
		cmd.Dir = d.root
		if out, err := cmd.CombinedOutput(); err != nil {
			built <- fmt.Errorf("go build ./cmd/syncd ./cmd/syncd-render: %w\n%s", err, out)
			return
		}
		built <- nil
	}()
	return built
}

// startEnv starts the control plane under the demo's directory and
// registers its stop.
func (d *demo) startEnv(ctx context.Context) (*testenv.Env, error) {
	cluster := filepath.Join(d.dir, "cluster")
	if err := os.MkdirAll(cluster, 0o755); err != nil {
		return nil, err
	}
	env, err := testenv.Start(ctx, testenv.Options{ControllerManager: true, Dir: cluster})
	if err != nil {
		return nil, err
	}
	d.env = env
	d.onStop(func() error {
		fmt.Println("    stopping the control plane")
		return env.Stop()
	})
	return env, nil
}

// serveExamples serves a Git repository on loopback whose first commit
// is examples/.
func (d *demo) serveExamples(context.Context) error {
	d.step("Serving a Git repository made from examples/ over HTTP on loopback")
	var err error
	if d.git, err = gitserver.Start(filepath.Join(d.dir, "git")); err != nil {
		return err
	}
	d.onStop(func() error {
		fmt.Println("    stopping the Git server")
		return d.git.Close()
	})
	if d.repo, err = d.git.NewRepo("examples", filepath.Join(d.dir, "work")); err != nil {
		return err
	}
	files, err := d.exampleFiles()
	if err != nil {
		return err
	}
	if d.shaA, err = d.repo.Commit("examples: the sample apps", files); err != nil {
		return err
	}
	say("%s (branch main at %s, %d files); the app is %s", d.repo.URL, short(d.shaA), len(files), filepath.Dir(appFile))
	return nil
}

// exampleFiles reads examples/, keyed by slash path from the repository
// root.
func (d *demo) exampleFiles() (map[string][]byte, error) {
	files := map[string][]byte{}
	err := filepath.WalkDir(filepath.Join(d.root, "examples"), func(path string, e fs.DirEntry, err error) error {
		if err != nil || e.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(d.root, path)
		data, err := os.ReadFile(path)
		files[filepath.ToSlash(rel)] = data
		return err
	})
	return files, err
}

// secretsDir holds the files syncd.yaml and syncd run read secrets from.
func (d *demo) secretsDir() string { return filepath.Join(d.dir, "secrets") }

// writeConfig starts the alert receiver, writes the secret files and the
// syncd.yaml the daemon runs, and prints it.
func (d *demo) writeConfig(context.Context) error {
	d.step("An alert receiver on loopback, and the syncd.yaml the daemon runs")
	var err error
	if d.recv, err = startReceiver([]byte(hmacKey)); err != nil {
		return err
	}
	d.onStop(func() error {
		fmt.Println("    stopping the alert receiver")
		return d.recv.Close()
	})
	if err := d.writeSecrets(); err != nil {
		return err
	}
	say("receiver %s checks each request's X-Syncd-Signature and keeps the alert", d.recv.URL)
	d.cfg = filepath.Join(d.dir, "syncd.yaml")
	cfg := d.configYAML()
	if err := os.WriteFile(d.cfg, []byte(cfg), 0o644); err != nil {
		return err
	}
	fmt.Print(indent(cfg))
	return nil
}

// writeSecrets writes the alert URL, the HMAC key and the push secret,
// each in a file of its own.
func (d *demo) writeSecrets() error {
	secrets := d.secretsDir()
	if err := os.MkdirAll(secrets, 0o700); err != nil {
		return err
	}
	for name, value := range map[string]string{"alert-url": d.recv.URL, "alert-hmac-key": hmacKey, "push-secret": pushToken} {
		if err := os.WriteFile(filepath.Join(secrets, name), []byte(value+"\n"), 0o600); err != nil {
			return err
		}
	}
	return nil
}

// configYAML is the demo's syncd.yaml.
func (d *demo) configYAML() string {
	secrets := d.secretsDir()
	return fmt.Sprintf(`apiVersion: syncd/v1alpha1
kind: Config
sources:
  - name: examples
    git:
      url: %s
      branch: main
      interval: %s                  # short for the demo; a push webhook polls at once
apps:
  - name: %s
    source: examples
    path: %s
    # Default manager: syncd-web (the platform team owns the spec).
    split:
      - manager: syncd-web-release   # the release pipeline owns the image
        kinds: [apps/Deployment]
        paths: [".spec.template.spec.containers[*].image"]
    conflicts:
      default: fail                  # never overwrite another manager silently...
      rules:
        - managers: [kubectl, "kubectl-*"]  # ...but take hand edits with kubectl back
          action: force
alerts:
  - name: demo-receiver
    type: webhook                    # signed JSON, schema syncd.dev/alert/v1
    urlFile: %s
    hmacKeyFile: %s
`, d.repo.URL, interval, app, filepath.Dir(appFile), filepath.Join(secrets, "alert-url"), filepath.Join(secrets, "alert-hmac-key"))
}

// startSyncdRun starts syncd run with leader election, metrics, /status
// and push webhooks, and registers its stop.
func (d *demo) startSyncdRun(ctx context.Context) error {
	d.step("Starting the daemon: syncd run, with leader election, metrics, /status and push webhooks")
	d.daemonLog = filepath.Join(d.dir, "syncd-run.log")
	args := []string{"--config", d.cfg, "--kubeconfig", d.env.Kubeconfig, "--listen", "127.0.0.1:0",
		"--webhook-listen", "127.0.0.1:0", "--cache-dir", filepath.Join(d.dir, "cache"), "--webhook-secret-file", filepath.Join(d.secretsDir(), "push-secret")}
	say("$ syncd run %s", strings.Join(args, " "))
	var err error
	if d.daemon, err = startDaemon(ctx, d.bin, d.daemonLog, []string{"POD_NAMESPACE=syncd-system"}, args...); err != nil {
		return err
	}
	d.onStop(func() error {
		if d.daemon == nil {
			return nil
		}
		fmt.Println("    stopping syncd run")
		return d.daemon.stop()
	})
	say("pid %d, serving status on http://%s, push webhooks on http://%s (log: %s)", d.daemon.cmd.Process.Pid, d.daemon.addr, d.daemon.webhookAddr, d.daemonLog)
	return nil
}

// firstSync waits for the daemon's first apply and shows what the API
// server recorded.
func (d *demo) firstSync(ctx context.Context) error {
	d.step("First sync: the daemon polls Git, renders, splits the Deployment between two managers and applies")
	st, err := d.daemon.waitRevision(ctx, app, d.shaA, 60*time.Second)
	if err != nil {
		return err
	}
	ok("/status: app %s at %s, result %s, %d slices applied, %d changed", st.App, short(st.Revision), st.Result, st.Objects, st.Changed)
	if err := expect(st.Objects == 5, "5 slices in app %s (Namespace, ConfigMap, Service, and the Deployment under two managers), /status says %d", app, st.Objects); err != nil {
		return err
	}
	say("the daemon's log:")
	for _, l := range d.daemon.applied(d.shaA) {
		say("  %s", l)
	}
	nsObj, err := d.cs.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
	if err != nil {
		return err
	}
	say("Namespace %s, managedFields:", ns)
	printManaged(nsObj.ManagedFields)
	cm, err := d.cs.CoreV1().ConfigMaps(ns).Get(ctx, "web-settings", metav1.GetOptions{})
	if err != nil {
		return err
	}
	say("ConfigMap %s/web-settings, managedFields:", ns)
	printManaged(cm.ManagedFields)
	svc, err := d.cs.CoreV1().Services(ns).Get(ctx, "web", metav1.GetOptions{})
	if err != nil {
		return err
	}
	say("Service %s/web, managedFields:", ns)
	printManaged(svc.ManagedFields)
	dep, err := d.cs.AppsV1().Deployments(ns).Get(ctx, "web", metav1.GetOptions{})
	if err != nil {
		return err
	}
	say("Who owns what on Deployment %s/web (its managedFields, read back from the API server):", ns)
	printManaged(dep.ManagedFields)
	if err := expectOwner(dep, "syncd-web", ".spec.replicas"); err != nil {
		return err
	}
	if err := expectOwner(dep, "syncd-web-release", `.spec.template.spec.containers[name="app"].image`); err != nil {
		return err
	}
	ok("syncd-web (Apply) owns the spec, syncd-web-release (Apply) owns only the image")
	rs, err := d.waitReplicaSet(ctx, "nginx:1.27")
	if err != nil {
		return err
	}
	ok("kube-controller-manager made ReplicaSet %s/%s (%d replicas, nginx:1.27) for it", ns, rs.Name, *rs.Spec.Replicas)
	a, err := d.waitAlert(ctx, "a sync alert for "+short(d.shaA), func(a alertPayload) bool { return a.Type == "sync" && a.Revision == d.shaA })
	if err != nil {
		return err
	}
	ok("alert receiver got: %s", a[0].oneLine())
	return nil
}

// newCommit pushes a commit and tells the daemon with a push webhook.
func (d *demo) newCommit(ctx context.Context) error {
	d.step("A new commit (color teal, image nginx:1.28), pushed and announced with a GitHub push webhook")
	var err error
	d.shaB, err = d.commitEdit("teal, and nginx 1.28", appFile, "color: blue", "color: teal", "image: nginx:1.27", "image: nginx:1.28")
	if err != nil {
		return err
	}
	say("pushed %s to main", short(d.shaB))
	pushed := time.Now()
	answer, err := d.daemon.push(ctx, d.repo.URL, d.shaB, []byte(pushToken))
	if err != nil {
		return err
	}
	say("POST /webhook/github (signed X-Hub-Signature-256): %s", answer)
	st, err := d.daemon.waitRevision(ctx, app, d.shaB, 30*time.Second)
	if err != nil {
		return err
	}
	ok("/status: app %s at %s, result %s, %s after the push (poll interval %s)", st.App, short(st.Revision), st.Result, time.Since(pushed).Round(100*time.Millisecond), interval)
	for _, l := range d.daemon.applied(d.shaB) {
		say("  %s", l)
	}
	cm, err := d.cs.CoreV1().ConfigMaps(ns).Get(ctx, "web-settings", metav1.GetOptions{})
	if err != nil {
		return err
	}
	if err := expect(cm.Data["color"] == "teal", "ConfigMap %s/web-settings .data.color teal, got %q", ns, cm.Data["color"]); err != nil {
		return err
	}
	ok("ConfigMap %s/web-settings .data.color is %s", ns, cm.Data["color"])
	rs, err := d.waitReplicaSet(ctx, "nginx:1.28")
	if err != nil {
		return err
	}
	ok("the Deployment rolls out: new ReplicaSet %s/%s for nginx:1.28", ns, rs.Name)
	return nil
}

// outOfBand changes the Deployment behind syncd's back.
func (d *demo) outOfBand(ctx context.Context) error {
	d.step("Out of band: someone hot-fixes the image (kubectl-edit, Update) and scales to 5 through /scale (kubectl, as kubectl scale writes)")
	patch := []byte(`{"spec":{"template":{"spec":{"containers":[{"name":"app","image":"nginx:1.28-hotfix"}]}}}}`)
	if _, err := d.cs.AppsV1().Deployments(ns).Patch(ctx, "web", types.StrategicMergePatchType, patch, metav1.PatchOptions{FieldManager: "kubectl-edit"}); err != nil {
		return fmt.Errorf("patch the image of deployments/web: %w", err)
	}
	say("PATCH deployments/web (strategic merge, fieldManager kubectl-edit): image nginx:1.28-hotfix")
	// As kubectl scale does it: a patch of the scale subresource (no
	// resourceVersion to race the controllers' status writes).
	if _, err := d.cs.AppsV1().Deployments(ns).Patch(ctx, "web", types.MergePatchType, []byte(`{"spec":{"replicas":5}}`), metav1.PatchOptions{FieldManager: "kubectl"}, "scale"); err != nil {
		return fmt.Errorf("patch deployments/web/scale: %w", err)
	}
	say("PATCH deployments/web/scale (fieldManager kubectl, what kubectl scale sends): replicas 5")
	dep, err := d.cs.AppsV1().Deployments(ns).Get(ctx, "web", metav1.GetOptions{})
	if err != nil {
		return err
	}
	say("managedFields now:")
	printManaged(dep.ManagedFields)
	if err := expectOwner(dep, "kubectl", ".spec.replicas"); err != nil {
		return err
	}
	return expectOwner(dep, "kubectl-edit", `.spec.template.spec.containers[name="app"].image`)
}

// handEdits are the fields the out-of-band step changes, and by whom.
var handEdits = map[string]string{
	".spec.replicas": "kubectl",
	`.spec.template.spec.containers[name="app"].image`: "kubectl-edit",
}

// waitHandEditAlerts waits until open drift alerts name every field of
// handEdits with its culprit, and returns those alerts.
func (d *demo) waitHandEditAlerts(ctx context.Context) ([]received, error) {
	var alerts []received
	err := waitFor(ctx, "drift alerts naming kubectl on .spec.replicas and kubectl-edit on the image", 30*time.Second, func() (bool, error) {
		alerts = d.recv.find(func(a alertPayload) bool {
			if a.Type != "drift" || a.State != "open" || a.Object.Kind != "Deployment" || a.Object.Name != "web" {
				return false
			}
			for path, manager := range a.culprits() {
				if handEdits[path] == manager {
					return true
				}
			}
			return false
		})
		seen := map[string]string{}
		for _, a := range alerts {
			maps.Copy(seen, a.culprits())
		}
		for path, manager := range handEdits {
			if seen[path] != manager {
				return false, fmt.Errorf("%s: culprit %q so far", path, seen[path])
			}
		}
		return true, d.recv.err()
	})
	if err != nil {
		return nil, fmt.Errorf("%w; %s", err, d.recv.summary())
	}
	return alerts, nil
}

// driftAlert waits for the daemon's drift alerts naming both culprits.
func (d *demo) driftAlert(ctx context.Context) error {
	d.step("The daemon's drift watcher sees it at once; its alert, as the local webhook receiver captured it")
	alerts, err := d.waitHandEditAlerts(ctx)
	if err != nil {
		return err
	}
	for _, a := range alerts {
		say("POST %s (X-Syncd-Signature checked):", d.recv.URL)
		fmt.Println(a.indented())
	}
	ok("each alert names the field, Git's value, the live value and the culprit: manager, operation, subresource, time")
	return nil
}

// driftCommand runs `syncd drift` against the same config.
func (d *demo) driftCommand(ctx context.Context) error {
	d.step("syncd drift: the same findings from the command line (exit 2: drift found)")
	code, out, err := d.syncd(ctx, true, "drift", "--config", d.cfg, "--app", app, "--cache-dir", filepath.Join(d.dir, "cache-cli"))
	if err != nil {
		return err
	}
	if err := expect(code == 2, "syncd drift to exit 2 (drift found), got %d", code); err != nil {
		return err
	}
	for _, want := range []string{"by kubectl (Update, subresource scale)", "kubectl-edit"} {
		if err := expect(strings.Contains(out, want), "syncd drift to name %q:\n%s", want, out); err != nil {
			return err
		}
	}
	ok("both fields, who changed them, how and when")
	return nil
}

// otherTeam has another manager try to take a field, then add its own.
func (d *demo) otherTeam(ctx context.Context) error {
	d.step("Another team (manager team-ops) applies to the ConfigMap: syncd never forces their way, or ours, silently")
	dir := filepath.Join(d.dir, "team-ops")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	doc := func(data string) error {
		return os.WriteFile(filepath.Join(dir, "cm.yaml"), []byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: web-settings\n  namespace: demo\ndata:\n"+data), 0o644)
	}
	if err := doc("  color: green\n  banner: " + teamOpsBanner + "\n"); err != nil {
		return err
	}
	code, _, err := d.syncd(ctx, true, "apply", "--path", dir, "--manager", "team-ops")
	if err != nil {
		return err
	}
	if err := expect(code == 3, "team-ops's apply of .data.color (owned by syncd-web) to be refused with exit 3, got %d", code); err != nil {
		return err
	}
	ok("refused (exit 3): .data.color belongs to syncd-web; nothing of that apply was written")
	if err := doc("  banner: " + teamOpsBanner + "\n"); err != nil {
		return err
	}
	code, _, err = d.syncd(ctx, true, "apply", "--path", dir, "--manager", "team-ops")
	if err != nil {
		return err
	}
	if err := expect(code == 0, "team-ops's apply of .data.banner alone to succeed, got exit %d", code); err != nil {
		return err
	}
	cm, err := d.cs.CoreV1().ConfigMaps(ns).Get(ctx, "web-settings", metav1.GetOptions{})
	if err != nil {
		return err
	}
	if err := expect(cm.Data["color"] == "teal" && cm.Data["banner"] != "", ".data.color teal and a banner, got %v", cm.Data); err != nil {
		return err
	}
	ok("team-ops owns .data.banner; .data.color is still %s", cm.Data["color"])
	return nil
}

// planBranch previews a pull request's branch with syncd plan while the
// hand edits are still live.
func (d *demo) planBranch(ctx context.Context) error {
	d.step("A pull request (branch release-1.29) bumps the image and sets the banner: syncd plan previews it")
	if _, err := d.repo.Git("checkout", "-q", "-b", "release-1.29"); err != nil {
		return err
	}
	sha, err := d.commitEdit("nginx 1.29; banner", appFile,
		"  greeting: hello\n", "  greeting: hello\n  banner: new look on Monday\n",
		"image: nginx:1.28", "image: nginx:1.29")
	if err != nil {
		return err
	}
	if _, err := d.repo.Git("checkout", "-q", "main"); err != nil {
		return err
	}
	checkout := filepath.Join(d.dir, "pr")
	if _, err := d.repo.Git("worktree", "add", "-q", checkout, sha); err != nil {
		return err
	}
	say("branch release-1.29 at %s, checked out in %s; main (what the daemon runs) is untouched", short(sha), checkout)
	prPath := filepath.Join(checkout, filepath.Dir(appFile))
	args := []string{"plan", "--config", d.cfg, "--app", app, "--path", prPath, "--cache-dir", filepath.Join(d.dir, "cache-cli")}
	code, _, err := d.syncd(ctx, true, append(args, "-o", "markdown")...)
	if err != nil {
		return err
	}
	if err := expect(code == 3, "syncd plan to exit 3 (blocked by a conflict), got %d", code); err != nil {
		return err
	}
	code, out, err := d.syncd(ctx, false, append(args, "-o", "json")...)
	if err != nil {
		return err
	}
	if err := expect(code == 3, "syncd plan -o json to exit 3, got %d", code); err != nil {
		return err
	}
	var plan struct {
		Objects []struct {
			Object struct {
				Kind, Name string
			} `json:"object"`
			Action    string `json:"action"`
			Diff      string `json:"diff"`
			Conflicts []struct {
				Path, Manager, Outcome string
			} `json:"conflicts"`
		} `json:"objects"`
	}
	if err := json.Unmarshal([]byte(out), &plan); err != nil {
		return fmt.Errorf("syncd plan -o json: %w\n%s", err, out)
	}
	var got []string
	for _, o := range plan.Objects {
		for _, c := range o.Conflicts {
			got = append(got, fmt.Sprintf("%s/%s %s %s %s", o.Object.Kind, o.Object.Name, c.Path, c.Manager, c.Outcome))
		}
		if o.Object.Kind == "Deployment" && strings.Contains(o.Diff, "-  replicas: 5\n+  replicas: 2\n") {
			got = append(got, "Deployment/web replicas 5 -> 2")
		}
	}
	for _, want := range []string{
		"ConfigMap/web-settings .data.banner team-ops fail",
		"Deployment/web .spec.replicas kubectl force",
		`Deployment/web .spec.template.spec.containers[name="app"].image kubectl-edit force`,
		"Deployment/web replicas 5 -> 2",
	} {
		if err := expect(slices.Contains(got, want), "the plan to report %q; it reports %q", want, got); err != nil {
			return err
		}
	}
	ok("blocked: .data.banner is team-ops's (policy fail); merging would also reset replicas 5 → 2 and revert the hotfix (policy force on kubectl and kubectl-*)")
	dep, err := d.cs.AppsV1().Deployments(ns).Get(ctx, "web", metav1.GetOptions{})
	if err != nil {
		return err
	}
	if err := expect(*dep.Spec.Replicas == 5 && dep.Spec.Template.Spec.Containers[0].Image == "nginx:1.28-hotfix", "the Deployment untouched by the plan (5 replicas, nginx:1.28-hotfix), got %d and %s", *dep.Spec.Replicas, dep.Spec.Template.Spec.Containers[0].Image); err != nil {
		return err
	}
	ok("nothing was written: the Deployment still has 5 replicas and nginx:1.28-hotfix")
	return nil
}

// merge pushes the reviewed branch to main: the daemon applies it and
// the policy takes the kubectl edits back.
func (d *demo) merge(ctx context.Context) error {
	d.step("The author drops the banner line and the pull request is merged: the daemon forces the kubectl edits back")
	var err error
	d.shaC, err = d.commitEdit("nginx 1.29", appFile, "image: nginx:1.28", "image: nginx:1.29")
	if err != nil {
		return err
	}
	say("pushed %s to main", short(d.shaC))
	answer, err := d.daemon.push(ctx, d.repo.URL, d.shaC, []byte(pushToken))
	if err != nil {
		return err
	}
	say("POST /webhook/github: %s", answer)
	st, err := d.daemon.waitRevision(ctx, app, d.shaC, 30*time.Second)
	if err != nil {
		return err
	}
	ok("/status: app %s at %s, result %s", st.App, short(st.Revision), st.Result)
	for _, l := range d.daemon.applied(d.shaC) {
		say("  %s", l)
	}
	dep, err := d.cs.AppsV1().Deployments(ns).Get(ctx, "web", metav1.GetOptions{})
	if err != nil {
		return err
	}
	image := dep.Spec.Template.Spec.Containers[0].Image
	if err := expect(*dep.Spec.Replicas == 2 && image == "nginx:1.29", "replicas 2 and image nginx:1.29 from Git, got %d and %s", *dep.Spec.Replicas, image); err != nil {
		return err
	}
	say("managedFields now:")
	printManaged(dep.ManagedFields)
	if err := expectOwner(dep, "syncd-web", ".spec.replicas"); err != nil {
		return err
	}
	if err := expectOwner(dep, "syncd-web-release", `.spec.template.spec.containers[name="app"].image`); err != nil {
		return err
	}
	ok("replicas 2 (syncd-web) and image nginx:1.29 (syncd-web-release): the hand edits are gone")
	code, _, err := d.syncd(ctx, true, "drift", "--config", d.cfg, "--app", app, "--cache-dir", filepath.Join(d.dir, "cache-cli"))
	if err != nil {
		return err
	}
	if err := expect(code == 0, "syncd drift to exit 0 (no drift) after the merge, got %d", code); err != nil {
		return err
	}
	cm, err := d.cs.CoreV1().ConfigMaps(ns).Get(ctx, "web-settings", metav1.GetOptions{})
	if err != nil {
		return err
	}
	if err := expect(cm.Data["banner"] == teamOpsBanner, "team-ops's .data.banner %q kept, got %q", teamOpsBanner, cm.Data["banner"]); err != nil {
		return err
	}
	ok("no drift left; team-ops's banner is untouched")
	return nil
}

// stopDaemon stops the daemon and checks it exits cleanly; the rest is
// stopped by the cleanups.
func (d *demo) stopDaemon(context.Context) error {
	d.step("Stopping everything the demo started")
	dmn := d.daemon
	d.daemon = nil
	fmt.Println("    stopping syncd run (SIGTERM: it releases its Lease)")
	if err := dmn.stop(); err != nil {
		d.daemonTail = dmn.tail(30)
		return err
	}
	ok("syncd run exited 0")
	return nil
}

// commitEdit replaces old→new pairs in file of the repository's work tree,
// commits and pushes. Each old string must be present.
func (d *demo) commitEdit(msg, file string, oldNew ...string) (string, error) {
	data, err := os.ReadFile(filepath.Join(d.repo.Work, file))
	if err != nil {
		return "", err
	}
	text := string(data)
	for i := 0; i+1 < len(oldNew); i += 2 {
		if !strings.Contains(text, oldNew[i]) {
			return "", fmt.Errorf("%s: no %q to change (has examples/ changed?)", file, oldNew[i])
		}
		text = strings.Replace(text, oldNew[i], oldNew[i+1], 1)
	}
	return d.repo.Commit(msg, map[string][]byte{file: []byte(text)})
}

// waitReplicaSet waits for the Deployment's ReplicaSet running image.
func (d *demo) waitReplicaSet(ctx context.Context, image string) (*appsv1.ReplicaSet, error) {
	var found *appsv1.ReplicaSet
	err := waitFor(ctx, "kube-controller-manager to create a ReplicaSet for image "+image, 30*time.Second, func() (bool, error) {
		list, err := d.cs.AppsV1().ReplicaSets(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=web"})
		if err != nil {
			return false, err
		}
		for i, rs := range list.Items {
			owned := len(rs.OwnerReferences) == 1 && rs.OwnerReferences[0].Kind == "Deployment" && rs.OwnerReferences[0].Name == "web"
			if owned && rs.Spec.Template.Spec.Containers[0].Image == image {
				found = &list.Items[i]
				return true, nil
			}
		}
		return false, nil
	})
	return found, err
}

// waitAlert waits until the receiver holds an alert matching match.
func (d *demo) waitAlert(ctx context.Context, what string, match func(alertPayload) bool) ([]received, error) {
	var got []received
	err := waitFor(ctx, what+" at the alert receiver", 30*time.Second, func() (bool, error) {
		got = d.recv.find(match)
		return len(got) > 0, d.recv.err()
	})
	if err != nil {
		return nil, fmt.Errorf("%w; %s", err, d.recv.summary())
	}
	return got, nil
}

// syncd runs a syncd command against the demo cluster and returns its
// exit code and output. show prints the command and its output. Exit
// codes 2 (changes or drift found) and 3 (blocked by conflicts) are
// results for the caller to check, not errors.
func (d *demo) syncd(ctx context.Context, show bool, args ...string) (int, string, error) {
	if show {
		fmt.Printf("    $ syncd %s\n", strings.Join(args, " "))
	}
	cmd := exec.CommandContext(ctx, d.bin, append(args, "--kubeconfig", d.env.Kubeconfig)...)
	cmd.Env = append(os.Environ(), "POD_NAMESPACE=syncd-system")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if show {
		fmt.Print(indent(stdout.String() + stderr.String()))
	}
	code := 0
	if ee, isExit := err.(*exec.ExitError); isExit {
		code = ee.ExitCode()
	}
	if show && ctx.Err() == nil && (err == nil || code != 0) {
		fmt.Printf("    (exit code %d)\n", code)
	}
	if code != 0 {
		if code != 2 && code != 3 {
			return code, stdout.String(), fmt.Errorf("syncd %s: exit %d:\n%s", args[0], code, stderr.String())
		}
	} else if err != nil {
		return 0, "", fmt.Errorf("syncd %s: %w", args[0], err)
	}
	return code, stdout.String(), nil
}

// expectOwner checks that manager's managedFields entry owns path.
func expectOwner(dep *appsv1.Deployment, manager, path string) error {
	var owners []string
	for _, e := range ownership.DecodeEntries(dep.ManagedFields).Entries {
		found := false
		e.Set.Leaves().Iterate(func(p fieldpath.Path) { found = found || p.String() == path })
		if found {
			owners = append(owners, e.Manager)
		}
	}
	return expect(slices.Contains(owners, manager), "Deployment %s/web %s to be owned by %s, owners: %q", ns, path, manager, owners)
}

// printManaged prints each managedFields entry with the leaf fields it
// owns (status entries only by name), then the entries whose fields do
// not decode.
func printManaged(entries []metav1.ManagedFieldsEntry) {
	own := ownership.DecodeEntries(entries)
	for _, e := range own.Entries {
		when := ""
		if e.Time != nil {
			when = " at " + e.Time.Format(time.TimeOnly)
		}
		sub := ""
		if e.Subresource != "" {
			sub = ", subresource " + e.Subresource
		}
		fmt.Printf("      %s (%s%s)%s\n", e.Manager, e.Operation, sub, when)
		if e.Subresource != "status" {
			printLeaves(e.Set)
		}
	}
	for _, inv := range own.Invalid {
		fmt.Printf("      %v\n", inv)
	}
}

// printLeaves prints the first leaves of set, sorted.
func printLeaves(set *fieldpath.Set) {
	var leaves []string
	set.Leaves().Iterate(func(p fieldpath.Path) { leaves = append(leaves, p.String()) })
	sort.Strings(leaves)
	const max = 8
	for i, l := range leaves {
		if i == max {
			fmt.Printf("          … and %d more\n", len(leaves)-max)
			break
		}
		fmt.Println("         ", l)
	}
}

func indent(s string) string {
	s = strings.TrimRight(s, "\n")
	if s == "" {
		return ""
	}
	return "      " + strings.ReplaceAll(s, "\n", "\n      ") + "\n"
}
