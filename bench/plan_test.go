package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/fluxcd/pkg/ssa"
	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"syncd.dev/syncd/bench/internal/syncdrun"
)

// planChanged is how many objects the "pull request" of the first plan
// scenario touches.
const planChanged = 10

// planReport is the part of `syncd plan -o json` the benchmark checks.
type planReport struct {
	Summary struct {
		Create, Update, Unchanged, NotDryRun, Errors int
	} `json:"summary"`
}

// changeObjects returns a copy of objs with the objects at the indices in
// changed given a new value (a ConfigMap's payload, a Deployment's image,
// a Service's port).
func changeObjects(objs []*unstructured.Unstructured, changed func(i int) bool) []*unstructured.Unstructured {
	out := make([]*unstructured.Unstructured, len(objs))
	for i, o := range objs {
		out[i] = o
		if !changed(i) {
			continue
		}
		c := o.DeepCopy()
		switch c.GetKind() {
		case "ConfigMap":
			_ = unstructured.SetNestedField(c.Object, "changed", "data", "payload")
		case "Deployment":
			containers, _, _ := unstructured.NestedSlice(c.Object, "spec", "template", "spec", "containers")
			containers[0].(map[string]any)["image"] = "registry.example/app:2.0"
			_ = unstructured.SetNestedSlice(c.Object, containers, "spec", "template", "spec", "containers")
		case "Service":
			ports, _, _ := unstructured.NestedSlice(c.Object, "spec", "ports")
			ports[0].(map[string]any)["targetPort"] = int64(9090)
			_ = unstructured.SetNestedSlice(c.Object, ports, "spec", "ports")
		}
		out[i] = c
	}
	return out
}

// writeManifests writes objs as one multi-document YAML file (JSON
// documents) in a new directory.
func writeManifests(b *testing.B, objs []*unstructured.Unstructured) string {
	dir := b.TempDir()
	var buf bytes.Buffer
	for _, o := range objs {
		j, err := json.Marshal(o.Object)
		if err != nil {
			b.Fatal(err)
		}
		buf.WriteString("---\n")
		buf.Write(j)
		buf.WriteString("\n")
	}
	if err := os.WriteFile(filepath.Join(dir, "objects.yaml"), buf.Bytes(), 0o600); err != nil {
		b.Fatal(err)
	}
	return dir
}

// syncdCLI runs the syncd binary against the control plane.
type syncdCLI struct {
	bin, config, ns string
}

func (s *syncdCLI) run(ctx context.Context, args ...string) (string, int, error) {
	out, code, _, err := s.runCPU(ctx, args...)
	return out, code, err
}

// runCPU is run that also returns the CPU time (user and system) the
// syncd process used: less noisy than wall time on a shared machine.
func (s *syncdCLI) runCPU(ctx context.Context, args ...string) (string, int, time.Duration, error) {
	args = append(args, "--config", s.config, "--app", "bench", "--kubeconfig", env.Kubeconfig,
		"--inventory-namespace", s.ns, "--concurrency", fmt.Sprint(concurrency), "--kube-qps", "-1")
	cmd := exec.CommandContext(ctx, s.bin, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var cpu time.Duration
	if ps := cmd.ProcessState; ps != nil {
		cpu = ps.UserTime() + ps.SystemTime()
	}
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		return stdout.String(), exit.ExitCode(), cpu, nil
	}
	if err != nil {
		return "", 0, 0, fmt.Errorf("%s: %w: %s", s.bin, err, stderr.String())
	}
	return stdout.String(), 0, cpu, nil
}

