package install

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"syncd.dev/syncd/internal/config"
)

// appOnlyOverlay is the overlay docs/install.md tells an App-only install
// to write: manifests/ with the Component manifests/components/app-only.
const appOnlyOverlay = "test/install/testdata/app-only"

// configMapObject is the ConfigMap of syncd.yaml, which an App-only
// install does not have.
const configMapObject = "ConfigMap syncd-system/syncd-config"

// TestBaseDryRun renders manifests/, and the App-only overlay of it, and
// sends every object to the API server with a server-side dry-run apply:
// all must be accepted.
func TestBaseDryRun(t *testing.T) {
	base := []string{
		"ClusterRole syncd-apps",
		"ClusterRole syncd-apps-edit",
		"ClusterRole syncd-apps-view",
		"ClusterRole syncd-manager",
		"ClusterRole syncd-manager-default",
		"ClusterRole syncd-metrics-auth",
		"ClusterRole syncd-metrics-reader",
		"ClusterRole syncd-own-namespace",
		"ClusterRole syncd-source-secrets",
		"ClusterRoleBinding syncd-apps",
		"ClusterRoleBinding syncd-manager",
		"ClusterRoleBinding syncd-metrics-auth",
		"ClusterRoleBinding syncd-own-namespace",
		configMapObject,
		"CustomResourceDefinition alertproviders.syncd.dev",
		"CustomResourceDefinition alerts.syncd.dev",
		"CustomResourceDefinition apps.syncd.dev",
		"CustomResourceDefinition gitsources.syncd.dev",
		"CustomResourceDefinition helmsources.syncd.dev",
		"CustomResourceDefinition ocisources.syncd.dev",
		"Deployment syncd-system/syncd",
		"Namespace syncd-system",
		"NetworkPolicy syncd-system/syncd",
		"PodDisruptionBudget syncd-system/syncd",
		"Role syncd-system/syncd",
		"RoleBinding syncd-system/syncd",
		"Service syncd-system/syncd",
		"Service syncd-system/syncd-webhook",
		"ServiceAccount syncd-system/syncd",
	}
	tests := map[string]struct {
		dir  string
		want []string
	}{
		"base":     {dir: "manifests", want: base},
		"app-only": {dir: appOnlyOverlay, want: slices.DeleteFunc(slices.Clone(base), func(o string) bool { return o == configMapObject })},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			objs := kustomizeBuild(t, tc.dir)
			var got []string
			for _, o := range objs {
				got = append(got, describe(o))
			}
			sort.Strings(got)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("objects of %s (-want +got):\n%s", tc.dir, diff)
			}
			dryRunAll(t, objs)
		})
	}
}

// dryRunAll sends objs to the API server with a server-side dry-run
// apply. The Namespace first, for real: a dry-run cannot create it, so
// the namespaced objects are dry-run against the real one.
func dryRunAll(t *testing.T, objs []*unstructured.Unstructured) {
	t.Helper()
	ctx := context.Background()
	c := newCluster(t, env.Config)
	for _, o := range objs {
		if o.GetKind() == "Namespace" {
			if _, err := c.apply(ctx, o, "install-test", true); err != nil {
				t.Fatalf("dry-run %s: %v", describe(o), err)
			}
			if _, err := c.apply(ctx, o, "install-test", false); err != nil {
				t.Fatalf("create %s: %v", describe(o), err)
			}
		}
	}
	for _, o := range objs {
		if _, err := c.apply(ctx, o, "install-test", true); err != nil {
			t.Errorf("dry-run %s: %v", describe(o), err)
		}
	}
}

// TestCIDryRun renders manifests/ci/ and dry-runs it the same way.
func TestCIDryRun(t *testing.T) {
	installBase(t)
	objs := kustomizeBuild(t, "manifests/ci")
	ctx := context.Background()
	c := newCluster(t, env.Config)
	ensureNamespace(t, "web")
	for _, o := range objs {
		if _, err := c.apply(ctx, o, "install-test", true); err != nil {
			t.Errorf("dry-run %s: %v", describe(o), err)
		}
	}
}

func ensureNamespace(t *testing.T, name string) {
	t.Helper()
	ns := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": name},
	}}
	if _, err := newCluster(t, env.Config).apply(context.Background(), ns, "install-test", false); err != nil {
		t.Fatalf("namespace %s: %v", name, err)
	}
}

