// Command rss syncs N objects (the benchmark mix, or only ConfigMaps) with
// syncd's pipeline (first sync, then a no-op, then optionally a sync
// without the last objects, which prunes them) and prints the time of
// each sync and its peak resident set size, for the memory and scale
// benchmarks. The app's drift watcher runs beside the syncs, as in the
// daemon (--drift=false turns it off): after the syncs one ConfigMap is
// edited out of band and the time until the watcher reports it is printed
// (drift_ms).
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"runtime/pprof"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"k8s.io/client-go/tools/clientcmd"

	"syncd.dev/syncd/bench/internal/syncdrun"
	"syncd.dev/syncd/internal/config"
	"syncd.dev/syncd/internal/heapprof"
)

func main() {
	kubeconfig := flag.String("kubeconfig", "", "kubeconfig file")
	ns := flag.String("namespace", "", "namespace (exists)")
	n := flag.Int("n", 10000, "objects")
	memprofile := flag.String("memprofile", "", "write a heap profile here after the first sync")
	cpuprofile := flag.String("cpuprofile", "", "write a CPU profile of the first sync here")
	cached := flag.Bool("cached-mapper", false, "cache REST mappings per kind")
	configMaps := flag.Bool("configmaps", false, "only ConfigMaps instead of the benchmark mix")
	prune := flag.Int("prune", 0, "after the no-op, sync without the last this many objects")
	watch := flag.Bool("drift", true, "run the app's drift watcher beside the syncs, as the daemon does")
	memprofileEnd := flag.String("memprofile-end", "", "write a heap profile here at the end (after the drift step)")
	memprofilePeak := flag.String("memprofile-peak", "", "write a heap profile here whenever the live heap (as of the last GC) is the largest so far")
	flag.Parse()
	if *memprofilePeak != "" {
		go heapprof.Peaks(*memprofilePeak, 250*time.Millisecond)
	}
	syncdrun.CacheMappings = *cached
	if *cpuprofile != "" {
		f, err := os.Create(*cpuprofile)
		if err == nil {
			_ = pprof.StartCPUProfile(f)
			defer pprof.StopCPUProfile()
		}
	}
	objects := syncdrun.Objects
	if *configMaps {
		objects = syncdrun.ConfigMaps
	}
	if err := run(*kubeconfig, *ns, *n, *prune, *watch, objects, *memprofile, *memprofileEnd); err != nil {
		fmt.Fprintln(os.Stderr, "rss:", err)
		pprof.StopCPUProfile()
		os.Exit(1)
	}
}

func run(kubeconfig, ns string, n, prune int, watch bool, objects func(string, int) []*unstructured.Unstructured, memprofile, memprofileEnd string) error {
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return err
	}
	cfg.QPS = -1
	s, err := syncdrun.New(cfg, config.App{Name: "rss", Namespace: ns}, 16)
	if err != nil {
		return err
	}
	defer s.Stop()
	if watch {
		s.WithDrift()
	}
	steps := []struct {
		name string
		n    int
	}{{"first_sync", n}, {"noop", n}}
	if prune > 0 {
		steps = append(steps, struct {
			name string
			n    int
		}{"prune", n - prune})
	}
	for i, step := range steps {
		// Each sync gets a fresh set, as the daemon renders Git afresh
		// for every reconcile and holds nothing of the last render.
		start := time.Now()
		if _, _, err := s.SyncOwned(context.Background(), objects(ns, step.n)); err != nil {
			return fmt.Errorf("sync %d: %w", i+1, err)
		}
		fmt.Printf("%s_ms %d\n", step.name, time.Since(start).Milliseconds())
		if i == 0 && memprofile != "" {
			if err := heapprof.Write(memprofile); err != nil {
				return err
			}
		}
	}
	if watch {
		if err := driftSeen(s); err != nil {
			return err
		}
	}
	if memprofileEnd != "" {
		if err := heapprof.Write(memprofileEnd); err != nil {
			return err
		}
	}
	kib, err := heapprof.PeakRSS()
	if err != nil {
		return err
	}
	fmt.Printf("maxrss_kib %d\n", kib)
	return nil
}

// driftSeen edits the first object (a ConfigMap in both mixes) out of band
// and waits until the drift watcher reports it.
func driftSeen(s *syncdrun.Syncd) error {
	start := time.Now()
	if err := s.EditOutOfBand(context.Background(), "obj-00000"); err != nil {
		return fmt.Errorf("edit out of band: %w", err)
	}
	for deadline := start.Add(5 * time.Minute); !s.Found("obj-00000"); {
		if time.Now().After(deadline) {
			return fmt.Errorf("drift watcher did not report obj-00000 within 5m; watch errors: %v", s.DriftErrors())
		}
		time.Sleep(10 * time.Millisecond)
	}
	fmt.Printf("drift_ms %d\n", time.Since(start).Milliseconds())
	return nil
}
