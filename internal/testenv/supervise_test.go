package testenv

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
)

// TestProcessDiesAndComesBack: a control-plane process that dies on its
// own is reported (how it ended, on stderr and in the events file) and
// started again with its data; one stopped on purpose is not; after
// maxRestarts restarts the harness gives up and says so.
func TestProcessDiesAndComesBack(t *testing.T) {
	events := filepath.Join(t.TempDir(), "events")
	t.Setenv(EventsEnv, events)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	e, err := Start(ctx, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Stop()
	cs := e.Clientset(t)
	createNamespace(ctx, t, cs, "before-deaths")

	for i, name := range []string{"kube-apiserver", "etcd"} {
		killProc(t, e, name)
		createNamespace(ctx, t, cs, "after-"+name)
		wantReports(t, events, i+1, name+" died on its own (signal: killed); started again")
	}
	if _, err := cs.CoreV1().Namespaces().Get(ctx, "before-deaths", metav1.GetOptions{}); err != nil {
		t.Errorf("the data written before the deaths: %v", err)
	}

	if err := e.StopAPIServer(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(2 * time.Second)
	if !e.exited("kube-apiserver") {
		t.Errorf("kube-apiserver stopped on purpose was started again")
	}
	wantReports(t, events, 2, "")
	if err := e.StartAPIServer(ctx); err != nil {
		t.Fatal(err)
	}

	e.mu.Lock()
	e.restarts["kube-apiserver"] = maxRestarts
	e.mu.Unlock()
	killProc(t, e, "kube-apiserver")
	wantReports(t, events, 3, "kube-apiserver died on its own (signal: killed); not started again: it died 4 times already")
	if !e.exited("kube-apiserver") {
		t.Errorf("kube-apiserver started a fifth time")
	}
}

// killProc kills the Env's named process with SIGKILL and waits until
// it has been reaped.
func killProc(t *testing.T, e *Env, name string) {
	t.Helper()
	e.mu.Lock()
	cmd, done := e.procs[name], e.done[name]
	e.mu.Unlock()
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	<-done
}

// createNamespace creates a namespace, retrying while the control plane
// comes back.
func createNamespace(ctx context.Context, t *testing.T, cs kubernetes.Interface, name string) {
	t.Helper()
	var last error
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		_, last = cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
		return last == nil, nil
	})
	if err != nil {
		t.Fatalf("create namespace %s: the control plane did not come back: %v", name, last)
	}
}

// wantReports checks the events file holds n death reports, the last
// one saying last ("" for any).
func wantReports(t *testing.T, events string, n int, last string) {
	t.Helper()
	data, err := os.ReadFile(events)
	if err != nil && n > 0 {
		t.Fatal(err)
	}
	reports := strings.Split(string(data), " testenv (")
	if got := len(reports) - 1; got != n {
		t.Fatalf("want %d death reports, got %d:\n%s", n, got, data)
	}
	if !strings.Contains(reports[n], last) {
		t.Errorf("the last death report does not say %q:\n%s", last, reports[n])
	}
}

// TestGoCrash: a death report shows a Go crash from its first line, not
// the last goroutine's stack at the log's end.
func TestGoCrash(t *testing.T) {
	stacks := strings.Repeat("goroutine 7 [select]:\nmain.wait()\n", 40)
	tests := map[string]struct{ log, want string }{
		"fatal error": {
			log:  "I1206 13:32:11 controller.go:667] started\nfatal error: concurrent map writes\n\ngoroutine 1 [running]:\nk8s.io/apiextensions.handler()\n" + stacks,
			want: "fatal error: concurrent map writes\n\ngoroutine 1 [running]:\nk8s.io/apiextensions.handler()\n",
		},
		"panic":    {log: "I1206 started\npanic: runtime error: index out of range\n" + stacks, want: "panic: runtime error: index out of range\ngoroutine 7 [select]:\n"},
		"no crash": {log: "I1206 started\nE1206 lost etcd\n", want: ""},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got := goCrash(tc.log)
			if !strings.HasPrefix(got, tc.want) || (tc.want == "") != (got == "") {
				t.Errorf("goCrash: got\n%s\nwant it to start with\n%s", got, tc.want)
			}
			if n := strings.Count(got, "\n") + 1; got != "" && n != 20 {
				t.Errorf("goCrash: %d lines, want 20", n)
			}
		})
	}
}
