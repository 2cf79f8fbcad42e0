package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// inventoryNamespace holds the apps' inventories (syncd's default, set
// through POD_NAMESPACE as in a pod). Every journey's apps keep theirs
// there, by app name: two journeys must not name an app alike, or one's
// apply would plan to prune the other's objects.
const inventoryNamespace = "syncd-system"

// commandTimeout bounds one syncd command; a journey's command that runs
// longer has hung.
const commandTimeout = 3 * time.Minute

// result is what one syncd invocation printed and returned.
type result struct {
	args           []string
	code           int
	stdout, stderr string
}

func (r result) String() string {
	return fmt.Sprintf("syncd %s: exit %d\n--- stdout\n%s--- stderr\n%s", strings.Join(r.args, " "), r.code, r.stdout, r.stderr)
}

// workspace is one user's machine: a HOME, syncd's cache, a directory
// for the config and its files, and everything syncd printed to them.
type workspace struct {
	t      *testing.T
	dir    string
	home   string
	cache  string
	config string // the syncd.yaml (empty until writeConfig)

	mu      sync.Mutex
	printed []string // every stdout and stderr, for the secret check
}

func newWorkspace(t *testing.T) *workspace {
	t.Helper()
	ensureNamespace(t, inventoryNamespace)
	dir := t.TempDir()
	w := &workspace{t: t, dir: dir, home: filepath.Join(dir, "home"), cache: filepath.Join(dir, "cache")}
	for _, d := range []string{w.home, w.cache} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	return w
}

// file writes content to name below the workspace and returns its path.
func (w *workspace) file(name, content string) string {
	w.t.Helper()
	p := filepath.Join(w.dir, name)
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		w.t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		w.t.Fatal(err)
	}
	return p
}

// writeConfig writes the workspace's syncd.yaml.
func (w *workspace) writeConfig(content string) {
	w.t.Helper()
	w.config = w.file("syncd.yaml", content)
}

// environ is the environment syncd runs with: the user's HOME, syncd's
// namespace, and KUBECONFIG naming the control plane, as a user's shell
// has it (commands that read no cluster, like render, take no
// --kubeconfig).
func (w *workspace) environ() []string {
	var out []string
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "KUBECONFIG=") || strings.HasPrefix(kv, "HOME=") {
			continue
		}
		out = append(out, kv)
	}
	return append(out, "HOME="+w.home, "POD_NAMESPACE="+inventoryNamespace, "KUBECONFIG="+env.Kubeconfig)
}

// syncd runs the binary with args and records what it printed.
func (w *workspace) syncd(args ...string) result {
	w.t.Helper()
	return w.syncdIn("", args...)
}

// syncdIn runs the binary in dir (a checkout, for plan --path).
func (w *workspace) syncdIn(dir string, args ...string) result {
	w.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), commandTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Dir = dir
	cmd.Env = w.environ()
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	r := result{args: args, stdout: out.String(), stderr: errOut.String()}
	w.record(r.stdout, r.stderr)
	if ee, ok := err.(*exec.ExitError); ok {
		r.code = ee.ExitCode()
	} else if err != nil {
		w.t.Fatalf("syncd %v: %v", args, err)
	}
	if ctx.Err() != nil {
		w.t.Fatalf("syncd %v did not finish within %s\n%s", args, commandTimeout, r)
	}
	if strings.Contains(r.stderr, "panic:") || strings.Contains(r.stderr, "goroutine ") {
		w.t.Fatalf("syncd %v crashed\n%s", args, r)
	}
	return r
}

// must runs syncd and fails the test unless it exits with code.
func (w *workspace) must(code int, args ...string) result {
	w.t.Helper()
	r := w.syncd(args...)
	if r.code != code {
		w.t.Fatalf("want exit %d\n%s", code, r)
	}
	return r
}

func (w *workspace) record(s ...string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.printed = append(w.printed, s...)
}

// checkNoSecrets fails the test when any of secrets, or a fragment of
// one (eight characters or more), appears in anything syncd printed in
// this workspace (commands, daemon logs, alerts the receivers got).
func (w *workspace) checkNoSecrets(secrets ...string) {
	w.t.Helper()
	w.mu.Lock()
	all := strings.Join(w.printed, "\n")
	w.mu.Unlock()
	for _, s := range secrets {
		for _, frag := range fragments(s) {
			if i := strings.Index(all, frag); i >= 0 {
				lo, hi := max(0, i-200), min(len(all), i+len(frag)+200)
				w.t.Errorf("a secret value (fragment %q) was printed:\n...%s...", frag, all[lo:hi])
				break
			}
		}
	}
}

