// Command demo runs syncd end to end on an embedded local control plane:
// it starts etcd and kube-apiserver on loopback (built by
// hack/controlplane.sh), builds syncd, makes a Git repository from
// examples/plain, applies it with a split between two field managers, shows
// what the API server recorded (managedFields), makes out-of-band changes and
// reports them with `syncd drift`, applies a new commit, shows a refused
// conflicting apply, and stops everything.
//
// Run it with hack/demo.sh.
package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	"syncd.dev/syncd/internal/testenv"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "demo failed:", err)
		os.Exit(1)
	}
}

func step(format string, args ...any) {
	fmt.Printf("\n\033[1m==> %s\033[0m\n", fmt.Sprintf(format, args...))
}

func run() error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	root, err := repoRoot()
	if err != nil {
		return err
	}

	step("Starting a local control plane (etcd + kube-apiserver %s) on loopback", testenv.Version)
	env, err := testenv.Start(ctx, testenv.Options{})
	if err != nil {
		return err
	}
	defer func() {
		step("Stopping the control plane")
		_ = env.Stop()
	}()
	fmt.Println("API server:", env.Config.Host)

	step("Building syncd")
	bin := filepath.Join(env.Dir, "syncd")
	// A plain build shares the Go build cache with `go run` of this demo;
	// hack/build.sh (static, trimmed) is for release images.
	build := exec.Command("go", "build", "-ldflags", "-X main.version=demo", "-o", bin, "./cmd/syncd")
	build.Dir, build.Stdout, build.Stderr = root, os.Stdout, os.Stderr
	if err := build.Run(); err != nil {
		return fmt.Errorf("build syncd: %w", err)
	}

	cs, err := kubernetes.NewForConfig(env.Config)
	if err != nil {
		return err
	}
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "syncd-system"}}, metav1.CreateOptions{}); err != nil {
		return err
	}

	step("A Git repository holding examples/plain, and a syncd.yaml that splits the Deployment")
	repo := filepath.Join(env.Dir, "repo")
	if err := copyDir(filepath.Join(root, "examples", "plain"), filepath.Join(repo, "app")); err != nil {
		return err
	}
	if err := git(repo, "init", "-q", "-b", "main"); err != nil {
		return err
	}
	if err := gitCommit(repo, "first version"); err != nil {
		return err
	}
	cfg := filepath.Join(env.Dir, "syncd.yaml")
	cfgText := fmt.Sprintf(`apiVersion: syncd/v1alpha1
kind: Config
sources:
- name: demo
  git:
    url: file://%s
    branch: main
    interval: 1m
apps:
- name: web
  source: demo
  path: app
  manager: syncd-web                 # the platform team owns the spec
  split:
  - manager: syncd-web-release       # the release pipeline owns the images
    kinds: [apps/Deployment]
    paths: [".spec.template.spec.containers[*].image"]
  conflicts:
    default: fail                    # never overwrite another manager silently...
    rules:
    - paths: [".spec.replicas"]      # ...but leave replicas to whoever scales,
      action: yield
    - paths: [".spec.template.spec.containers[*].image"]
      managers: ["kubectl-*"]        # and take images back from hand edits
      action: force
`, repo)
	if err := os.WriteFile(cfg, []byte(cfgText), 0o644); err != nil {
		return err
	}
	fmt.Print(cfgText)
	base := []string{"--config", cfg, "--cache-dir", filepath.Join(env.Dir, "cache")}

	step("syncd apply --config syncd.yaml: source → render → split → Server-Side Apply")
	if _, err := syncd(bin, env, append([]string{"apply"}, base...)...); err != nil {
		return err
	}

	step("Who owns what on Deployment demo/web (read back from the API server)")
	dep, err := cs.AppsV1().Deployments("demo").Get(ctx, "web", metav1.GetOptions{})
	if err != nil {
		return err
	}
	printManaged(dep.ManagedFields)

	step("Applying again: nothing changed in Git, nothing is written")
	if _, err := syncd(bin, env, append([]string{"apply"}, base...)...); err != nil {
		return err
	}

	step("Out of band: someone scales to 5 (/scale) and hot-fixes the image with an Update")
	scale, err := cs.AppsV1().Deployments("demo").GetScale(ctx, "web", metav1.GetOptions{})
	if err != nil {
		return err
	}
	scale.Spec.Replicas = 5
	if _, err := cs.AppsV1().Deployments("demo").UpdateScale(ctx, "web", scale, metav1.UpdateOptions{FieldManager: "kubectl-scale"}); err != nil {
		return err
	}
	patch := []byte(`{"spec":{"template":{"spec":{"containers":[{"name":"app","image":"nginx:1.27-hotfix"}]}}}}`)
	if _, err := cs.AppsV1().Deployments("demo").Patch(ctx, "web", types.StrategicMergePatchType, patch, metav1.PatchOptions{FieldManager: "kubectl-edit"}); err != nil {
		return err
	}

	step("syncd drift: which field, who took it, how and when, Git vs live")
	if _, err := syncd(bin, env, append([]string{"drift"}, base...)...); err != nil {
		return err
	}

	step("A commit changes the ConfigMap in Git; syncd applies it, yields replicas to the scaler, forces the image back")
	settings := filepath.Join(repo, "app", "web.yaml")
	data, err := os.ReadFile(settings)
	if err != nil {
		return err
	}
	if err := os.WriteFile(settings, []byte(strings.Replace(string(data), "color: blue", "color: teal", 1)), 0o644); err != nil {
		return err
	}
	if err := gitCommit(repo, "teal"); err != nil {
		return err
	}
	if _, err := syncd(bin, env, append([]string{"apply"}, base...)...); err != nil {
		return err
	}

	step("A pull request changes the greeting and the image: syncd plan previews it (dry run, nothing written)")
	pr := filepath.Join(env.Dir, "pr")
	if err := copyDir(filepath.Join(repo, "app"), pr); err != nil {
		return err
	}
	prFile := filepath.Join(pr, "web.yaml")
	prData, err := os.ReadFile(prFile)
	if err != nil {
		return err
	}
	prText := strings.Replace(string(prData), "greeting: hello", "greeting: hello, reviewers", 1)
	prText = strings.Replace(prText, "image: nginx:1.27", "image: nginx:1.28", 1)
	if err := os.WriteFile(prFile, []byte(prText), 0o644); err != nil {
		return err
	}
	if _, err := syncd(bin, env, append([]string{"plan", "--app", "web", "--path", pr}, base...)...); err != nil {
		return err
	}

	step("Another team (manager team-ops) tries to change .data.color: syncd refuses to force")
	other := filepath.Join(env.Dir, "other")
	if err := os.MkdirAll(other, 0o755); err != nil {
		return err
	}
	doc := "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: web-settings\n  namespace: demo\ndata:\n  color: green\n"
	if err := os.WriteFile(filepath.Join(other, "cm.yaml"), []byte(doc), 0o644); err != nil {
		return err
	}
	code, err := syncd(bin, env, "apply", "--path", other, "--manager", "team-ops")
	if code != 3 {
		return fmt.Errorf("conflicting apply exited %d, want 3 (%v)", code, err)
	}
	cm, err := cs.CoreV1().ConfigMaps("demo").Get(ctx, "web-settings", metav1.GetOptions{})
	if err != nil {
		return err
	}
	fmt.Printf("exit code 3; .data.color is still %q\n", cm.Data["color"])
	return nil
}

