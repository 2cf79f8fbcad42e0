package bench

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// rssFigures reads the "<name> <integer>" lines cmd/rss prints.
func rssFigures(b *testing.B, out []byte) map[string]int64 {
	b.Helper()
	got := map[string]int64{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		var name string
		var v int64
		if _, err := fmt.Sscanf(sc.Text(), "%s %d", &name, &v); err == nil {
			got[name] = v
		}
	}
	if _, ok := got["maxrss_kib"]; !ok {
		b.Fatalf("rss output has no maxrss_kib line:\n%s", out)
	}
	return got
}

// BenchmarkScale syncs one app of 10,000 and one of 50,000 ConfigMaps
// with syncd's pipeline in a separate process each (first sync, no-op,
// then a sync without the last 10 %, which prunes them) and reports the
// time of each sync and the process's peak RSS. BENCH_SCALE_OBJECTS
// ("10000,50000") picks the sizes.
func BenchmarkScale(b *testing.B) {
	if b.N > 1 {
		b.Skip("runs once; use -benchtime 1x")
	}
	bin := filepath.Join(b.TempDir(), "rss")
	if out, err := exec.Command("go", "build", "-o", bin, "./cmd/rss").CombinedOutput(); err != nil {
		b.Fatalf("build: %v\n%s", err, out)
	}
	sizes := "10000,50000"
	if v := os.Getenv("BENCH_SCALE_OBJECTS"); v != "" {
		sizes = v
	}
	cs := kubernetes.NewForConfigOrDie(env.Config)
	var sb strings.Builder
	fmt.Fprintf(&sb, "\n| ConfigMaps in one app | first sync | no-op | prune 10 %% | peak RSS |\n|---:|---:|---:|---:|---:|\n")
	for _, n := range strings.Split(sizes, ",") {
		var objs int
		if _, err := fmt.Sscan(n, &objs); err != nil {
			b.Fatalf("BENCH_SCALE_OBJECTS: %q: %v", n, err)
		}
		ns := fmt.Sprintf("bench-scale-%d", objs)
		if _, err := cs.CoreV1().Namespaces().Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
			b.Fatal(err)
		}
		out, err := exec.Command(bin, "--kubeconfig", env.Kubeconfig, "--namespace", ns, "--n", n, "--configmaps", "--prune", fmt.Sprint(objs/10)).CombinedOutput()
		if err != nil {
			b.Fatalf("rss %d: %v\n%s", objs, err, out)
		}
		f := rssFigures(b, out)
		left, err := cs.CoreV1().ConfigMaps(ns).List(context.Background(), metav1.ListOptions{LabelSelector: "applyset.kubernetes.io/part-of"})
		if err != nil {
			b.Fatal(err)
		}
		if want := objs - objs/10; len(left.Items) != want {
			b.Fatalf("%d objects: %d left after the prune, want %d", objs, len(left.Items), want)
		}
		sec := func(k string) string { return fmt.Sprintf("%.1f s", float64(f[k])/1000) }
		fmt.Fprintf(&sb, "| %d | %s | %s | %s | %.0f MiB |\n", objs, sec("first_sync_ms"), sec("noop_ms"), sec("prune_ms"), float64(f["maxrss_kib"])/1024)
		b.ReportMetric(float64(f["maxrss_kib"])/1024, fmt.Sprintf("peak_RSS_MiB_%d", objs))
		_ = cs.CoreV1().Namespaces().Delete(context.Background(), ns, metav1.DeleteOptions{})
	}
	b.Log(sb.String())
	fmt.Print(sb.String())
}
