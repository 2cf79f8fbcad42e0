package renderproc

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// TestChildGetsNoEnvironment: a render child's environment is its
// trigger alone, whatever syncd's holds (credentials, proxies).
func TestChildGetsNoEnvironment(t *testing.T) {
	t.Setenv("AWS_SECRET_ACCESS_KEY", "s3cret")
	t.Setenv("HTTPS_PROXY", "http://proxy.example:3128")
	r := newRenderer(t, Limits{Time: 3 * time.Second})
	done := make(chan error, 1)
	go func() {
		_, err := r.Render(context.Background(), chartTree(t, "", endless))
		done <- err
	}()
	var environ string
	deadline := time.Now().Add(3 * time.Second)
	for environ == "" && time.Now().Before(deadline) {
		for _, pid := range childrenOf(os.Getpid()) {
			if data, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", pid)); err == nil && execed(string(data)) {
				environ = string(data)
			}
		}
		time.Sleep(10 * time.Millisecond) // polling /proc, not waiting for speed
	}
	<-done
	if diff := cmp.Diff(childEnv+"="+childEnvValue+"\x00", environ); diff != "" {
		t.Errorf("the child's environment (-want +got):\n%s", diff)
	}
}

// execed: the environment read is the exec'd child's, not the forked
// process's between fork and exec, which still shares syncd's memory
// (and so shows syncd's own environment, trigger absent).
func execed(environ string) bool {
	return strings.Contains(environ, childEnv+"="+childEnvValue+"\x00")
}

// TestNewRefusesBadLimits: limits a render cannot run under are refused
// naming the flag.
func TestNewRefusesBadLimits(t *testing.T) {
	tests := map[string]struct {
		limits Limits
		want   string
	}{
		"memory too small": {Limits{Memory: 1 << 20}, "render memory limit 1 MiB: below the least a render needs (64 MiB): raise --render-memory-limit"},
		"negative time":    {Limits{Time: -time.Second}, "render time limit -1s: negative: set --render-time-limit to a positive duration"},
		"negative output":  {Limits{Output: -1}, "render output limit -1: negative: set --render-output-limit to a positive size"},
		"defaults":         {Limits{}, ""},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			_, err := New(tc.limits)
			got := ""
			if err != nil {
				got = err.Error()
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("New (-want +got):\n%s", diff)
			}
		})
	}
}
