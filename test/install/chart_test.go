package install

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
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

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/dynamic"

	"syncd.dev/syncd/internal/api/v1alpha1"
	"syncd.dev/syncd/internal/install"
	"syncd.dev/syncd/internal/testenv"
	"syncd.dev/syncd/internal/testenv/gitserver"
)

// TestChartDryRun renders charts/syncd with the Helm SDK (the chart
// syncd install embeds), with its default values and with each group of
// values that changes which objects exist, and sends every object to the
// API server with a server-side dry-run apply; the Deployment's pod of
// each passes the restricted Pod Security profile of syncd-system.
func TestChartDryRun(t *testing.T) {
	installBase(t) // the ServiceAccount the pods name
	tests := map[string]struct {
		set []string
		// refused: the pod breaks the restricted profile (the check can
		// fail).
		refused bool
	}{
		"defaults":          {},
		"three shards":      {set: []string{"shards=3"}},
		"app-only":          {set: []string{"config.enabled=false"}},
		"existing config":   {set: []string{"config.existingConfigMap=my-syncd-config"}},
		"plain, no webhook": {set: []string{"metrics.secure=false", "webhook.enabled=false", "networkPolicy.enabled=false", "podDisruptionBudget.enabled=false"}},
		"restricted egress": {set: []string{"networkPolicy.restrictedEgress.enabled=true", "networkPolicy.restrictedEgress.remoteClusterCIDRs=null"}},
		"scheduling": {set: []string{
			"nodeSelector.kubernetes\\.io/os=linux", "tolerations[0].key=dedicated", "tolerations[0].operator=Exists",
			"image.digest=sha256:0000000000000000000000000000000000000000000000000000000000000000", "image.pullPolicy=Always",
			"extraArgs={--concurrency=8}", "rbac.managerClusterWide=false",
		}},
		"privilege escalation": {set: []string{"securityContext.allowPrivilegeEscalation=true"}, refused: true},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			objs, err := install.Render(install.RenderOptions{Set: tc.set})
			if err != nil {
				t.Fatal(err)
			}
			dryRunAll(t, objs)
			var deployments []string
			for _, o := range objs {
				if o.GetKind() != "Deployment" {
					continue
				}
				deployments = append(deployments, o.GetName())
				err := createPodDryRun(t, o)
				switch {
				case tc.refused && (err == nil || !strings.Contains(err.Error(), "restricted")):
					t.Errorf("the pod of Deployment %s: got %v, want a PodSecurity refusal", o.GetName(), err)
				case !tc.refused && err != nil:
					t.Errorf("the pod of Deployment %s is refused in syncd-system: %v", o.GetName(), err)
				}
			}
			want := []string{"syncd"}
			if slices.Contains(tc.set, "shards=3") {
				want = []string{"syncd-shard-0", "syncd-shard-1", "syncd-shard-2"}
			}
			if !slices.Equal(deployments, want) {
				t.Errorf("Deployments %q, want %q", deployments, want)
			}
		})
	}
}

// createPodDryRun creates (dry-run) a Pod of the Deployment u's template
// in syncd-system, which enforces the restricted profile.
func createPodDryRun(t *testing.T, u *unstructured.Unstructured) error {
	t.Helper()
	var d appsv1.Deployment
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &d); err != nil {
		t.Fatal(err)
	}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: d.Name + "-restricted-check", Namespace: "syncd-system", Labels: d.Spec.Template.Labels},
		Spec:       d.Spec.Template.Spec,
	}
	_, err := env.Clientset(t).CoreV1().Pods("syncd-system").Create(context.Background(), pod, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
	return err
}

