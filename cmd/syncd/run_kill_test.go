package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/restmapper"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	"syncd.dev/syncd/internal/daemon"
	"syncd.dev/syncd/internal/inventory"
	"syncd.dev/syncd/internal/ownership"
	"syncd.dev/syncd/internal/renderproc"
)

// cliArgsEnv, when set in a process started from the test binary, makes
// TestMain run the syncd command line it holds (JSON array) instead of the
// tests: the test runs the real `syncd run` as a separate process without
// building a binary.
const cliArgsEnv = "SYNCD_TEST_RUN_CLI"

// runCLIIfAsked runs the command line of cliArgsEnv like main does
// (SIGTERM and interrupt cancel it) and exits; it returns at once when the
// variable is unset. TestMain calls it first.
func runCLIIfAsked() {
	raw := os.Getenv(cliArgsEnv)
	if raw == "" {
		return
	}
	var args []string
	if err := json.Unmarshal([]byte(raw), &args); err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", cliArgsEnv, err)
		os.Exit(exitError)
	}
	renderproc.Main() // its renders re-execute this test binary, as testenv.Main's do
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, args, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// syncdProcess is a `syncd run` running as its own process.
type syncdProcess struct {
	cmd    *exec.Cmd
	stderr string // path of its log
	exited chan struct{}
}

// startSyncd starts the test binary as `syncd args...`.
func startSyncd(t *testing.T, args ...string) *syncdProcess {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	argv, err := json.Marshal(args)
	if err != nil {
		t.Fatal(err)
	}
	logPath := filepath.Join(t.TempDir(), "syncd.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(self, "-test.run=^$")
	cmd.Env = append(os.Environ(), cliArgsEnv+"="+string(argv))
	cmd.Stdout, cmd.Stderr = logFile, logFile
	// Die with the test binary, whatever happens to it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &syncdProcess{cmd: cmd, stderr: logPath, exited: make(chan struct{})}
	go func() {
		_ = cmd.Wait()
		logFile.Close()
		close(p.exited)
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-p.exited
		if t.Failed() {
			data, _ := os.ReadFile(logPath)
			lines := strings.Split(strings.TrimSpace(string(data)), "\n")
			if len(lines) > 30 {
				lines = lines[len(lines)-30:]
			}
			t.Logf("syncd log tail:\n%s", strings.Join(lines, "\n"))
		}
	})
	return p
}

// listenAddr reads the address syncd logged it serves HTTP on.
func (p *syncdProcess) listenAddr() (string, bool) {
	f, err := os.Open(p.stderr)
	if err != nil {
		return "", false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var line struct {
			Msg    string `json:"msg"`
			Listen string `json:"listen"`
		}
		if json.Unmarshal(sc.Bytes(), &line) == nil && line.Msg == "syncd started" {
			return line.Listen, true
		}
	}
	return "", false
}

// runStatus is what /status answers.
type runStatus struct {
	Apps        []daemon.AppStatus `json:"apps"`
	ConfigError string             `json:"configError"`
}

func getStatus(addr string) (runStatus, error) {
	var st runStatus
	resp, err := httpClient.Get("http://" + addr + "/status")
	if err != nil {
		return st, err
	}
	defer resp.Body.Close()
	err = json.NewDecoder(resp.Body).Decode(&st)
	return st, err
}