// selfCPU returns the CPU time (user and system) this process used so
// far.
func selfCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// plan times `syncd plan -o json` of dir, counts its requests with the
// API server's apiserver_request_total (nothing else talks to it) and
// returns its CPU time.
func (s *syncdCLI) plan(b *testing.B, dir string) (result, planReport, time.Duration) {
	before, err := serverRequests()
	if err != nil {
		b.Fatal(err)
	}
	start := time.Now()
	out, code, cpu, err := s.runCPU(context.Background(), "plan", "--path", dir, "-o", "json")
	d := time.Since(start)
	if err != nil {
		b.Fatal(err)
	}
	after, err := serverRequests()
	if err != nil {
		b.Fatal(err)
	}
	var rep planReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		b.Fatalf("syncd plan: exit %d, output is not the JSON report: %v\n%.2000s", code, err, out)
	}
	if code != 2 {
		b.Fatalf("syncd plan: exit %d, want 2 (changes)", code)
	}
	return result{d: d, reqs: after - before - 1}, rep, cpu // less the first /metrics scrape
}

// fluxDiff dry-runs every object one at a time the way `flux diff` does:
// Flux's ssa.ResourceManager.Diff, a GET and a dry-run apply per object.
func fluxDiff(b *testing.B, objs []*unstructured.Unstructured) result {
	var c counter
	cl, err := client.New(restConfig(&c), client.Options{})
	if err != nil {
		b.Fatal(err)
	}
	rm := ssa.NewResourceManager(cl, nil, ssa.Owner{Field: "syncd-bench", Group: "bench.syncd.dev"})
	start := time.Now()
	for _, o := range objs {
		if _, _, _, err := rm.Diff(context.Background(), o.DeepCopy(), ssa.DefaultDiffOptions()); err != nil {
			b.Fatalf("flux diff %s: %v", o.GetName(), err)
		}
	}
	return result{d: time.Since(start), reqs: c.n.Load()}
}

// rawDryRun sends one forced dry-run SSA PATCH per object at the given
// concurrency: no reads, no diff. The ceiling. It also returns the CPU
// time the benchmark process spent meanwhile (nothing else runs in it).
func rawDryRun(b *testing.B, objs []*unstructured.Unstructured, conc int) (result, time.Duration) {
	t := newRaw(b, "").(*rawTool)
	cpu0 := selfCPU(b)
	start := time.Now()
	g, gctx := errgroup.WithContext(context.Background())
	g.SetLimit(conc)
	opts := metav1.PatchOptions{FieldManager: "syncd-bench", Force: ptr(true), DryRun: []string{metav1.DryRunAll}}
	for _, o := range objs {
		g.Go(func() error { return t.apply(gctx, o, opts) })
	}
	if err := g.Wait(); err != nil {
		b.Fatal(err)
	}
	return result{d: time.Since(start), reqs: t.requests()}, selfCPU(b) - cpu0
}

