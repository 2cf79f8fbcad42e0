package install

import (
	"bufio"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"crypto/tls"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"syncd.dev/syncd/internal/testenv"
)

// TestSyncdServesAsServiceAccount runs the real binary with the
// Deployment's own arguments (addresses moved to loopback, files to a temp
// dir) as the ServiceAccount syncd-system/syncd: the install turns on
// --secure-status and gives syncd the rights to review tokens, so a token
// bound to syncd-metrics-reader reads /metrics and /status, others are
// refused, health stays open, and the webhook port serves webhooks only.
func TestSyncdServesAsServiceAccount(t *testing.T) {
	objs := installBase(t)
	ctx := context.Background()
	tmp := t.TempDir()
	bin := buildSyncd(t, tmp)
	ns := env.Namespace(t)
	reader, err := env.ServiceAccountConfig(ctx, ns, "prometheus")
	if err != nil {
		t.Fatal(err)
	}
	nosy, err := env.ServiceAccountConfig(ctx, ns, "nosy")
	if err != nil {
		t.Fatal(err)
	}
	bindingName := "syncd-metrics-reader-serve-" + ns
	cs := env.Clientset(t)
	if _, err := cs.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: bindingName},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "syncd-metrics-reader"},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: ns, Name: "prometheus"}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cs.RbacV1().ClusterRoleBindings().Delete(context.Background(), bindingName, metav1.DeleteOptions{})
	})

	const secret = "push-s3cret"
	files := map[string]string{"syncd.yaml": "apiVersion: syncd/v1alpha1\nkind: Config\n", "secret": secret}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(tmp, name), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	loopback := map[string]string{
		"--listen": "127.0.0.1:0", "--webhook-listen": "127.0.0.1:0",
		"--config": filepath.Join(tmp, "syncd.yaml"), "--webhook-secret-file": filepath.Join(tmp, "secret"),
		"--cache-dir": filepath.Join(tmp, "cache"),
	}
	args := localArgs(t, syncdDeployment(t, objs).Spec.Template.Spec.Containers[0].Args, loopback)
	// Its own Lease, so that the Lease test of TestServiceAccountRights
	// never waits for this process.
	args = append(args, "--leader-elect-name", "syncd-serve-test")
	status, webhook := startAsServiceAccount(t, bin, tmp, args)

	// The Deployment's --secure-status serves a self-signed certificate.
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}, Timeout: 20 * time.Second}
	code := func(method, url, token, body string, hdr map[string]string) int {
		t.Helper()
		req, _ := http.NewRequest(method, url, strings.NewReader(body))
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		for k, v := range hdr {
			req.Header.Set(k, v)
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatalf("%s %s: %v", method, url, err)
		}
		defer resp.Body.Close()
		_, _ = io.Copy(io.Discard, resp.Body)
		return resp.StatusCode
	}
	push := `{"repository":{"clone_url":"https://git.example.com/org/none.git"}}`
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte(push))
	signed := map[string]string{"X-Hub-Signature-256": "sha256=" + hex.EncodeToString(m.Sum(nil))}
	s, w := "https://"+status, "http://"+webhook
	got := map[string]int{
		"reader /metrics":           code("GET", s+"/metrics", reader.BearerToken, "", nil),
		"reader /status":            code("GET", s+"/status", reader.BearerToken, "", nil),
		"nosy /status":              code("GET", s+"/status", nosy.BearerToken, "", nil),
		"anonymous /metrics":        code("GET", s+"/metrics", "", "", nil),
		"anonymous /healthz":        code("GET", s+"/healthz", "", "", nil),
		"anonymous /readyz":         code("GET", s+"/readyz", "", "", nil),
		"webhook port /status":      code("GET", w+"/status", reader.BearerToken, "", nil),
		"webhook port signed push":  code("POST", w+"/webhook/github", "", push, signed),
		"status port /webhook push": code("POST", s+"/webhook/github", "", push, signed),
	}
	want := map[string]int{
		"reader /metrics": 200, "reader /status": 200, "nosy /status": 403, "anonymous /metrics": 401,
		"anonymous /healthz": 200, "anonymous /readyz": 200,
		"webhook port /status": 404, "webhook port signed push": 202, "status port /webhook push": 404,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("status codes (-want +got):\n%s", diff)
	}
}

// startAsServiceAccount runs bin with args as the ServiceAccount
// syncd-system/syncd (a kubeconfig of its token, POD_NAMESPACE
// syncd-system, HOME tmp), as the Deployment runs it, and returns the two
// listener addresses once it logged them. Its log is printed when the
// test fails; the process is killed at cleanup.
func startAsServiceAccount(t *testing.T, bin, tmp string, args []string) (status, webhook string) {
	t.Helper()
	saCfg, err := env.ServiceAccountConfig(context.Background(), "syncd-system", "syncd")
	if err != nil {
		t.Fatal(err)
	}
	kubeconfig := filepath.Join(tmp, "kubeconfig")
	if err := testenv.WriteKubeconfig(saCfg, kubeconfig); err != nil {
		t.Fatal(err)
	}
	logPath := filepath.Join(tmp, "syncd.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, append(slices.Clone(args), "--kubeconfig", kubeconfig)...)
	cmd.Env = append(os.Environ(), "POD_NAMESPACE=syncd-system", "HOME="+tmp)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		logFile.Close()
		if t.Failed() {
			data, _ := os.ReadFile(logPath)
			t.Logf("syncd log:\n%s", data)
		}
	})
	waitFor(t, "syncd logs its listeners", func() (bool, error) {
		status, webhook = startedAddrs(logPath)
		return status != "" && webhook != "", nil
	})
	return status, webhook
}

// localArgs returns args with the value of each flag in replace swapped
// (flags given as --name=value); every flag of replace must be present.
func localArgs(t *testing.T, args []string, replace map[string]string) []string {
	t.Helper()
	out := make([]string, 0, len(args))
	seen := map[string]bool{}
	for _, a := range args {
		name, _, hasValue := strings.Cut(a, "=")
		if v, ok := replace[name]; ok && hasValue {
			a = name + "=" + v
			seen[name] = true
		}
		out = append(out, a)
	}
	for name := range replace {
		if !seen[name] {
			t.Fatalf("the Deployment's args %q have no %s=", args, name)
		}
	}
	return out
}

// startedAddrs reads the two listener addresses from the "syncd started"
// log line.
func startedAddrs(logPath string) (status, webhook string) {
	f, err := os.Open(logPath)
	if err != nil {
		return "", ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var line struct {
			Msg           string `json:"msg"`
			Listen        string `json:"listen"`
			WebhookListen string `json:"webhookListen"`
		}
		if json.Unmarshal(sc.Bytes(), &line) == nil && line.Msg == "syncd started" {
			return line.Listen, line.WebhookListen
		}
	}
	return "", ""
}