// TestRunKilledMidApply runs the real `syncd run` as a process, kills it
// with SIGKILL in the middle of applying 300 objects, changes the commit
// (dropping objects the killed run had created) and starts it again. The
// new process waits for the dead one's Lease to expire, then converges:
// every object of the commit present with the app's manager owning its
// fields, the dropped ones pruned (the killed run had recorded them before
// applying), a bystander object untouched, the inventory exactly the
// commit's objects. Then an invalid config replaces the file: /status shows
// the error and the old config keeps applying commits.
func TestRunKilledMidApply(t *testing.T) {
	ns := env.Namespace(t)
	// The Lease and the inventory live in syncd's own namespace, which no
	// app object may share.
	sysNS := env.Namespace(t)
	cs := env.Clientset(t)
	ctx := context.Background()
	if _, err := cs.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "bystander"}, Data: map[string]string{"v": "mine"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	repo := servedRepo(t, "app")
	const n = 300
	cms := func(skip map[string]bool, v string, override map[string]string) map[string][]byte {
		var b strings.Builder
		for i := range n {
			name := fmt.Sprintf("cm-%03d", i)
			if skip[name] {
				continue
			}
			val := v
			if o, ok := override[name]; ok {
				val = o
			}
			fmt.Fprintf(&b, "---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: %s\ndata:\n  v: %q\n", name, val)
		}
		return map[string][]byte{"app/cms.yaml": []byte(b.String())}
	}
	if _, err := repo.Commit("300 objects", cms(nil, "1", nil)); err != nil {
		t.Fatal(err)
	}
	cfgPath := filepath.Join(writeFiles(t, map[string]string{"syncd.yaml": fmt.Sprintf(`apiVersion: syncd/v1alpha1
kind: Config
sources:
- name: repo
  git:
    url: %s
    branch: main
    interval: 2s
apps:
- name: web
  source: repo
  path: app
  namespace: %s
`, repo.URL, ns)}), "syncd.yaml")
	args := []string{"run", "--config", cfgPath, "--kubeconfig", env.Kubeconfig,
		"--inventory-namespace", sysNS, "--leader-elect-namespace", sysNS,
		"--leader-elect-lease-duration", "3s", "--leader-elect-renew-deadline", "2s", "--leader-elect-retry-period", "500ms",
		"--listen", "127.0.0.1:0", "--cache-dir", t.TempDir(),
		// A rate limit low enough that 300 applies take seconds: the kill
		// lands mid-apply on any machine.
		"--kube-qps", "50", "--kube-burst", "10", "--concurrency", "4"}

	live := func() (map[string]corev1.ConfigMap, error) {
		list, err := cs.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return nil, err
		}
		out := map[string]corev1.ConfigMap{}
		for _, cm := range list.Items {
			if cm.Name != "kube-root-ca.crt" {
				out[cm.Name] = cm
			}
		}
		return out, nil
	}

	first := startSyncd(t, args...)
	poll(t, "first process applying", func() (bool, string) {
		m, err := live()
		if err != nil {
			return false, err.Error()
		}
		return len(m) > 20, fmt.Sprintf("%d ConfigMaps", len(m))
	})
	if err := first.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-first.exited
	killed, err := live()
	if err != nil {
		t.Fatal(err)
	}
	if len(killed) >= n+1 {
		t.Fatalf("all %d objects were applied before the kill: it did not land mid-apply", n)
	}
	t.Logf("killed with %d of %d objects applied", len(killed)-1, n)

	// The next commit drops five objects the killed run created and
	// changes every value.
	var created []string
	for name := range killed {
		if name != "bystander" {
			created = append(created, name)
		}
	}
	sort.Strings(created)
	drop := map[string]bool{}
	for _, name := range created[:5] {
		drop[name] = true
	}
	sha2, err := repo.Commit("drop five, v=2", cms(drop, "2", nil))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"bystander": "mine"}
	for i := range n {
		if name := fmt.Sprintf("cm-%03d", i); !drop[name] {
			want[name] = "2"
		}
	}

	second := startSyncd(t, args...)
	var addr string
	poll(t, "second process listening", func() (bool, string) {
		a, ok := second.listenAddr()
		addr = a
		return ok, "no \"syncd started\" line yet"
	})
	converged := func(want map[string]string, sha string) func() (bool, string) {
		return func() (bool, string) {
			m, err := live()
			if err != nil {
				return false, err.Error()
			}
			got := map[string]string{}
			for name, cm := range m {
				got[name] = cm.Data["v"]
			}
			st, err := getStatus(addr)
			if err != nil {
				return false, err.Error()
			}
			if diff := cmp.Diff(want, got); diff != "" {
				return false, fmt.Sprintf("status %+v; ConfigMaps (-want +got):\n%s", st, diff)
			}
			if len(st.Apps) != 1 || st.Apps[0].Result != "ok" || st.Apps[0].Revision != sha {
				return false, fmt.Sprintf("status %+v, want web ok at %s", st, sha)
			}
			return true, ""
		}
	}
	poll(t, "restarted syncd converges", converged(want, sha2))

	final, err := live()
	if err != nil {
		t.Fatal(err)
	}
	if final["bystander"].UID != killed["bystander"].UID {
		t.Errorf("bystander ConfigMap was recreated")
	}
	for name, cm := range final {
		if name == "bystander" {
			continue
		}
		if k, ok := killed[name]; ok && k.UID != cm.UID {
			t.Errorf("ConfigMap %s was deleted and recreated after the restart", name)
		}
		if problem := ownedBy(cm, "syncd-web"); problem != "" {
			t.Errorf("ConfigMap %s: %s", name, problem)
		}
	}
	// The inventory holds exactly the commit's objects.
	inv := loadInventory(t, ctx, sysNS, "web")
	var members, wantMembers []string
	for _, m := range inv.Members {
		members = append(members, m.Name)
		if m.ResourceVersion == "" {
			t.Errorf("inventory member %s has no resourceVersion: recorded as pending, never as applied", m.Name)
		}
	}
	for name := range want {
		if name != "bystander" {
			wantMembers = append(wantMembers, name)
		}
	}
	sort.Strings(members)
	sort.Strings(wantMembers)
	if diff := cmp.Diff(wantMembers, members); diff != "" {
		t.Errorf("inventory members (-want +got):\n%s", diff)
	}

	// An invalid config replaces the file: rejected, visible in /status,
	// and the old config keeps applying commits.
	if err := os.WriteFile(cfgPath, []byte("apiVersion: syncd/v1alpha1\nkind: Config\napps:\n- name: web\n  source: nowhere\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	poll(t, "invalid config rejected in /status", func() (bool, string) {
		st, err := getStatus(addr)
		if err != nil {
			return false, err.Error()
		}
		return strings.Contains(st.ConfigError, "nowhere"), fmt.Sprintf("configError=%q", st.ConfigError)
	})
	sha3, err := repo.Commit("cm-299 v=3", cms(drop, "2", map[string]string{"cm-299": "3"}))
	if err != nil {
		t.Fatal(err)
	}
	want["cm-299"] = "3"
	poll(t, "old config applies the next commit", converged(want, sha3))

	// SIGTERM: a clean exit.
	if err := second.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-second.exited:
		if code := second.cmd.ProcessState.ExitCode(); code != 0 {
			t.Errorf("syncd run exited %d after SIGTERM, want 0", code)
		}
	case <-time.After(30 * time.Second):
		t.Errorf("syncd run did not exit within 30s of SIGTERM")
	}
}