func findObject(t *testing.T, objs []*unstructured.Unstructured, kind, name string) *unstructured.Unstructured {
	t.Helper()
	for _, o := range objs {
		if o.GetKind() == kind && o.GetName() == name {
			return o
		}
	}
	t.Fatalf("no %s %s in the render", kind, name)
	return nil
}

func syncdDeployment(t *testing.T, objs []*unstructured.Unstructured) *appsv1.Deployment {
	t.Helper()
	var d appsv1.Deployment
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(findObject(t, objs, "Deployment", "syncd").Object, &d); err != nil {
		t.Fatal(err)
	}
	return &d
}

// TestDeploymentShape checks the Deployment's settings that the install
// depends on and the API server would accept without them.
func TestDeploymentShape(t *testing.T) {
	objs := kustomizeBuild(t, "manifests")
	d := syncdDeployment(t, objs)
	pod := d.Spec.Template.Spec
	if len(pod.Containers) != 1 {
		t.Fatalf("containers: got %d, want 1", len(pod.Containers))
	}
	ctr := pod.Containers[0]
	flag := func(name string) (string, bool) {
		for _, a := range ctr.Args {
			if a == "--"+name {
				return "", true
			}
			if v, ok := strings.CutPrefix(a, "--"+name+"="); ok {
				return v, true
			}
		}
		return "", false
	}
	mountOf := func(volume string) string {
		for _, m := range ctr.VolumeMounts {
			if m.Name == volume {
				return m.MountPath
			}
		}
		return ""
	}
	volume := func(name string) corev1.Volume {
		for _, v := range pod.Volumes {
			if v.Name == name {
				return v
			}
		}
		t.Fatalf("no volume %q", name)
		return corev1.Volume{}
	}

	if d.Spec.Replicas == nil || *d.Spec.Replicas != 2 {
		t.Errorf("replicas: got %v, want 2", d.Spec.Replicas)
	}
	// A warm standby is Ready, so a rolling update never drops below the
	// two replicas: one new pod at a time, then one old pod stops.
	if st := d.Spec.Strategy; st.Type != appsv1.RollingUpdateDeploymentStrategyType || st.RollingUpdate == nil ||
		st.RollingUpdate.MaxUnavailable == nil || st.RollingUpdate.MaxUnavailable.IntValue() != 0 ||
		st.RollingUpdate.MaxSurge == nil || st.RollingUpdate.MaxSurge.IntValue() != 1 {
		t.Errorf("strategy: got %+v, want RollingUpdate with maxUnavailable 0 and maxSurge 1", st)
	}
	if pod.ServiceAccountName != "syncd" {
		t.Errorf("serviceAccountName: got %q, want syncd", pod.ServiceAccountName)
	}
	if len(ctr.Args) == 0 || ctr.Args[0] != "run" {
		t.Errorf("args: got %q, want the run command first", ctr.Args)
	}
	if _, ok := flag("leader-elect"); !ok {
		t.Errorf("args %q: no --leader-elect", ctr.Args)
	}
	if v, _ := flag("listen"); v != ":8080" {
		t.Errorf("--listen: got %q, want :8080 (the probes' and Service syncd's port)", v)
	}
	if v, _ := flag("webhook-listen"); v != ":9292" {
		t.Errorf("--webhook-listen: got %q, want :9292 (Service syncd-webhook's port)", v)
	}
	if _, ok := flag("secure-status"); !ok {
		t.Errorf("args %q: no --secure-status: /metrics and /status would be open to anyone who reaches the pod", ctr.Args)
	}
	// --cache-dir is the emptyDir "cache".
	if v, _ := flag("cache-dir"); v != "/var/cache/syncd" || mountOf("cache") != v || volume("cache").EmptyDir == nil {
		t.Errorf("--cache-dir %q, cache mount %q, emptyDir %v: want /var/cache/syncd on an emptyDir", v, mountOf("cache"), volume("cache").EmptyDir)
	}
	// --config is syncd.yaml in the mounted ConfigMap, which exists in the
	// render and is a valid config.
	cfgPath, _ := flag("config")
	cfgVol := volume("config")
	if cfgVol.ConfigMap == nil || mountOf("config")+"/syncd.yaml" != cfgPath {
		t.Errorf("--config %q is not syncd.yaml in the ConfigMap volume mounted at %q", cfgPath, mountOf("config"))
	} else {
		cm := findObject(t, objs, "ConfigMap", cfgVol.ConfigMap.Name)
		data, _, _ := unstructured.NestedString(cm.Object, "data", "syncd.yaml")
		if _, err := config.Parse([]byte(data), "manifests/syncd.yaml"); err != nil {
			t.Errorf("ConfigMap %s syncd.yaml: %v", cm.GetName(), err)
		}
	}
	// Secrets are referenced, not shipped.
	for _, o := range objs {
		if o.GetKind() == "Secret" {
			t.Errorf("manifests/ ships Secret %s: Secrets must be created by the installer", o.GetName())
		}
	}
	for vol, secret := range map[string]string{"git-credentials": "syncd-git", "alerts": "syncd-alerts", "webhook": "syncd-webhook"} {
		v := volume(vol)
		if v.Secret == nil || v.Secret.SecretName != secret {
			t.Errorf("volume %s: want Secret %s", vol, secret)
		}
	}
	if v, _ := flag("webhook-secret-file"); !strings.HasPrefix(v, mountOf("webhook")+"/") {
		t.Errorf("--webhook-secret-file %q is not in the webhook Secret's mount %q", v, mountOf("webhook"))
	}
	var podNS string
	for _, e := range ctr.Env {
		if e.Name == "POD_NAMESPACE" && e.ValueFrom != nil && e.ValueFrom.FieldRef != nil {
			podNS = e.ValueFrom.FieldRef.FieldPath
		}
	}
	if podNS != "metadata.namespace" {
		t.Errorf("POD_NAMESPACE: got fieldRef %q, want metadata.namespace", podNS)
	}
	probe := func(p *corev1.Probe) string {
		if p == nil || p.HTTPGet == nil {
			return ""
		}
		return fmt.Sprintf("%s %s %s", p.HTTPGet.Scheme, p.HTTPGet.Path, p.HTTPGet.Port.String())
	}
	// --secure-status serves HTTPS on --listen, so the probes do too.
	if got := probe(ctr.LivenessProbe); got != "HTTPS /healthz http" {
		t.Errorf("livenessProbe: got %q, want HTTPS /healthz on port http", got)
	}
	if got := probe(ctr.ReadinessProbe); got != "HTTPS /readyz http" {
		t.Errorf("readinessProbe: got %q, want HTTPS /readyz on port http", got)
	}
	ports := map[string]int32{}
	for _, p := range ctr.Ports {
		ports[p.Name] = p.ContainerPort
	}
	if diff := cmp.Diff(map[string]int32{"http": 8080, "webhook": 9292}, ports); diff != "" {
		t.Errorf("container ports (-want +got):\n%s", diff)
	}
	if ctr.Resources.Requests.Cpu().IsZero() || ctr.Resources.Requests.Memory().IsZero() || ctr.Resources.Limits.Memory().IsZero() {
		t.Errorf("resources: got %+v, want cpu and memory requests and a memory limit", ctr.Resources)
	}
	sc := ctr.SecurityContext
	if sc == nil || sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem {
		t.Errorf("readOnlyRootFilesystem is not true")
	}
	if len(pod.TopologySpreadConstraints) == 0 {
		t.Errorf("no topologySpreadConstraints")
	}
	// The Services and the PDB select the Deployment's pods; each Service
	// exposes one listener: syncd the status one, syncd-webhook the
	// webhook one, so an Ingress to syncd-webhook cannot reach /status.
	for name, want := range map[string]string{"syncd": "http", "syncd-webhook": "webhook"} {
		var svc corev1.Service
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(findObject(t, objs, "Service", name).Object, &svc); err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, p := range svc.Spec.Ports {
			got = append(got, p.TargetPort.String())
		}
		if diff := cmp.Diff([]string{want}, got); diff != "" {
			t.Errorf("Service %s target ports (-want +got):\n%s", name, diff)
		}
	}
	podLabels := d.Spec.Template.Labels
	for _, ref := range [][2]string{{"Service", "syncd"}, {"Service", "syncd-webhook"}, {"PodDisruptionBudget", "syncd"}} {
		kind := ref[0]
		o := findObject(t, objs, kind, ref[1])
		sel, _, _ := unstructured.NestedStringMap(o.Object, "spec", "selector")
		if kind == "PodDisruptionBudget" {
			sel, _, _ = unstructured.NestedStringMap(o.Object, "spec", "selector", "matchLabels")
		}
		if len(sel) == 0 {
			t.Errorf("%s %s: empty selector", kind, ref[1])
		}
		for k, v := range sel {
			if podLabels[k] != v {
				t.Errorf("%s %s: selector %s=%s does not match the pod labels %v", kind, ref[1], k, v, podLabels)
			}
		}
	}
}

