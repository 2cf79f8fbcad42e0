package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"
)

// daemon is `syncd run` running as a child process of the demo.
type daemon struct {
	cmd  *exec.Cmd
	log  string
	addr string // --listen: /status, /metrics, health
	// webhookAddr is --webhook-listen: /webhook/*.
	webhookAddr string
	done        chan struct{}
	err         error
}

// startDaemon starts `syncd run` with its log in logFile and waits until
// it serves HTTP, reading the address it listens on from its log.
func startDaemon(ctx context.Context, bin, logFile string, env []string, args ...string) (*daemon, error) {
	f, err := os.Create(logFile)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, append([]string{"run"}, args...)...)
	cmd.Stdout, cmd.Stderr = f, f
	cmd.Env = append(os.Environ(), env...)
	// Its own process group, so Ctrl-C reaches the demo only and the demo
	// stops the daemon first, while the API server still runs; killed with
	// the demo if the demo itself is killed.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		f.Close()
		return nil, fmt.Errorf("start syncd run: %w", err)
	}
	d := &daemon{cmd: cmd, log: logFile, done: make(chan struct{})}
	go func() {
		d.err = cmd.Wait()
		f.Close()
		close(d.done)
	}()
	err = waitFor(ctx, "syncd run to log \"syncd started\" with its address", 30*time.Second, func() (bool, error) {
		select {
		case <-d.done:
			return false, fmt.Errorf("syncd run exited at start (%v)", d.err)
		default:
		}
		d.addr = d.logged("syncd started", "listen")
		d.webhookAddr = d.logged("syncd started", "webhookListen")
		return d.addr != "", nil
	})
	if err != nil {
		_ = d.stop()
		return nil, err
	}
	return d, nil
}

// logged returns the value of key in the first JSON log line whose msg is
// msg, or "".
func (d *daemon) logged(msg, key string) string {
	f, err := os.Open(d.log)
	if err != nil {
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var line map[string]any
		if json.Unmarshal(sc.Bytes(), &line) != nil || line["msg"] != msg {
			continue
		}
		if v, ok := line[key].(string); ok {
			return v
		}
	}
	return ""
}

// applied returns the daemon's "object ..." log lines for revision, as
// "<action> <object> (<manager>)".
func (d *daemon) applied(revision string) []string {
	f, err := os.Open(d.log)
	if err != nil {
		return nil
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var line struct {
			Msg, Revision, Object, Manager string
		}
		if json.Unmarshal(sc.Bytes(), &line) != nil || line.Revision != revision || !strings.HasPrefix(line.Msg, "object ") {
			continue
		}
		out = append(out, fmt.Sprintf("%s %s (%s)", strings.TrimPrefix(line.Msg, "object "), line.Object, line.Manager))
	}
	return out
}

// stop sends SIGTERM (syncd releases its Lease and drains its alert
// queues) and waits; after 15 seconds it kills the process group.
func (d *daemon) stop() error {
	select {
	case <-d.done:
		return d.exitErr()
	default:
	}
	_ = d.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-d.done:
		return d.exitErr()
	case <-time.After(15 * time.Second):
		_ = syscall.Kill(-d.cmd.Process.Pid, syscall.SIGKILL)
		<-d.done
		return errors.New("syncd run did not stop within 15s of SIGTERM; killed")
	}
}

func (d *daemon) exitErr() error {
	if d.err != nil {
		return fmt.Errorf("syncd run: %w", d.err)
	}
	return nil
}

// tail returns the last n lines of the daemon's log.
func (d *daemon) tail(n int) string {
	data, err := os.ReadFile(d.log)
	if err != nil {
		return ""
	}
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// appStatus is one app of the daemon's /status.
type appStatus struct {
	App       string `json:"app"`
	Revision  string `json:"revision"`
	Result    string `json:"result"`
	Error     string `json:"error"`
	Objects   int    `json:"objects"`
	Changed   int    `json:"changed"`
	Conflicts int    `json:"conflicts"`
	Findings  int    `json:"findings"`
}

// status returns the daemon's /status entry for app.
func (d *daemon) status(ctx context.Context, app string) (appStatus, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+d.addr+"/status", nil)
	if err != nil {
		return appStatus{}, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return appStatus{}, fmt.Errorf("GET /status: %w", err)
	}
	defer resp.Body.Close()
	var body struct {
		Apps        []appStatus `json:"apps"`
		ConfigError string      `json:"configError"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		return appStatus{}, fmt.Errorf("GET /status: %w", err)
	}
	if body.ConfigError != "" {
		return appStatus{}, fmt.Errorf("GET /status: the daemon rejected its config: %s", body.ConfigError)
	}
	for _, s := range body.Apps {
		if s.App == app {
			return s, nil
		}
	}
	return appStatus{}, fmt.Errorf("GET /status: no app %q", app)
}

// waitRevision waits until the daemon reports app reconciled at sha.
func (d *daemon) waitRevision(ctx context.Context, app, sha string, timeout time.Duration) (appStatus, error) {
	var last appStatus
	err := waitFor(ctx, fmt.Sprintf("the daemon's /status to show app %s reconciled at %s", app, short(sha)), timeout, func() (bool, error) {
		s, err := d.status(ctx, app)
		if err != nil {
			return false, err
		}
		last = s
		if s.Revision == sha && s.Result != "pending" && s.Result != "ok" {
			return false, fmt.Errorf("app %s at %s: result %s: %s", app, short(sha), s.Result, s.Error)
		}
		return s.Revision == sha && s.Result == "ok", nil
	})
	if err != nil {
		return last, fmt.Errorf("%w (last status: revision %s, result %s, error %q)", err, short(last.Revision), last.Result, last.Error)
	}
	return last, nil
}

// push sends a GitHub push event for repoURL to the daemon's webhook,
// signed with secret, and returns the daemon's answer.
func (d *daemon) push(ctx context.Context, repoURL, sha string, secret []byte) (string, error) {
	body, err := json.Marshal(map[string]any{
		"ref":        "refs/heads/main",
		"after":      sha,
		"repository": map[string]string{"clone_url": repoURL},
	})
	if err != nil {
		return "", err
	}
	mac := hmac.New(sha256.New, secret)
	mac.Write(body)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+d.webhookAddr+"/webhook/github", bytes.NewReader(body))
	if err != nil {
		return "", err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-GitHub-Event", "push")
	req.Header.Set("X-Hub-Signature-256", "sha256="+hex.EncodeToString(mac.Sum(nil)))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", fmt.Errorf("POST /webhook/github: %w", err)
	}
	defer resp.Body.Close()
	answer, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusAccepted {
		return "", fmt.Errorf("POST /webhook/github: %s: %s", resp.Status, strings.TrimSpace(string(answer)))
	}
	return fmt.Sprintf("%s: %s", resp.Status, strings.TrimSpace(string(answer))), nil
}
