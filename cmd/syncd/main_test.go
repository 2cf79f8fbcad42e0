package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"

	"syncd.dev/syncd/internal/testenv"
)

var env *testenv.Env

func TestMain(m *testing.M) { testenv.Main(m, testenv.Options{}, &env) }

// result is what one syncd invocation printed and returned.
type result struct {
	code           int
	stdout, stderr string
}

// syncd runs the command line in-process against the test control plane.
func syncd(t *testing.T, args ...string) result {
	t.Helper()
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
