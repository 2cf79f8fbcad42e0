package e2e

import (
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"syncd.dev/syncd/internal/testenv/gitserver"
)

// bombCharts are charts a careless or hostile author writes (issue 27,
// items 2 and 3): a 2 GB string, a value that renders itself with tpl
// without end, and a loop of 10^10 turns in almost no memory.
var bombCharts = map[string]string{
	"charts/bomb/templates/cm.yaml":      `{{ range until 200000 }}{{ repeat 10000 "A" }}{{ end }}`,
	"charts/recursion/values.yaml":       "t: '{{ tpl .Values.t . }}'\n",
	"charts/recursion/templates/cm.yaml": `{{ tpl .Values.t . }}`,
	"charts/endless/templates/cm.yaml":   `{{ range until 100000 }}{{ range until 100000 }}{{ end }}{{ end }}`,
}

// TestJourneyRenderLimits: syncd run with four apps of one Git
// repository: three charts that would exhaust memory or never end, and
// a plain app. Each chart fails its own app with the limit it hit named;
// the plain app syncs, and syncs a new commit after the charts failed;
// syncd's own memory stays small (its RSS sampled throughout), the
// process survives, and no render process lives past the time limit.
func TestJourneyRenderLimits(t *testing.T) {
	const ns = "render-limits"
	const timeLimit = 4 * time.Second
	w := newWorkspace(t)
	ensureNamespace(t, ns)
	repo := gitserver.StartTest(t).NewTestRepo(t, "platform")
	files := map[string]string{"plain/cm.yaml": plainConfigMap("one")}
	for name, content := range bombCharts {
		files[name] = content
	}
	for _, c := range []string{"bomb", "recursion", "endless"} {
		files["charts/"+c+"/Chart.yaml"] = "apiVersion: v2\nname: " + c + "\nversion: 0.1.0\n"
	}
	if _, err := repo.Commit("four apps", gitFiles(".", files)); err != nil {
		t.Fatal(err)
	}
	w.writeConfig(fmt.Sprintf(`apiVersion: syncd/v1alpha1
kind: Config
sources:
  - name: platform
    git:
      url: %s
      branch: main
      interval: 2s
apps:
  - {name: bomb, source: platform, path: charts/bomb, namespace: %[2]s, helm: {releaseName: bomb}}
  - {name: recursion, source: platform, path: charts/recursion, namespace: %[2]s, helm: {releaseName: recursion}}
  - {name: endless, source: platform, path: charts/endless, namespace: %[2]s, helm: {releaseName: endless}}
  - {name: plain, source: platform, path: plain, namespace: %[2]s}
`, repo.URL, ns))

	d := w.startDaemon("--render-memory-limit", "160Mi", "--render-time-limit", timeLimit.String())
	watch := watchProcess(t, d.cmd.Process.Pid)
	d.waitApplied("plain", func(string) bool { return true })
	const memoryLimit, timeLimitHit = "used more than 160 MiB of memory (the render memory limit)", "ran longer than 4s (the render time limit)"
	for app, want := range map[string][]string{
		"bomb": {memoryLimit},
		// A template that renders itself grows its stack without end:
		// which limit it reaches first depends on how much CPU the
		// machine gives it in 4 s (on a loaded CI machine, the time).
		"recursion": {memoryLimit, timeLimitHit},
		"endless":   {timeLimitHit},
	} {
		waitFailed(t, d, app, want...)
	}
	if _, err := repo.Commit("plain: two", gitFiles(".", map[string]string{"plain/cm.yaml": plainConfigMap("two")})); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the plain app to apply the new commit", 2*time.Minute, func() (bool, string) {
		out, _ := kubectl("get", "configmap", "plain", "-n", ns, "-o", "jsonpath={.data.value}")
		return string(out) == "two", string(out)
	})
	peak, lived := watch()
	if d.cmd.ProcessState != nil {
		t.Fatalf("syncd run exited: %v\n%s", d.cmd.ProcessState, tail(d.logText(), 3000))
	}
	t.Logf("syncd run's peak RSS %d MiB; longest-lived render process %s", peak>>20, lived)
	if peak > maxDaemonRSS {
		t.Errorf("syncd run's resident memory peaked at %d MiB, over %d MiB: a render ran in its memory", peak>>20, maxDaemonRSS>>20)
	}
	if lived > timeLimit+2*time.Second {
		t.Errorf("a render process lived %s, past the %s time limit", lived, timeLimit)
	}
	d.stop()
	if strings.Contains(d.logText(), "fatal error") {
		t.Errorf("syncd run logged a fatal error:\n%s", tail(d.logText(), 3000))
	}
}

// maxDaemonRSS is the most resident memory syncd run may use in
// TestJourneyRenderLimits: what it needs for four apps, well below what
// any of the bombs would take in its process.
const maxDaemonRSS = 300 << 20

func plainConfigMap(value string) string {
	return "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: plain\ndata:\n  value: " + value + "\n"
}

// waitFailed waits until /status shows app failed with an error holding
// one of want.
func waitFailed(t *testing.T, d *daemon, app string, want ...string) {
	t.Helper()
	waitFor(t, "app "+app+" to fail with "+strings.Join(want, " or "), 2*time.Minute, func() (bool, string) {
		apps, err := d.status()
		if err != nil {
			return false, err.Error()
		}
		for _, a := range apps {
			if a.App == app {
				return slices.ContainsFunc(want, func(w string) bool { return strings.Contains(a.Error, w) }), fmt.Sprintf("%+v", a)
			}
		}
		return false, fmt.Sprintf("%+v", apps)
	})
}

// watchProcess samples pid's resident memory and its children every
// 20 ms until the returned function is called, which returns the peak
// RSS and the longest time a child was seen alive.
func watchProcess(t *testing.T, pid int) func() (peak int64, lived time.Duration) {
	t.Helper()
	var mu sync.Mutex
	var peak int64
	first, last := map[int]time.Time{}, map[int]time.Time{}
	stop, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		for {
			now := time.Now()
			rss := residentOf(pid)
			kids := renderChildrenOf(pid)
			mu.Lock()
			peak = max(peak, rss)
			for _, k := range kids {
				if _, ok := first[k]; !ok {
					first[k] = now
				}
				last[k] = now
			}
			mu.Unlock()
			select {
			case <-stop:
				return
			case <-time.After(20 * time.Millisecond):
			}
		}
	}()
	return func() (int64, time.Duration) {
		close(stop)
		<-done
		var lived time.Duration
		for k, f := range first {
			lived = max(lived, last[k].Sub(f))
		}
		if len(first) == 0 {
			t.Error("syncd run started no render process")
		}
		return peak, lived
	}
}

// residentOf is pid's resident set in bytes (0 when it is gone).
func residentOf(pid int) int64 {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/statm", pid))
	if err != nil {
		return 0
	}
	f := strings.Fields(string(data))
	if len(f) < 2 {
		return 0
	}
	pages, _ := strconv.ParseInt(f[1], 10, 64)
	return pages * int64(os.Getpagesize())
}

// renderChildrenOf lists the render processes (argv[0] syncd-render)
// whose parent is pid.
func renderChildrenOf(pid int) []int {
	entries, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range entries {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", p))
		if err != nil {
			continue
		}
		s := string(data)
		f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
		if len(f) < 2 || f[1] != strconv.Itoa(pid) {
			continue
		}
		if argv, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", p)); strings.HasPrefix(string(argv), "syncd-render\x00") {
			out = append(out, p)
		}
	}
	return out
}
