package reconciletest

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"

	"syncd.dev/syncd/internal/inventory"
	"syncd.dev/syncd/internal/reconcile"
	"syncd.dev/syncd/internal/testenv"
)

// Repo is a Git repository on disk (branch main) driven with the git CLI.
type Repo struct {
	tb testing.TB
	// Dir is the repository's work tree, a file:// source's path.
	Dir string
}

// NewRepo initialises an empty repository in a directory of the test.
func NewRepo(tb testing.TB) *Repo {
	tb.Helper()
	r := &Repo{tb: tb, Dir: tb.TempDir()}
	r.Git("init", "-q", "-b", "main")
	return r
}

// Git runs git with args in the repository, as a committer that signs
// nothing, and fails the test when it fails.
func (r *Repo) Git(args ...string) {
	r.tb.Helper()
	cmd := exec.Command("git", append([]string{"-c", "commit.gpgsign=false", "-c", "user.name=t", "-c", "user.email=t@example.com"}, args...)...)
	cmd.Dir = r.Dir
	if out, err := cmd.CombinedOutput(); err != nil {
		r.tb.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

// Commit writes files (path → content; "" deletes) and commits them.
func (r *Repo) Commit(msg string, files map[string]string) {
	r.tb.Helper()
	for name, content := range files {
		p := filepath.Join(r.Dir, name)
		if content == "" {
			_ = os.Remove(p)
			continue
		}
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			r.tb.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			r.tb.Fatal(err)
		}
	}
	r.Git("add", "-A")
	r.Git("commit", "-q", "--allow-empty", "-m", msg)
}

// Head returns the repository's HEAD commit.
func (r *Repo) Head() string {
	r.tb.Helper()
	cmd := exec.Command("git", "rev-parse", "HEAD")
	cmd.Dir = r.Dir
	out, err := cmd.Output()
	if err != nil {
		r.tb.Fatal(err)
	}
	return strings.TrimSpace(string(out))
}

// ConfigMap is the manifest of ConfigMap ns/settings with data.color.
func ConfigMap(ns, color string) string {
	return NamedConfigMap(ns, "settings", color)
}

// NamedConfigMap is the manifest of ConfigMap ns/name with data.color.
func NamedConfigMap(ns, name, color string) string {
	return fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: %s\n  namespace: %s\ndata:\n  color: %s\n", name, ns, color)
}

// Cluster is the reconcile.Cluster of the API server behind cfg: its
// dynamic client and a RESTMapper over cached discovery. Config is left
// unset (apps cannot impersonate through it); set it where they must.
func Cluster(tb testing.TB, cfg *rest.Config) reconcile.Cluster {
	tb.Helper()
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		tb.Fatal(err)
	}
	disc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		tb.Fatal(err)
	}
	return reconcile.Cluster{Dynamic: dyn, Mapper: restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(disc))}
}

// Eventually polls cond every 100 ms until it holds, and fails the test
// with what and cond's last state when it does not within 60 s (a
// generous deadline for a shared machine).
func Eventually(tb testing.TB, what string, cond func() (bool, string)) {
	tb.Helper()
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
	tb.Fatalf("%s: not reached in 60s; last state: %s", what, last)
}

// Tenant is a service account in its own namespace with rules there, and
// the clients syncd uses for an app running as it.
type Tenant struct {
	// NS is the account's namespace and SA its name.
	NS, SA string
	// Cluster is syncd's own identity, with Config set so that apps may
	// impersonate the account.
	Cluster reconcile.Cluster
	// Inventory runs on syncd's identity in InventoryNS, syncd's own
	// namespace holding the inventory Secrets, where the account has no
	// permission; its Config lets the tenant's member reads, watches and
	// deletes run as the account.
	Inventory   *inventory.Manager
	InventoryNS string
}

// NewTenant makes the account "deployer" in a new namespace of env and
// grants it rules there. Its inventory stops when the test ends.
func NewTenant(tb testing.TB, env *testenv.Env, rules ...rbacv1.PolicyRule) *Tenant {
	tb.Helper()
	ctx := context.Background()
	tn := &Tenant{NS: env.Namespace(tb), SA: "deployer", InventoryNS: env.Namespace(tb)}
	if _, err := env.ServiceAccountConfig(ctx, tn.NS, tn.SA); err != nil {
		tb.Fatal(err)
	}
	if err := env.Grant(ctx, tn.NS, tn.SA, tn.NS, rules); err != nil {
		tb.Fatal(err)
	}
	tn.Cluster = Cluster(tb, env.Config)
	tn.Cluster.Config = env.Config
	md, err := metadata.NewForConfig(env.Config)
	if err != nil {
		tb.Fatal(err)
	}
	tn.Inventory, err = inventory.New(tn.Cluster.Dynamic, md, tn.Cluster.Mapper, inventory.Options{Namespace: tn.InventoryNS, Config: env.Config, SyncTimeout: 5 * time.Second})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(tn.Inventory.Stop)
	return tn
}

// User is the account's user name, as impersonated and as the API
// server's errors name it.
func (tn *Tenant) User() string { return "system:serviceaccount:" + tn.NS + ":" + tn.SA }