// TestInstallJourney installs syncd the documented way, through the built
// binary, into a control plane of its own (the other tests install
// manifests/ into theirs, CRDs included): syncd check fails before the
// install and names the CRDs; syncd install --dry-run prints objects that
// apply cleanly; syncd install after them writes nothing; syncd run, with
// the chart's Deployment arguments and as the chart's ServiceAccount,
// reconciles an App of a GitSource to Ready; syncd check then passes, as
// the admin and as syncd, and fails on a source that does not answer.
func TestInstallJourney(t *testing.T) {
	cp := testenv.StartT(t, testenv.Options{ControllerManager: true, Controllers: []string{"clusterrole-aggregation-controller"}})
	tmp := t.TempDir()
	bin := buildSyncd(t, tmp)
	syncd := func(args ...string) (string, int) {
		t.Helper()
		return runSyncd(t, bin, append(args, "--kubeconfig", cp.Kubeconfig)...)
	}

	out, code := syncd("check")
	t.Logf("syncd check before the install:\n%s", out)
	wantLines(t, out, "FAIL  CRD apps.syncd.dev: not installed", "FAIL  CRD gitsources.syncd.dev: not installed",
		"PASS  API server: Kubernetes v1.", "SKIP  Deployment syncd-system/syncd: not installed",
		"FAIL  Namespace syncd-system: does not exist: pass -n with the namespace syncd is installed in")
	if code != 1 {
		t.Errorf("syncd check before the install: exit %d, want 1", code)
	}
	if out, code := syncd("check", "--pre"); code != 0 || !strings.Contains(out, "PASS  RBAC to install: create, patch customresourcedefinitions: allowed") {
		t.Errorf("syncd check --pre as the admin: exit %d, want 0 and the install rights:\n%s", code, out)
	}

	// The printed objects apply cleanly, as kubectl applies a file.
	out, code = syncd("install", "--dry-run")
	if code != 0 {
		t.Fatalf("syncd install --dry-run: exit %d\n%s", code, out)
	}
	file := filepath.Join(tmp, "syncd.yaml")
	if err := os.WriteFile(file, []byte(out), 0o600); err != nil {
		t.Fatal(err)
	}
	kubectl := exec.Command(filepath.Join(cp.BinDir, "kubectl"), "--kubeconfig", cp.Kubeconfig, "apply", "--server-side", "--field-manager", install.FieldManager, "-f", file)
	if b, err := kubectl.CombinedOutput(); err != nil {
		t.Fatalf("kubectl apply --server-side -f (syncd install --dry-run): %v\n%s", err, b)
	}

	// syncd install applies the same objects: nothing is written.
	out, code = syncd("install", "--wait=false")
	if code != 0 {
		t.Fatalf("syncd install: exit %d\n%s", code, out)
	}
	objs, err := install.Render(install.RenderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != len(objs) {
		t.Errorf("syncd install printed %d lines, want one per object (%d):\n%s", len(lines), len(objs), out)
	}
	for _, l := range lines {
		if !strings.HasSuffix(l, " unchanged") {
			t.Errorf("syncd install after applying its --dry-run output: %q, want unchanged", l)
		}
	}

	// The chart's syncd, as its ServiceAccount, reconciles an App.
	repo := gitserver.StartTest(t).NewTestRepo(t, "apps")
	sha, err := repo.Commit("first", map[string][]byte{
		"web/cm.yaml": []byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: web\ndata:\n  value: \"1\"\n"),
	})
	if err != nil {
		t.Fatal(err)
	}
	runChartSyncd(t, cp, bin, tmp, objs)
	ns := "team-a"
	applyAsAdmin(t, cp,
		`{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"team-a"}}`,
		fmt.Sprintf(`{"apiVersion":"syncd.dev/v1alpha1","kind":"GitSource","metadata":{"name":"repo","namespace":%q},"spec":{"url":%q,"branch":"main","interval":"1h"}}`, ns, repo.URL),
		fmt.Sprintf(`{"apiVersion":"syncd.dev/v1alpha1","kind":"App","metadata":{"name":"web","namespace":%q},"spec":{"sourceRef":{"kind":"GitSource","name":"repo"},"path":"web"}}`, ns),
	)
	waitAppReady(t, cp, ns, "web", sha)

	// The Deployment rolls out once its pods are Ready; no kubelet runs
	// here, so until its status is written as the deployment controller
	// would, install waits in vain and says so.
	if out, code := syncd("install", "--timeout=3s"); code != 1 || !strings.Contains(out, "Deployment syncd-system/syncd not rolled out after 3s") {
		t.Errorf("syncd install with no pods: exit %d, want 1 and the Deployment not rolled out:\n%s", code, out)
	}
	markRolledOut(t, cp, "syncd-system", "syncd")
	if out, code := syncd("install", "--timeout=30s"); code != 0 || !strings.Contains(out, "Deployment syncd-system/syncd rolled out") {
		t.Errorf("syncd install (waiting): exit %d, want 0 and the rollout:\n%s", code, out)
	}

	for _, as := range []string{"", "system:serviceaccount:syncd-system:syncd"} {
		args := []string{"check"}
		if as != "" {
			args = append(args, "--as", as)
		}
		out, code = syncd(args...)
		t.Logf("syncd %s:\n%s", strings.Join(args, " "), out)
		if code != 0 || strings.Contains(out, "FAIL") {
			t.Errorf("syncd %s after the install: exit %d, want 0 and no FAIL", strings.Join(args, " "), code)
		}
		wantLines(t, out, "PASS  Deployment syncd-system/syncd: available",
			"PASS  RBAC syncd needs: Role syncd rule 1", "PASS  GitSource team-a/repo: "+repo.URL)
		if as == "" {
			wantLines(t, out, "PASS  CRD apps.syncd.dev: installed and current", "PASS  Namespace syncd-system: exists")
		}
	}
	// Checked against a namespace syncd is not in, the check fails
	// rather than passing on a SKIPped Deployment.
	out, code = syncd("check", "-n", "syncd-elsewhere")
	if code != 1 {
		t.Errorf("syncd check -n syncd-elsewhere: exit %d, want 1\n%s", code, out)
	}
	wantLines(t, out, "FAIL  Namespace syncd-elsewhere: does not exist")

	// A source that does not answer fails the check, and says so.
	applyAsAdmin(t, cp, `{"apiVersion":"syncd.dev/v1alpha1","kind":"GitSource","metadata":{"name":"gone","namespace":"team-a"},"spec":{"url":"http://127.0.0.1:1/gone.git","branch":"main","interval":"1h"}}`)
	out, code = syncd("check", "--timeout=5s")
	if code != 1 {
		t.Errorf("syncd check with a dead source: exit %d, want 1\n%s", code, out)
	}
	wantLines(t, out, "FAIL  GitSource team-a/gone: http://127.0.0.1:1/gone.git: ")
}