// TestAppOnlyDeployment: the App-only overlay's Deployment is the base's
// without --config, the ConfigMap volume and its mount; nothing else
// differs, and nothing of the render names the ConfigMap any more.
func TestAppOnlyDeployment(t *testing.T) {
	want := syncdDeployment(t, kustomizeBuild(t, "manifests"))
	pod := &want.Spec.Template.Spec
	ctr := &pod.Containers[0]
	ctr.Args = slices.DeleteFunc(ctr.Args, func(a string) bool { return strings.HasPrefix(a, "--config=") })
	ctr.VolumeMounts = slices.DeleteFunc(ctr.VolumeMounts, func(m corev1.VolumeMount) bool { return m.Name == "config" })
	pod.Volumes = slices.DeleteFunc(pod.Volumes, func(v corev1.Volume) bool { return v.Name == "config" })

	objs := kustomizeBuild(t, appOnlyOverlay)
	if diff := cmp.Diff(want, syncdDeployment(t, objs)); diff != "" {
		t.Errorf("Deployment of %s, against the base's without the config file (-want +got):\n%s", appOnlyOverlay, diff)
	}
	for _, o := range objs {
		data, err := o.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(data), "syncd-config") || strings.Contains(string(data), "--config") {
			t.Errorf("%s of %s still names the config file or its ConfigMap", describe(o), appOnlyOverlay)
		}
	}
}

