package renderproc

import (
	"context"
	"errors"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// The charts a careless or hostile author writes (issue 27, item 2 and 3).
var (
	// memoryBomb builds a 2 GB string.
	memoryBomb = map[string]string{"cm.yaml": `{{ range until 200000 }}{{ repeat 10000 "A" }}{{ end }}`}
	// recursion is a value that renders itself with tpl, without end.
	recursionValues = "t: '{{ tpl .Values.t . }}'\n"
	recursion       = map[string]string{"cm.yaml": `{{ tpl .Values.t . }}`}
	// endless loops 10^10 times in almost no memory.
	endless = map[string]string{"cm.yaml": `{{ range until 100000 }}{{ range until 100000 }}{{ end }}{{ end }}`}
)

// TestRenderStopsAtLimits renders each bomb in a child under small
// limits: each fails with the limit it hit named, soon after the limit.
func TestRenderStopsAtLimits(t *testing.T) {
	tests := map[string]struct {
		values    string
		templates map[string]string
		limits    Limits
		want      Limit
		within    time.Duration
	}{
		"memory bomb":   {templates: memoryBomb, limits: Limits{Memory: 128 << 20, Time: time.Minute}, want: LimitMemory, within: 30 * time.Second},
		"tpl recursion": {values: recursionValues, templates: recursion, limits: Limits{Memory: 128 << 20, Time: time.Minute}, want: LimitMemory, within: 30 * time.Second},
		"endless loop":  {templates: endless, limits: Limits{Time: 2 * time.Second}, want: LimitTime, within: 10 * time.Second},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			r := newRenderer(t, tc.limits)
			start := time.Now()
			_, err := r.Render(context.Background(), chartTree(t, tc.values, tc.templates))
			took := time.Since(start)
			var le *LimitError
			if !errors.As(err, &le) {
				t.Fatalf("Render: %v; want a LimitError (%s)", err, tc.want)
			}
			if diff := cmp.Diff(tc.want, le.Limit); diff != "" {
				t.Errorf("limit (-want +got):\n%s\nerror: %v", diff, err)
			}
			if took > tc.within {
				t.Errorf("the render stopped after %s, want within %s", took, tc.within)
			}
			t.Logf("%s after %s: %v", name, took.Round(time.Millisecond), err)
		})
	}
}

// TestLimitErrorNamesTheLimit checks the messages a user reads.
func TestLimitErrorNamesTheLimit(t *testing.T) {
	tests := map[string]struct {
		err  *LimitError
		want []string
	}{
		"memory": {&LimitError{Limit: LimitMemory, Memory: 512 << 20}, []string{"used more than 512 MiB of memory", "render memory limit", FlagMemory}},
		"time":   {&LimitError{Limit: LimitTime, Time: time.Minute}, []string{"ran longer than 1m0s", "render time limit", FlagTime}},
		"output": {&LimitError{Limit: LimitOutput, Output: 32 << 20}, []string{"larger than 32 MiB", "render output limit", FlagOutput}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			for _, w := range tc.want {
				if !strings.Contains(tc.err.Error(), w) {
					t.Errorf("%q does not say %q", tc.err.Error(), w)
				}
			}
		})
	}
}

// TestRenderKilledAtDeadline: an endless render's child is gone when
// Render returns at its deadline (or when the caller's context ends),
// and burns no CPU afterwards.
func TestRenderKilledAtDeadline(t *testing.T) {
	tests := map[string]struct {
		limits  Limits
		timeout time.Duration // the caller's context; 0: none
		want    func(error) bool
	}{
		"time limit":      {limits: Limits{Time: time.Second}, want: func(err error) bool { var le *LimitError; return errors.As(err, &le) && le.Limit == LimitTime }},
		"context timeout": {limits: Limits{Time: time.Minute}, timeout: time.Second, want: func(err error) bool { return errors.Is(err, context.DeadlineExceeded) }},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			r := newRenderer(t, tc.limits)
			ctx := context.Background()
			if tc.timeout > 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, tc.timeout)
				defer cancel()
			}
			pids := watchChildren(t)
			start := time.Now()
			_, err := r.Render(ctx, chartTree(t, "", endless))
			if took := time.Since(start); took > 5*time.Second {
				t.Errorf("Render returned after %s", took)
			}
			if !tc.want(err) {
				t.Fatalf("Render: %v", err)
			}
			for _, pid := range pids() {
				if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
					t.Errorf("render child %d still exists after Render returned (kill 0: %v)", pid, err)
				}
			}
		})
	}
}

// watchChildren records the pid of every child this process starts
// from now on (read from /proc while the test runs); the returned
// function stops and returns them.
func watchChildren(t *testing.T) func() []int {
	t.Helper()
	self := os.Getpid()
	seen := map[int]bool{}
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			for _, pid := range childrenOf(self) {
				seen[pid] = true
			}
			select {
			case <-stop:
				return
			case <-time.After(20 * time.Millisecond):
			}
		}
	}()
	return func() []int {
		close(stop)
		<-done
		var out []int
		for pid := range seen {
			out = append(out, pid)
		}
		if len(out) == 0 {
			t.Error("no render child was seen")
		}
		return out
	}
}
