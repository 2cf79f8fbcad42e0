package testenv

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"syncd.dev/syncd/internal/egress"
)

// Version is the Kubernetes version of the control plane the harness runs.
const Version = "v1.37.2"

// EtcdVersion is the etcd version the harness runs.
const EtcdVersion = "v3.6.6"

// Options says what to start.
type Options struct {
	// ControllerManager also starts kube-controller-manager (garbage
	// collection, namespace deletion, Deployment→ReplicaSet, /scale users).
	ControllerManager bool
	// Controllers is the controller-manager's --controllers list; default
	// every on-by-default controller but node IPAM and node lifecycle
	// (there are no nodes). Tests that count requests name only the
	// controllers they rely on, e.g. garbage collection and namespace
	// deletion, so no other controller writes behind their back.
	Controllers []string
	// Dir is where data, certificates and logs go; default a new temp dir,
	// removed by Stop.
	Dir string
	// BinDir holds the binaries; default BinDir().
	BinDir string
	// APIServerArgs are extra kube-apiserver flags ("--flag=value").
	APIServerArgs []string
}

// Env is a running control plane.
type Env struct {
	// Config is an admin (system:masters) client config.
	Config *rest.Config
	// Kubeconfig is the path of a kubeconfig file for Config, for kubectl
	// and syncd's own commands.
	Kubeconfig string
	// Dir holds the data, certificates and logs.
	Dir string
	// BinDir holds the binaries in use (kubectl included).
	BinDir string

	opts      Options
	ownDir    bool
	pki       *pki
	etcdURL   string
	apiPort   int
	adminTok  string
	mu        sync.Mutex
	procs     map[string]*exec.Cmd
	done      map[string]chan struct{}
	args      map[string][]string // each process's arguments, to restart it
	restarts  map[string]int      // restarts after a death (reap)
	stopping  bool                // Stop was called: no process is restarted
	apiserver []string
}

// BinDir returns the directory hack/controlplane.sh builds the binaries
// into: $SYNCD_CONTROLPLANE_DIR, else the version-keyed user cache dir.
func BinDir() string {
	if d := os.Getenv("SYNCD_CONTROLPLANE_DIR"); d != "" {
		return d
	}
	cache := os.Getenv("XDG_CACHE_HOME")
	if cache == "" {
		home, _ := os.UserHomeDir()
		cache = filepath.Join(home, ".cache")
	}
	return filepath.Join(cache, "syncd", "controlplane", "k8s-"+Version+"-etcd-"+EtcdVersion)
}

// Start starts etcd and kube-apiserver (and kube-controller-manager when
// asked) on free loopback ports and waits until the API server is ready.
func Start(ctx context.Context, opts Options) (*Env, error) {
	e := &Env{opts: opts, procs: map[string]*exec.Cmd{}, done: map[string]chan struct{}{}, args: map[string][]string{}, restarts: map[string]int{}}
	e.BinDir = opts.BinDir
	if e.BinDir == "" {
		e.BinDir = BinDir()
	}
	bins := []string{"etcd", "kube-apiserver"}
	if opts.ControllerManager {
		bins = append(bins, "kube-controller-manager")
	}
	for _, bin := range bins {
		if _, err := os.Stat(filepath.Join(e.BinDir, bin)); err != nil {
			return nil, fmt.Errorf("testenv: %s not found in %s: build the control plane first with hack/controlplane.sh (or set SYNCD_CONTROLPLANE_DIR)", bin, e.BinDir)
		}
	}
	e.Dir = opts.Dir
	if e.Dir == "" {
		d, err := os.MkdirTemp("", "syncd-testenv-")
		if err != nil {
			return nil, err
		}
		e.Dir, e.ownDir = d, true
	}
	ok := false
	defer func() {
		if !ok {
			_ = e.Stop()
		}
	}()
	var err error
	if e.pki, err = writePKI(e.Dir); err != nil {
		return nil, fmt.Errorf("testenv: certificates: %w", err)
	}
	e.adminTok = randomToken()
	tokens := fmt.Sprintf("%s,admin,admin-uid,\"system:masters\"\n", e.adminTok)
	if err := os.WriteFile(filepath.Join(e.Dir, "tokens.csv"), []byte(tokens), 0o600); err != nil {
		return nil, err
	}
	if err := e.startEtcd(ctx); err != nil {
		return nil, err
	}
	if err := e.startAPIServer(ctx); err != nil {
		return nil, err
	}
	if err := e.writeKubeconfig(); err != nil {
		return nil, err
	}
	if opts.ControllerManager {
		if err := e.startControllerManager(); err != nil {
			return nil, err
		}
	}
	ok = true
	return e, nil
}