// fragments are the secret itself and its eight-character windows.
func fragments(s string) []string {
	const n = 8
	if len(s) <= n {
		return []string{s}
	}
	out := []string{s}
	for i := 0; i+n <= len(s); i += n / 2 {
		out = append(out, s[i:i+n])
	}
	return out
}

// daemon is a `syncd run` process.
type daemon struct {
	w    *workspace
	cmd  *exec.Cmd
	log  string
	addr string // --listen, as it logged it
	done chan error
}

// startDaemon runs `syncd run` with args (the config and cluster flags
// are added), without leader election, serving on a free loopback port.
func (w *workspace) startDaemon(args ...string) *daemon {
	w.t.Helper()
	d := &daemon{w: w, log: filepath.Join(w.dir, fmt.Sprintf("syncd-run-%d.log", time.Now().UnixNano())), done: make(chan error, 1)}
	logf, err := os.Create(d.log)
	if err != nil {
		w.t.Fatal(err)
	}
	full := append([]string{"run", "--listen", "127.0.0.1:0", "--leader-elect=false", "--cache-dir", w.cache}, args...)
	if w.config != "" {
		full = append(full, "--config", w.config)
	}
	d.cmd = exec.Command(bin, full...)
	d.cmd.Env = w.environ()
	d.cmd.Stdout, d.cmd.Stderr = logf, logf
	d.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := d.cmd.Start(); err != nil {
		w.t.Fatal(err)
	}
	go func() { d.done <- d.cmd.Wait(); logf.Close() }()
	w.t.Cleanup(func() { d.stop() })
	d.addr = d.waitLogged("syncd started", "listen")
	return d
}

// stop sends SIGTERM, waits for the exit (20 s, then SIGKILL) and records
// the log for the secret check.
func (d *daemon) stop() {
	if d.cmd.ProcessState == nil {
		_ = d.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-d.done:
		case <-time.After(20 * time.Second):
			_ = d.cmd.Process.Kill()
			<-d.done
		}
	}
	d.w.record(d.logText())
	if strings.Contains(d.logText(), "panic:") {
		d.w.t.Errorf("syncd run crashed:\n%s", d.logText())
	}
}

// waitLogged waits up to 60 s for a JSON log line with msg and returns
// its key's value.
func (d *daemon) waitLogged(msg, key string) string {
	d.w.t.Helper()
	var v string
	waitFor(d.w.t, "syncd run to log "+msg, time.Minute, func() (bool, string) {
		v = d.logged(msg, key)
		return v != "", d.logText()
	})
	return v
}

// logged returns key of the last JSON log line whose msg is msg.
func (d *daemon) logged(msg, key string) string {
	fh, err := os.Open(d.log)
	if err != nil {
		return ""
	}
	defer fh.Close()
	sc := bufio.NewScanner(fh)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	v := ""
	for sc.Scan() {
		var line map[string]any
		if json.Unmarshal(sc.Bytes(), &line) != nil || line["msg"] != msg {
			continue
		}
		if s, ok := line[key]; ok {
			v = fmt.Sprint(s)
		}
	}
	return v
}

func (d *daemon) logText() string {
	b, _ := os.ReadFile(d.log)
	return string(b)
}

// appStatus is the part of /status a journey reads.
type appStatus struct {
	App, Revision, Result, Error string
	Changed, Findings, Overlaps  int
	LastRun                      time.Time
}

// status reads /status.
func (d *daemon) status() ([]appStatus, error) {
	resp, err := loopback.Get("http://" + d.addr + "/status")
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var st struct {
		Apps []appStatus `json:"apps"`
	}
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	d.w.record(string(body))
	return st.Apps, json.Unmarshal(body, &st)
}

// waitApplied waits until /status shows app applied at a revision that
// satisfies rev (e.g. strings.Contains with a commit), and returns it.
func (d *daemon) waitApplied(app string, rev func(string) bool) appStatus {
	d.w.t.Helper()
	var got appStatus
	waitFor(d.w.t, "app "+app+" applied by syncd run", 2*time.Minute, func() (bool, string) {
		apps, err := d.status()
		if err != nil {
			return false, err.Error()
		}
		for _, a := range apps {
			if a.App == app {
				got = a
				return a.Error == "" && a.Result != "" && rev(a.Revision), fmt.Sprintf("%+v\n%s", a, tail(d.logText(), 3000))
			}
		}
		return false, fmt.Sprintf("%+v", apps)
	})
	return got
}

