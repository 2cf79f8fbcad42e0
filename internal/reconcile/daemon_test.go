package reconcile_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"syncd.dev/syncd/internal/reconcile"
	"syncd.dev/syncd/internal/testenv"
)

var env *testenv.Env

func TestMain(m *testing.M) { testenv.Main(m, testenv.Options{ControllerManager: true}, &env) }

// gitRepo is a repository on disk driven with the git CLI.
type gitRepo struct {
	t   *testing.T
	dir string
}

func newRepo(t *testing.T) *gitRepo {
	t.Helper()
	r := &gitRepo{t: t, dir: t.TempDir()}
	r.git("init", "-q", "-b", "main")
	return r
}

func (r *gitRepo) git(args ...string) {
	r.t.Helper()
	cmd := exec.Command("git", append([]string{"-c", "commit.gpgsign=false", "-c", "user.name=t", "-c", "user.email=t@example.com"}, args...)...)
	cmd.Dir = r.dir
	if out, err := cmd.CombinedOutput(); err != nil {
		r.t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

// commit writes files (path → content; "" deletes) and commits them.
func (r *gitRepo) commit(msg string, files map[string]string) {
	r.t.Helper()
	for name, content := range files {
		p := filepath.Join(r.dir, name)
		if content == "" {
			_ = os.Remove(p)
			continue
		}
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			r.t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			r.t.Fatal(err)
		}
	}
	r.git("add", "-A")
	r.git("commit", "-q", "--allow-empty", "-m", msg)
}

func configMap(ns, color string) string {
	return fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\n  namespace: %s\ndata:\n  color: %s\n", ns, color)
}

func writeConfig(t *testing.T, path, repoDir, ns, interval string) {
	t.Helper()
	cfg := fmt.Sprintf(`apiVersion: syncd/v1alpha1
kind: Config
sources:
- name: repo
  git:
    url: file://%s
    branch: main
    interval: %s
apps:
- name: web
  source: repo
  path: app
  namespace: %s
`, repoDir, interval, ns)
	if err := os.WriteFile(path, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
}

func cluster(t *testing.T) reconcile.Cluster {
	t.Helper()
	return clusterFor(t, env.Config)
}

// eventually polls cond until it holds or the (generous) deadline passes.
func eventually(t *testing.T, what string, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	last := ""
	for time.Now().Before(deadline) {
		ok, state := cond()
		if ok {
			return
		}
		last = state
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("%s: not reached in 60s; last state: %s", what, last)
}

// TestDaemonEndToEnd: a commit lands and is applied within one poll; a
// Trigger polls at once; a bad commit keeps the previous state, prunes
// nothing and shows the error in the status; an invalid new config is
// rejected while the old one keeps running.
func TestDaemonEndToEnd(t *testing.T) {
	ns := env.Namespace(t)
	repo := newRepo(t)
	repo.commit("first", map[string]string{"app/cm.yaml": configMap(ns, "blue")})
	cfgPath := filepath.Join(t.TempDir(), "syncd.yaml")
	// A long interval: only the start poll and triggers run in this test.
	writeConfig(t, cfgPath, repo.dir, ns, "1h")

	d := launchDaemon(t, reconcile.DaemonOptions{
		ConfigPath:  cfgPath,
		Cluster:     cluster(t),
		Options:     reconcile.Options{CacheDir: t.TempDir()},
		ConfigCheck: 200 * time.Millisecond,
	})
	cms := env.Clientset(t).CoreV1().ConfigMaps(ns)
	color := func() string {
		cm, err := cms.Get(context.Background(), "settings", metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return "<absent>"
		}
		if err != nil {
			return err.Error()
		}
		return cm.Data["color"]
	}
	status := func() reconcile.AppStatus {
		for _, s := range d.Status() {
			if s.App == "web" {
				return s
			}
		}
		return reconcile.AppStatus{}
	}

	eventually(t, "first revision applied and daemon ready", func() (bool, string) {
		return color() == "blue" && d.Ready(), fmt.Sprintf("color=%s ready=%v status=%+v", color(), d.Ready(), status())
	})

	if diff := cmp.Diff(map[string]string{"repo": "file://" + repo.dir}, d.Sources()); diff != "" {
		t.Errorf("Sources() (-want +got):\n%s", diff)
	}

	// A push: the webhook path triggers an immediate poll.
	repo.commit("green", map[string]string{"app/cm.yaml": configMap(ns, "green")})
	if err := d.Trigger("repo"); err != nil {
		t.Fatal(err)
	}
	eventually(t, "triggered revision applied", func() (bool, string) {
		return color() == "green" && status().Result == "ok", fmt.Sprintf("color=%s status=%+v", color(), status())
	})

	// A bad commit: broken YAML. Nothing changes, the error is visible.
	repo.commit("broken", map[string]string{"app/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: [oops\n"})
	if err := d.Trigger("repo"); err != nil {
		t.Fatal(err)
	}
	eventually(t, "render error reported", func() (bool, string) {
		s := status()
		return s.Result == "failed" && strings.Contains(s.Error, "cm.yaml"), fmt.Sprintf("status=%+v", s)
	})
	if got := color(); got != "green" {
		t.Fatalf("after a broken commit the ConfigMap is %q, want green kept", got)
	}

	// An invalid config replaces the file: rejected, the old one runs on.
	if err := os.WriteFile(cfgPath, []byte("apiVersion: syncd/v1alpha1\nkind: Config\napps:\n- name: web\n  source: nowhere\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	eventually(t, "invalid config rejected", func() (bool, string) {
		e := d.ConfigError()
		return strings.Contains(e, "nowhere"), "configError=" + e
	})
	// Webhooks still match the sources of the config in force.
	if _, ok := d.Sources()["repo"]; !ok {
		t.Errorf("after a rejected config, Sources() = %v, want the running config's repo", d.Sources())
	}
	repo.commit("fixed", map[string]string{"app/cm.yaml": configMap(ns, "red")})
	if err := d.Trigger("repo"); err != nil {
		t.Fatal(err)
	}
	eventually(t, "old config still applies new commits", func() (bool, string) {
		return color() == "red", "color=" + color()
	})
}
