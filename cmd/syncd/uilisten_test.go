package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestRunUIListenOpen: without --secure-status nothing authenticates the
// UI's readers, so syncd refuses to serve it on an address other than
// loopback.
func TestRunUIListenOpen(t *testing.T) {
	dir := writeFiles(t, map[string]string{"syncd.yaml": "apiVersion: syncd/v1alpha1\nkind: Config\n"})
	r := syncd(t, "run", "--config", filepath.Join(dir, "syncd.yaml"), "--kubeconfig", env.Kubeconfig, "--leader-elect=false",
		"--listen", "127.0.0.1:0", "--ui-listen", "0.0.0.0:0")
	if r.code != exitError || !strings.Contains(r.stderr, "--ui-listen 0.0.0.0:0: without --secure-status") {
		t.Errorf("code %d, stderr %q: want exit %d refusing the open --ui-listen", r.code, r.stderr, exitError)
	}
}