// waitRuns waits until /status shows n more completed runs of app (its
// lastRun moved n times) and returns n.
func (d *daemon) waitRuns(app string, n int) int {
	d.w.t.Helper()
	last := d.lastRun(app)
	for i := range n {
		waitFor(d.w.t, fmt.Sprintf("run %d of app %s", i+1, app), time.Minute, func() (bool, string) {
			now := d.lastRun(app)
			if now.After(last) {
				last = now
				return true, ""
			}
			return false, tail(d.logText(), 2000)
		})
	}
	return n
}

// lastRun is app's lastRun on /status (zero when not shown).
func (d *daemon) lastRun(app string) time.Time {
	apps, err := d.status()
	if err != nil {
		return time.Time{}
	}
	for _, a := range apps {
		if a.App == app {
			return a.LastRun
		}
	}
	return time.Time{}
}

// loopback is the tests' own HTTP client for servers on loopback.
var loopback = &http.Client{Timeout: 20 * time.Second}

// alert is the part of a syncd.dev/alert/v1 body the journeys read.
type alert struct {
	Type, State, Summary, App, Revision, Fingerprint string
	Object                                           struct{ Kind, Namespace, Name string }
	Fields                                           []struct {
		Path, Class, Desired, Live string
		Culprit                    *struct{ Manager, Operation, Subresource, Time string }
	}
}

// receiver is a webhook endpoint on loopback keeping every alert body.
type receiver struct {
	url    string
	mu     sync.Mutex
	alerts []alert
	raw    []string
	// check, when set, vets each request before its body is kept (a
	// signature, a token in the URL); a refused request is answered 401
	// and its reason kept in refused.
	check   func(req *http.Request, body []byte) error
	refused []string
}

func startReceiver(t *testing.T) *receiver {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	r := &receiver{url: "http://" + l.Addr().String() + "/alerts"}
	srv := &http.Server{ReadHeaderTimeout: 5 * time.Second, Handler: http.HandlerFunc(func(rw http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(io.LimitReader(req.Body, 1<<20))
		if err := r.vet(req, body); err != nil {
			http.Error(rw, err.Error(), http.StatusUnauthorized)
			return
		}
		var a alert
		if err := json.Unmarshal(body, &a); err != nil {
			http.Error(rw, err.Error(), http.StatusBadRequest)
			return
		}
		r.mu.Lock()
		r.alerts = append(r.alerts, a)
		r.raw = append(r.raw, string(body))
		r.mu.Unlock()
	})}
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(func() { _ = srv.Close() })
	return r
}

// requireCheck makes the receiver refuse requests check rejects.
func (r *receiver) requireCheck(check func(req *http.Request, body []byte) error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.check = check
}

// vet runs the receiver's check, keeping what it refused.
func (r *receiver) vet(req *http.Request, body []byte) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.check == nil {
		return nil
	}
	err := r.check(req, body)
	if err != nil {
		r.refused = append(r.refused, err.Error())
	}
	return err
}

// refusals returns why the receiver refused requests, if it did.
func (r *receiver) refusals() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.refused...)
}

// waitFor waits up to a minute for an alert match accepts.
func (r *receiver) waitFor(t *testing.T, match func(alert) bool) alert {
	t.Helper()
	var got alert
	waitFor(t, "an alert", time.Minute, func() (bool, string) {
		r.mu.Lock()
		defer r.mu.Unlock()
		for _, a := range r.alerts {
			if match(a) {
				got = a
				return true, ""
			}
		}
		return false, strings.Join(r.raw, "\n")
	})
	return got
}

// bodies returns every alert body received, for the secret check.
func (r *receiver) bodies() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.raw...)
}

// waitFor polls cond every 200 ms until it holds or timeout passes; cond
// returns what to show when it never held.
func waitFor(t *testing.T, what string, timeout time.Duration, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	last := ""
	for time.Now().Before(deadline) {
		ok, info := cond()
		if ok {
			return
		}
		last = info
		time.Sleep(200 * time.Millisecond) // polling interval, not a wait for speed
	}
	t.Fatalf("timed out after %s waiting for %s; last:\n%s", timeout, what, last)
}

func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}