// ownedBy says what is wrong with the manager's ownership of the
// ConfigMap's data.v and part-of label ("" when both are its, by Apply).
func ownedBy(cm corev1.ConfigMap, manager string) string {
	for _, e := range ownership.DecodeEntries(cm.ManagedFields).Entries {
		if e.Manager != manager || e.Operation != metav1.ManagedFieldsOperationApply {
			continue
		}
		if !e.Set.Has(fieldpath.MakePathOrDie("data", "v")) {
			return fmt.Sprintf("manager %s does not own data.v: %s", manager, e.Set)
		}
		if !e.Set.Has(fieldpath.MakePathOrDie("metadata", "labels", inventory.LabelPartOf)) {
			return fmt.Sprintf("manager %s does not own the part-of label: %s", manager, e.Set)
		}
		return ""
	}
	var managers []string
	for _, mf := range cm.ManagedFields {
		managers = append(managers, mf.Manager+"/"+string(mf.Operation))
	}
	return fmt.Sprintf("no Apply entry of manager %s (managers: %v)", manager, managers)
}

// loadInventory reads app's inventory from namespace ns as syncd stores
// it, with a Manager of its own (no watch).
func loadInventory(t *testing.T, ctx context.Context, ns, app string) *inventory.Inventory {
	t.Helper()
	dyn, err := dynamic.NewForConfig(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	md, err := metadata.NewForConfig(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	disc, err := discovery.NewDiscoveryClientForConfig(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	invm, err := inventory.New(dyn, md, restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(disc)), inventory.Options{Namespace: ns, NoWatch: true})
	if err != nil {
		t.Fatal(err)
	}
	defer invm.Stop()
	inv, err := invm.Load(ctx, app)
	if err != nil {
		t.Fatal(err)
	}
	return inv
}
