package install

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"syncd.dev/syncd/internal/testenv"
)

// TestSyncdRunOnceAsServiceAccount runs the real syncd binary, `syncd run
// --once`, as the installed ServiceAccount with POD_NAMESPACE=syncd-system
// and the example app served from a local Git repository: the RBAC of
// manifests/ must be enough for everything syncd does (inventory
// namespace check, inventory Secret, discovery, applies of every manager).
func TestSyncdRunOnceAsServiceAccount(t *testing.T) {
	installBase(t)
	gitBin, err := exec.LookPath("git")
	if err != nil {
		t.Skip("no git")
	}
	tmp := t.TempDir()
	bin := buildSyncd(t, tmp)

	// A Git repository holding examples/app at examples/app.
	repo := filepath.Join(tmp, "repo")
	if err := os.CopyFS(filepath.Join(repo, "examples", "app"), os.DirFS(repoPath("examples/app"))); err != nil {
		t.Fatal(err)
	}
	git := func(args ...string) {
		t.Helper()
		cmd := exec.Command(gitBin, append([]string{"-c", "user.name=t", "-c", "user.email=t@example.com", "-c", "commit.gpgsign=false"}, args...)...)
		cmd.Dir = repo
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	git("init", "-q", "-b", "main")
	git("add", ".")
	git("commit", "-q", "-m", "example app")

	// examples/syncd.yaml with the source pointed at that repository and no
	// alerts (their URL file does not exist here).
	app := loadExampleApp(t)
	cfgFile := filepath.Join(tmp, "syncd.yaml")
	cfg := fmt.Sprintf(`apiVersion: syncd/v1alpha1
kind: Config
sources:
  - name: examples
    git: {url: "file://%s", branch: main, interval: 1m}
apps:
  - name: web
    source: examples
    path: %s
    namespace: %s
    split:
      - manager: %s
        kinds: [apps/Deployment]
        paths: [".spec.template.spec.containers[*].image"]
    conflicts:
      default: fail
      rules:
        - kinds: [apps/Deployment]
          paths: [.spec.replicas]
          managers: [kube-controller-manager]
          action: yield
`, repo, app.Path, app.Namespace, app.Split[0].Manager)
	if err := os.WriteFile(cfgFile, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}

	saCfg, err := env.ServiceAccountConfig(context.Background(), "syncd-system", "syncd")
	if err != nil {
		t.Fatal(err)
	}
	kubeconfig := filepath.Join(tmp, "kubeconfig")
	if err := testenv.WriteKubeconfig(saCfg, kubeconfig); err != nil {
		t.Fatal(err)
	}
	run := exec.Command(bin, "run", "--once", "--config", cfgFile, "--kubeconfig", kubeconfig, "--cache-dir", filepath.Join(tmp, "cache"))
	run.Env = append(os.Environ(), "POD_NAMESPACE=syncd-system", "HOME="+tmp)
	out, err := run.CombinedOutput()
	if err != nil {
		t.Fatalf("syncd run --once as syncd-system/syncd: %v\n%s", err, out)
	}
	t.Logf("syncd run --once:\n%s", out)

	cs := env.Clientset(t)
	if _, err := cs.CoreV1().Secrets("syncd-system").Get(context.Background(), "syncd-applyset-web", metav1.GetOptions{}); err != nil {
		t.Errorf("inventory Secret of app web: %v", err)
	}
	if _, err := cs.AppsV1().Deployments("web").Get(context.Background(), "web", metav1.GetOptions{}); err != nil {
		t.Errorf("Deployment web/web: %v", err)
	}
}

// buildSyncd builds ./cmd/syncd, and syncd-render beside it, into dir
// and returns syncd's path.
func buildSyncd(t *testing.T, dir string) string {
	t.Helper()
	bin := filepath.Join(dir, "syncd")
	build := exec.Command("go", "build", "-o", dir+"/", "./cmd/syncd", "./cmd/syncd-render")
	build.Dir = repoRoot
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/syncd ./cmd/syncd-render: %v\n%s", err, out)
	}
	return bin
}