// TestPodPassesRestricted creates (dry-run) a Pod from the Deployment's
// template in syncd-system, whose namespace enforces the restricted Pod
// Security profile: the API server's PodSecurity admission refuses it if
// runAsNonRoot, capabilities, privilege escalation or seccomp are wrong.
func TestPodPassesRestricted(t *testing.T) {
	objs := installBase(t)
	d := syncdDeployment(t, objs)
	cs := env.Clientset(t)
	ctx := context.Background()
	ns, err := cs.CoreV1().Namespaces().Get(ctx, "syncd-system", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := ns.Labels["pod-security.kubernetes.io/enforce"]; got != "restricted" {
		t.Fatalf("namespace syncd-system enforces %q, want restricted", got)
	}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "syncd-restricted-check", Namespace: "syncd-system", Labels: d.Spec.Template.Labels},
		Spec:       d.Spec.Template.Spec,
	}
	if _, err := cs.CoreV1().Pods("syncd-system").Create(ctx, pod, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}); err != nil {
		t.Errorf("the Deployment's pod is refused in syncd-system: %v", err)
	}

	// The check can fail: the same pod with privilege escalation allowed
	// is refused.
	bad := pod.DeepCopy()
	yes := true
	bad.Spec.Containers[0].SecurityContext.AllowPrivilegeEscalation = &yes
	_, err = cs.CoreV1().Pods("syncd-system").Create(ctx, bad, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
	if err == nil || !strings.Contains(err.Error(), "restricted") {
		t.Errorf("a pod allowing privilege escalation: got %v, want a PodSecurity refusal", err)
	}
}

// TestKubectlApplyK runs the documented install command itself, `kubectl
// apply -k`, with a server-side dry-run: kubectl's own embedded kustomize
// must build both kustomizations and the API server accept the result.
func TestKubectlApplyK(t *testing.T) {
	installBase(t)
	ensureNamespace(t, "web")
	for _, dir := range []string{"manifests", "manifests/ci", appOnlyOverlay} {
		cmd := exec.Command(filepath.Join(env.BinDir, "kubectl"), "--kubeconfig", env.Kubeconfig,
			"apply", "-k", repoPath(dir), "--dry-run=server", "--server-side", "--field-manager=install-test")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Errorf("kubectl apply -k %s --dry-run=server: %v\n%s", dir, err, out)
			continue
		}
		if n := strings.Count(string(out), "(server dry run)"); n != len(kustomizeBuild(t, dir)) {
			t.Errorf("kubectl apply -k %s: %d objects dry-run, want %d:\n%s", dir, n, len(kustomizeBuild(t, dir)), out)
		}
	}
}