// runSyncd runs the binary and returns its combined output and exit code.
func runSyncd(t *testing.T, bin string, args ...string) (string, int) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), "HOME="+t.TempDir())
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	switch {
	case err == nil:
		return string(out), 0
	case errors.As(err, &exit):
		return string(out), exit.ExitCode()
	}
	t.Fatalf("syncd %v: %v", args, err)
	return "", 0
}

// wantLines fails t for each prefix no line of out starts with.
func wantLines(t *testing.T, out string, prefixes ...string) {
	t.Helper()
	lines := strings.Split(out, "\n")
	for _, p := range prefixes {
		if !slices.ContainsFunc(lines, func(l string) bool { return strings.HasPrefix(l, p) }) {
			t.Errorf("no line starts with %q in:\n%s", p, out)
		}
	}
}

// runChartSyncd starts `syncd run` with the arguments of the chart's
// Deployment (addresses moved to loopback, files to tmp, the ConfigMap's
// syncd.yaml written there) as the chart's ServiceAccount, and waits
// until it is ready.
func runChartSyncd(t *testing.T, cp *testenv.Env, bin, tmp string, objs []*unstructured.Unstructured) {
	t.Helper()
	var d appsv1.Deployment
	var cfg string
	for _, o := range objs {
		switch {
		case o.GetKind() == "Deployment":
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, &d); err != nil {
				t.Fatal(err)
			}
		case o.GetKind() == "ConfigMap" && o.GetName() == "syncd-config":
			cfg, _, _ = unstructured.NestedString(o.Object, "data", "syncd.yaml")
		}
	}
	files := map[string]string{"syncd.yaml": cfg, "secret": "push-s3cret"}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(tmp, name), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	args := localArgs(t, d.Spec.Template.Spec.Containers[0].Args, map[string]string{
		"--config": filepath.Join(tmp, "syncd.yaml"), "--listen": "127.0.0.1:0", "--webhook-listen": "127.0.0.1:0",
		"--webhook-secret-file": filepath.Join(tmp, "secret"), "--cache-dir": filepath.Join(tmp, "cache"),
	})
	saCfg, err := cp.ServiceAccountConfig(context.Background(), "syncd-system", d.Spec.Template.Spec.ServiceAccountName)
	if err != nil {
		t.Fatal(err)
	}
	kubeconfig := filepath.Join(tmp, "sa-kubeconfig")
	if err := testenv.WriteKubeconfig(saCfg, kubeconfig); err != nil {
		t.Fatal(err)
	}
	logPath := filepath.Join(tmp, "syncd-run.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, append(args, "--kubeconfig", kubeconfig)...)
	cmd.Env = append(os.Environ(), "POD_NAMESPACE=syncd-system", "HOME="+tmp)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		_ = cmd.Wait()
		logFile.Close()
		if t.Failed() {
			data, _ := os.ReadFile(logPath)
			t.Logf("syncd run log:\n%s", data)
		}
	})
	var status string
	waitFor(t, "syncd logs its listeners", func() (bool, error) {
		status, _ = startedAddrs(logPath)
		return status != "", nil
	})
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}, Timeout: 10 * time.Second}
	waitFor(t, "/readyz of the chart's syncd answers ok", func() (bool, error) {
		resp, err := client.Get("https://" + status + "/readyz")
		if err != nil {
			return false, err
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode == http.StatusOK, fmt.Errorf("%d %s", resp.StatusCode, body)
	})
}

