// Command demo runs syncd end to end on an embedded local control plane:
// it starts etcd and kube-apiserver on loopback (built by
// hack/controlplane.sh), builds syncd, applies examples/plain with
// `syncd apply`, shows what the API server recorded (objects and their
// managedFields), shows a refused conflicting apply, and stops everything.
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

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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

	examples := filepath.Join(root, "examples", "plain")
	step("syncd apply --path examples/plain --manager syncd-web")
	if _, err := syncd(bin, env, "apply", "--path", examples, "--manager", "syncd-web"); err != nil {
		return err
	}

	step("Applying again: nothing changed, nothing written")
	if _, err := syncd(bin, env, "apply", "--path", examples, "--manager", "syncd-web"); err != nil {
		return err
	}

	cs, err := kubernetes.NewForConfig(env.Config)
	if err != nil {
		return err
	}
	step("What the API server recorded: managedFields of ConfigMap demo/web-settings")
	cm, err := cs.CoreV1().ConfigMaps("demo").Get(ctx, "web-settings", metav1.GetOptions{})
	if err != nil {
		return err
	}
	printManaged(cm.ManagedFields)
	fmt.Println("data:", cm.Data)

	step("managedFields of Deployment demo/web")
	dep, err := cs.AppsV1().Deployments("demo").Get(ctx, "web", metav1.GetOptions{})
	if err != nil {
		return err
	}
	printManaged(dep.ManagedFields)

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
	cm, err = cs.CoreV1().ConfigMaps("demo").Get(ctx, "web-settings", metav1.GetOptions{})
	if err != nil {
		return err
	}
	fmt.Printf("exit code 3; .data.color is still %q\n", cm.Data["color"])
	return nil
}

// syncd runs the syncd binary against the demo cluster, streaming output.
// A non-zero exit is returned as the code with a nil error when it is 3.
func syncd(bin string, env *testenv.Env, args ...string) (int, error) {
	fmt.Printf("$ syncd %s\n", strings.Join(args, " "))
	cmd := exec.Command(bin, append(args, "--kubeconfig", env.Kubeconfig)...)
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stdout
	err := cmd.Run()
	if ee, ok := err.(*exec.ExitError); ok {
		if ee.ExitCode() == 3 {
			return 3, nil
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