// BenchmarkPlan previews pull requests of an app of 2,000 objects syncd
// applied: one touching 10 objects, compared with a serial per-object
// dry-run of every object (flux diff's way), and one changing all 2,000,
// compared with a raw concurrent dry-run client at the same concurrency.
// syncd plan runs as the real binary (render from files and discovery
// included), with client rate limiting off like the other Go clients.
func BenchmarkPlan(b *testing.B) {
	if b.N > 1 {
		b.Skip("runs once; use -benchtime 1x")
	}
	ctx := context.Background()
	ns := "bench-plan"
	cs := kubernetes.NewForConfigOrDie(env.Config)
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		b.Fatal(err)
	}
	dir := b.TempDir()
	bin := filepath.Join(dir, "syncd")
	build := exec.Command("go", "build", "-o", dir+"/", "./cmd/syncd", "./cmd/syncd-render")
	build.Dir = ".."
	if out, err := build.CombinedOutput(); err != nil {
		b.Fatalf("build syncd: %v\n%s", err, out)
	}
	cfg := filepath.Join(dir, "syncd.yaml")
	if err := os.WriteFile(cfg, []byte(fmt.Sprintf(`apiVersion: syncd/v1alpha1
kind: Config
sources:
- name: repo
  git: {url: "file://%s", branch: main, interval: 1m}
apps:
- name: bench
  source: repo
  namespace: %s
`, dir, ns)), 0o600); err != nil {
		b.Fatal(err)
	}
	s := &syncdCLI{bin: bin, config: cfg, ns: ns}

	all := syncdrun.Objects(ns, objects)
	if out, code, err := s.run(ctx, "apply", "--path", writeManifests(b, all)); err != nil || code != 0 {
		b.Fatalf("syncd apply: exit %d, %v\n%s", code, err, out)
	}
	step := objects / planChanged
	few := changeObjects(all, func(i int) bool { return i%step == step/2 })
	every := changeObjects(all, func(int) bool { return true })

	planFew, repFew, _ := s.plan(b, writeManifests(b, few))
	if repFew.Summary.Update != planChanged || repFew.Summary.Unchanged != objects-planChanged || repFew.Summary.Errors != 0 {
		b.Errorf("plan of %d changes: summary %+v", planChanged, repFew.Summary)
	}
	flux := fluxDiff(b, few)
	// The raw client runs before and after the plan and the ratio uses
	// the mean: the machine's load drifts during the benchmark.
	everyDir := writeManifests(b, every)
	raw1, rawCPU1 := rawDryRun(b, every, concurrency)
	planAll, repAll, planCPU := s.plan(b, everyDir)
	if repAll.Summary.Update != objects || repAll.Summary.NotDryRun != 0 || repAll.Summary.Errors != 0 {
		b.Errorf("plan of %d changes: summary %+v", objects, repAll.Summary)
	}
	raw2, rawCPU2 := rawDryRun(b, every, concurrency)
	raw := result{d: (raw1.d + raw2.d) / 2, reqs: raw1.reqs}
	rawCPU := (rawCPU1 + rawCPU2) / 2

	fewRatio := flux.d.Seconds() / planFew.d.Seconds()
	allRatio := planAll.d.Seconds() / raw.d.Seconds()
	b.ReportMetric(planFew.d.Seconds(), "plan_10_changed_s")
	b.ReportMetric(float64(planFew.reqs), "plan_10_changed_req")
	b.ReportMetric(flux.d.Seconds(), "serial_dryrun_s")
	b.ReportMetric(fewRatio, "serial/plan_x")
	b.ReportMetric(planAll.d.Seconds(), "plan_all_changed_s")
	b.ReportMetric(raw.d.Seconds(), "raw_dryrun_s")
	b.ReportMetric(allRatio, "plan/raw_x")
	b.ReportMetric(planCPU.Seconds(), "plan_all_changed_cpu_s")
	b.ReportMetric(rawCPU.Seconds(), "raw_dryrun_cpu_s")

	var sb strings.Builder
	fmt.Fprintf(&sb, "\nsyncd plan of an app of %d objects (70%% ConfigMaps, 20%% Deployments, 10%% Services), concurrency %d\n", objects, concurrency)
	fmt.Fprintf(&sb, "%-16s | %-20s | %-34s | %s\n", "pull request", "syncd plan", "baseline", "ratio")
	fmt.Fprintf(&sb, "%-16s | %6.2fs %6d req | %6.2fs %6d req serial dry-run | %.1fx faster (target >= 10x)\n",
		fmt.Sprintf("%d changed", planChanged), planFew.d.Seconds(), planFew.reqs, flux.d.Seconds(), flux.reqs, fewRatio)
	fmt.Fprintf(&sb, "%-16s | %6.2fs %6d req | %6.2fs %6d req raw dry-run x%-2d | %.2fx raw's time (target <= 1.25x)\n",
		fmt.Sprintf("all %d changed", objects), planAll.d.Seconds(), planAll.reqs, raw.d.Seconds(), raw.reqs, concurrency, allRatio)
	fmt.Fprintf(&sb, "(raw dry-run: %.2fs before the plan, %.2fs after)\n", raw1.d.Seconds(), raw2.d.Seconds())
	fmt.Fprintf(&sb, "client CPU, all %d changed: syncd plan %.2fs (render, discovery and report included), raw dry-run %.2fs (%.2fs / %.2fs)\n",
		objects, planCPU.Seconds(), rawCPU.Seconds(), rawCPU1.Seconds(), rawCPU2.Seconds())
	b.Log(sb.String())
	fmt.Print(sb.String())
	if planFew.reqs > 50 {
		b.Errorf("plan of %d changes sent %d requests, want at most 50", planChanged, planFew.reqs)
	}
}