// applyAsAdmin creates each JSON object in cp as the admin.
func applyAsAdmin(t *testing.T, cp *testenv.Env, objs ...string) {
	t.Helper()
	c := newCluster(t, cp.Config)
	for _, j := range objs {
		u := &unstructured.Unstructured{}
		if err := u.UnmarshalJSON([]byte(j)); err != nil {
			t.Fatal(err)
		}
		if _, err := c.apply(context.Background(), u, "install-test", false); err != nil {
			t.Fatalf("apply %s: %v", describe(u), err)
		}
	}
}

// waitAppReady waits until the App ns/name is Ready at revision sha.
func waitAppReady(t *testing.T, cp *testenv.Env, ns, name, sha string) {
	t.Helper()
	apps := dynamic.NewForConfigOrDie(cp.Config).Resource(v1alpha1.AppResource).Namespace(ns)
	t.Cleanup(func() {
		_ = apps.Delete(context.Background(), name, metav1.DeleteOptions{})
	})
	waitFor(t, "App "+ns+"/"+name+" Ready at "+sha, func() (bool, error) {
		u, err := apps.Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		rev, _, _ := unstructured.NestedString(u.Object, "status", "lastAppliedRevision")
		conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
		for _, c := range conds {
			if c, ok := c.(map[string]any); ok && c["type"] == string(v1alpha1.ConditionReady) {
				return c["status"] == "True" && rev == sha, fmt.Errorf("Ready %v (%v) at %q", c["status"], c["message"], rev)
			}
		}
		return false, fmt.Errorf("no Ready condition yet")
	})
	if _, err := cp.Clientset(t).CoreV1().ConfigMaps(ns).Get(context.Background(), "web", metav1.GetOptions{}); err != nil {
		t.Errorf("ConfigMap %s/web of the App: %v", ns, err)
	}
}

// markRolledOut writes the status the deployment controller writes once
// every replica of the Deployment ns/name is updated and available.
func markRolledOut(t *testing.T, cp *testenv.Env, ns, name string) {
	t.Helper()
	ctx := context.Background()
	deps := cp.Clientset(t).AppsV1().Deployments(ns)
	d, err := deps.Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	n := *d.Spec.Replicas
	d.Status = appsv1.DeploymentStatus{
		ObservedGeneration: d.Generation, Replicas: n, UpdatedReplicas: n, ReadyReplicas: n, AvailableReplicas: n,
		Conditions: []appsv1.DeploymentCondition{
			{Type: appsv1.DeploymentAvailable, Status: corev1.ConditionTrue, Reason: "MinimumReplicasAvailable"},
			{Type: appsv1.DeploymentProgressing, Status: corev1.ConditionTrue, Reason: "NewReplicaSetAvailable"},
		},
	}
	if _, err := deps.UpdateStatus(ctx, d, metav1.UpdateOptions{}); err != nil && !apierrors.IsConflict(err) {
		t.Fatal(err)
	}
}
