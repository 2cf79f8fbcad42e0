package main

import (
	"bytes"
	"context"
	"fmt"
	"hash/fnv"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"syncd.dev/syncd/internal/testenv"
)

var env *testenv.Env

func TestMain(m *testing.M) {
	runCLIIfAsked() // a `syncd run` process started by TestRunKilledMidApply
	testenv.Main(m, testenv.Options{}, &env)
}

// result is what one syncd invocation printed and returned.
type result struct {
	code           int
	stdout, stderr string
}

var inventoryNamespaces sync.Map // test name → namespace created

// invNamespace returns the inventory namespace of the running (sub)test,
// created on first use. Every test has its own: the tests name their app
// "web", and a shared inventory would make one test's apply prune, and
// one test's plan preview the prune of, another test's objects.
func invNamespace(t *testing.T) string {
	t.Helper()
	h := fnv.New32a()
	h.Write([]byte(t.Name()))
	ns := fmt.Sprintf("inv-%08x", h.Sum32())
	if _, loaded := inventoryNamespaces.LoadOrStore(ns, true); !loaded {
		_, err := env.Clientset(t).CoreV1().Namespaces().Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
		if err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatalf("create inventory namespace %s: %v", ns, err)
		}
	}
	return ns
}

// syncd runs the command line in-process against the test control plane.
// Config-driven applies, runs and plans get the test's own inventory
// namespace (invNamespace).
func syncd(t *testing.T, args ...string) result {
	t.Helper()
	if len(args) > 0 && (args[0] == "apply" || args[0] == "run" || args[0] == "plan") && slices.Contains(args, "--config") && !slices.Contains(args, "--inventory-namespace") {
		args = append(args, "--inventory-namespace", invNamespace(t))
	}
	var out, errOut bytes.Buffer
	code := run(context.Background(), append(args, "--kubeconfig", env.Kubeconfig), &out, &errOut)
	return result{code: code, stdout: out.String(), stderr: errOut.String()}
}

// writeFiles writes name → content files below a new temp dir.
func writeFiles(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, content := range files {
		path := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}