func git(dir string, args ...string) error {
	cmd := exec.Command("git", append([]string{"-c", "user.name=demo", "-c", "user.email=demo@example.com", "-c", "commit.gpgsign=false"}, args...)...)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return nil
}

func gitCommit(dir, msg string) error {
	if err := git(dir, "add", "-A"); err != nil {
		return err
	}
	return git(dir, "commit", "-q", "-m", msg)
}

func copyDir(from, to string) error {
	return filepath.WalkDir(from, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(from, path)
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(to, rel), 0o755)
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(to, rel), data, 0o644)
	})
}

// syncd runs the syncd binary against the demo cluster, streaming output.
// Exit codes 2 (changes/drift found) and 3 (conflicts) are results, not
// errors: they are returned with a nil error.
func syncd(bin string, env *testenv.Env, args ...string) (int, error) {
	fmt.Printf("$ syncd %s\n", strings.Join(args, " "))
	cmd := exec.Command(bin, append(args, "--kubeconfig", env.Kubeconfig)...)
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stdout
	err := cmd.Run()
	if ee, ok := err.(*exec.ExitError); ok {
		if c := ee.ExitCode(); c == 2 || c == 3 {
			fmt.Printf("(exit code %d)\n", c)
			return c, nil
		}
		return ee.ExitCode(), fmt.Errorf("syncd %s: exit %d", args[0], ee.ExitCode())
	}
	return 0, err
}

// printManaged prints each managedFields entry with the leaf fields it owns.
func printManaged(entries []metav1.ManagedFieldsEntry) {
	for _, e := range entries {
		when := ""
		if e.Time != nil {
			when = e.Time.UTC().Format(time.RFC3339)
		}
		fmt.Printf("  manager=%s operation=%s %s\n", e.Manager, e.Operation, when)
		set := &fieldpath.Set{}
		if e.FieldsV1 == nil || set.FromJSON(bytes.NewReader(e.FieldsV1.Raw)) != nil {
			continue
		}
		var leaves []string
		set.Leaves().Iterate(func(p fieldpath.Path) { leaves = append(leaves, p.String()) })
		sort.Strings(leaves)
		for _, l := range leaves {
			fmt.Println("    ", l)
		}
	}
}

func repoRoot() (string, error) {
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("find the repository: %w", err)
	}
	return filepath.Dir(strings.TrimSpace(string(out))), nil
}