func (e *Env) startEtcd(ctx context.Context) error {
	ports, err := freePorts(2)
	if err != nil {
		return err
	}
	client := fmt.Sprintf("http://127.0.0.1:%d", ports[0])
	peer := fmt.Sprintf("http://127.0.0.1:%d", ports[1])
	e.etcdURL = client
	return e.runEtcd(ctx, peer)
}

// runEtcd starts etcd on e.etcdURL with the given peer URL and data in
// e.Dir, and waits until it is healthy. On a restart the member's data
// already names the cluster: the --initial-* flags are then ignored.
func (e *Env) runEtcd(ctx context.Context, peer string) error {
	args := []string{
		"--name=default",
		"--data-dir=" + filepath.Join(e.Dir, "etcd"),
		"--listen-client-urls=" + e.etcdURL,
		"--advertise-client-urls=" + e.etcdURL,
		"--listen-peer-urls=" + peer,
		"--initial-advertise-peer-urls=" + peer,
		"--initial-cluster=default=" + peer,
		"--unsafe-no-fsync",
		"--log-level=warn",
		"--quota-backend-bytes=4294967296",
	}
	if err := e.spawn("etcd", args); err != nil {
		return err
	}
	return waitHTTP(ctx, egress.Client(), e.etcdURL+"/health", nil, 30*time.Second, e.logTail("etcd"))
}

func (e *Env) startAPIServer(ctx context.Context) error {
	ports, err := freePorts(1)
	if err != nil {
		return err
	}
	e.apiPort = ports[0]
	e.apiserver = append([]string{
		"--etcd-servers=" + e.etcdURL,
		"--bind-address=127.0.0.1",
		"--advertise-address=127.0.0.1",
		"--secure-port=" + strconv.Itoa(e.apiPort),
		"--cert-dir=" + filepath.Join(e.Dir, "certs"),
		"--tls-cert-file=" + e.pki.certFile,
		"--tls-private-key-file=" + e.pki.keyFile,
		"--client-ca-file=" + e.pki.caFile,
		"--token-auth-file=" + filepath.Join(e.Dir, "tokens.csv"),
		"--authorization-mode=RBAC",
		"--service-account-issuer=https://kubernetes.default.svc.cluster.local",
		"--service-account-key-file=" + e.pki.saPubFile,
		"--service-account-signing-key-file=" + e.pki.saKeyFile,
		"--service-cluster-ip-range=10.96.0.0/16",
		"--endpoint-reconciler-type=none",
		// A webhook or APIService backed by a Service resolves to its
		// endpoints, not to a 10.96.x.x ClusterIP that would leave the
		// machine: with no pods there are no endpoints, so it fails at
		// once (public manifest sets with admission webhooks are tried
		// this way).
		"--enable-aggregator-routing=true",
		"--allow-privileged=true",
		"--profiling=false",
		"--v=0",
	}, e.opts.APIServerArgs...)
	return e.runAPIServer(ctx)
}

func (e *Env) runAPIServer(ctx context.Context) error {
	if err := e.spawn("kube-apiserver", e.apiserver); err != nil {
		return err
	}
	cfg := e.restConfig()
	client, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return err
	}
	hdr := http.Header{"Authorization": {"Bearer " + e.adminTok}}
	if err := waitHTTP(ctx, client, cfg.Host+"/readyz", hdr, 90*time.Second, e.logTail("kube-apiserver")); err != nil {
		return err
	}
	e.Config = cfg
	return nil
}

func (e *Env) restConfig() *rest.Config {
	return &rest.Config{
		Host:            fmt.Sprintf("https://127.0.0.1:%d", e.apiPort),
		BearerToken:     e.adminTok,
		TLSClientConfig: rest.TLSClientConfig{CAData: e.pki.caPEM},
		QPS:             -1, // no client-side throttling in tests unless a test sets it
	}
}

func (e *Env) writeKubeconfig() error {
	e.Kubeconfig = filepath.Join(e.Dir, "kubeconfig")
	return clientcmd.WriteToFile(kubeconfigFor(e.Config, "admin"), e.Kubeconfig)
}

// kubeconfigFor builds a kubeconfig with one context, "testenv".
func kubeconfigFor(cfg *rest.Config, user string) clientcmdapi.Config {
	c := clientcmdapi.NewConfig()
	c.Clusters["testenv"] = &clientcmdapi.Cluster{Server: cfg.Host, CertificateAuthorityData: cfg.CAData}
	c.AuthInfos[user] = &clientcmdapi.AuthInfo{Token: cfg.BearerToken}
	c.Contexts["testenv"] = &clientcmdapi.Context{Cluster: "testenv", AuthInfo: user, Namespace: "default"}
	c.CurrentContext = "testenv"
	return *c
}

func (e *Env) startControllerManager() error {
	controllers := "*,-nodeipam,-nodelifecycle"
	if len(e.opts.Controllers) > 0 {
		controllers = strings.Join(e.opts.Controllers, ",")
	}
	args := []string{
		"--kubeconfig=" + e.Kubeconfig,
		"--controllers=" + controllers,
		"--leader-elect=false",
		"--secure-port=0",
		"--service-account-private-key-file=" + e.pki.saKeyFile,
		"--root-ca-file=" + e.pki.caFile,
		"--use-service-account-credentials=false",
		"--concurrent-gc-syncs=5",
		"--v=0",
	}
	if err := e.spawn("kube-controller-manager", args); err != nil {
		return err
	}
	// A bad flag makes it exit at once; a test relying on garbage
	// collection must not run without it.
	deadline := time.Now().Add(3 * time.Second)
	for time.Now().Before(deadline) {
		if e.exited("kube-controller-manager") {
			return fmt.Errorf("testenv: kube-controller-manager exited at start; log tail:\n%s", e.logTail("kube-controller-manager")())
		}
		time.Sleep(100 * time.Millisecond)
	}
	return nil
}

// exited reports whether the named process has ended.
func (e *Env) exited(name string) bool {
	e.mu.Lock()
	done := e.done[name]
	e.mu.Unlock()
	if done == nil {
		return true
	}
	select {
	case <-done:
		return true
	default:
		return false
	}
}

// StopAPIServer stops kube-apiserver (etcd keeps the state), to test how
// clients ride out an outage.
func (e *Env) StopAPIServer() error { return e.stopProc("kube-apiserver") }

// StartAPIServer starts kube-apiserver again on the same port after
// StopAPIServer and waits until it is ready.
func (e *Env) StartAPIServer(ctx context.Context) error { return e.runAPIServer(ctx) }

// Stop stops every process and removes the directory the Env made.
func (e *Env) Stop() error {
	e.mu.Lock()
	e.stopping = true
	e.mu.Unlock()
	var errs []error
	for _, name := range []string{"kube-controller-manager", "kube-apiserver", "etcd"} {
		if err := e.stopProc(name); err != nil {
			errs = append(errs, err)
		}
	}
	if e.ownDir && e.Dir != "" {
		if err := os.RemoveAll(e.Dir); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

func (e *Env) spawn(name string, args []string) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.spawnLocked(name, args)
}

// spawnLocked starts the named binary with args, its output appended to
// its log in e.Dir, and reaps it when it ends (reap). e.mu is held.
func (e *Env) spawnLocked(name string, args []string) error {
	logFile, err := os.OpenFile(filepath.Join(e.Dir, name+".log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	cmd := exec.Command(filepath.Join(e.BinDir, name), args...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	// Kill the child when the test process dies, so a crashed or timed-out
	// test run leaves no control plane behind.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
	if err := cmd.Start(); err != nil {
		logFile.Close()
		return fmt.Errorf("testenv: start %s: %w", name, err)
	}
	done := make(chan struct{})
	e.procs[name] = cmd
	e.done[name] = done
	e.args[name] = args
	go e.reap(name, cmd, logFile, done)
	return nil
}

func (e *Env) stopProc(name string) error {
	e.mu.Lock()
	cmd := e.procs[name]
	delete(e.procs, name)
	e.mu.Unlock()
	if cmd == nil || cmd.Process == nil {
		return nil
	}
	_ = cmd.Process.Signal(syscall.SIGTERM)
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if err := cmd.Process.Signal(syscall.Signal(0)); err != nil {
			return nil
		}
		time.Sleep(50 * time.Millisecond)
	}
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	return nil
}

// logTail returns a func printing the end of a process's log, for errors.
func (e *Env) logTail(name string) func() string {
	return func() string {
		data, err := os.ReadFile(filepath.Join(e.Dir, name+".log"))
		if err != nil {
			return ""
		}
		return tail(string(data))
	}
}

// tail returns the last 20 lines of a log.
func tail(log string) string {
	lines := strings.Split(strings.TrimSpace(log), "\n")
	if len(lines) > 20 {
		lines = lines[len(lines)-20:]
	}
	return strings.Join(lines, "\n")
}

func waitHTTP(ctx context.Context, client *http.Client, url string, hdr http.Header, timeout time.Duration, tail func() string) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var last string
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		for k, v := range hdr {
			req.Header[k] = v
		}
		resp, err := client.Do(req)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			last = resp.Status
		} else {
			last = err.Error()
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("testenv: %s not ready after %s (last: %s); log tail:\n%s", url, timeout, last, tail())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func freePorts(n int) ([]int, error) {
	ports := make([]int, 0, n)
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

func randomToken() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
