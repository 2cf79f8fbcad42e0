package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"syncd.dev/syncd/internal/inventory"
)

// scaleObjects is the size of the app TestApplyConfigLargeApp applies.
// With names of scaleNameLen characters that do not compress (hex of a
// hash), its inventory is well over what one Secret holds, as an
// inventory of 15,000-20,000 short names was when a single-Secret
// inventory failed the whole apply; a quarter of the objects costs a
// quarter of the time.
const scaleObjects = 7000

// scaleNameLen is the length of the ConfigMaps' names (a name may have
// 253 characters).
const scaleNameLen = 250

// scaleName is the name of the i-th ConfigMap of the large app: its index
// (in order) and the hex of hashes of it up to scaleNameLen characters.
func scaleName(i int) string {
	name := fmt.Sprintf("cm-%06d-", i)
	for n := 0; len(name) < scaleNameLen; n++ {
		sum := sha256.Sum256([]byte(fmt.Sprint(i, n)))
		name += hex.EncodeToString(sum[:])
	}
	return name[:scaleNameLen]
}

// writeConfigMaps writes n small ConfigMaps of namespace ns into one
// multi-document file of a new directory and returns the directory.
func writeConfigMaps(t *testing.T, ns string, n int) string {
	t.Helper()
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, "---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: %s\n  namespace: %s\ndata:\n  k: v%d\n", scaleName(i), ns, i)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "cms.yaml"), []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestApplyConfigLargeApp applies one app of 7,000 long-named ConfigMaps with
// `syncd apply --config`, applies it again (nothing to do), then drops
// 1,000 of them: each succeeds, the inventory (chunked) lists exactly the
// objects left, and the dropped ones are deleted.
func TestApplyConfigLargeApp(t *testing.T) {
	ns := env.Namespace(t)
	cfg := writeConfig(t, fmt.Sprintf("- name: big\n  source: repo\n  namespace: %s\n", ns))
	apply := func(step string, n int) result {
		t.Helper()
		start := time.Now()
		r := syncd(t, "apply", "--config", cfg, "--app", "big", "--path", writeConfigMaps(t, ns, n), "--concurrency", "16")
		t.Logf("%s (%d objects): exit %d in %s", step, n, r.code, time.Since(start).Round(time.Millisecond))
		if r.code != exitOK {
			t.Fatalf("%s: exit %d\n%s\n%s", step, r.code, tail(r.stdout, 2000), tail(r.stderr, 2000))
		}
		return r
	}
	apply("first apply", scaleObjects)
	apply("re-apply", scaleObjects)
	apply("prune 1000", scaleObjects-1000)

	cs := env.Clientset(t)
	ctx := context.Background()
	cms, err := cs.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{LabelSelector: inventory.LabelPartOf})
	if err != nil {
		t.Fatal(err)
	}
	if len(cms.Items) != scaleObjects-1000 {
		t.Errorf("%d labelled ConfigMaps left, want %d", len(cms.Items), scaleObjects-1000)
	}
	if _, err := cs.CoreV1().ConfigMaps(ns).Get(ctx, scaleName(scaleObjects-1), metav1.GetOptions{}); err == nil {
		t.Errorf("the last dropped ConfigMap still exists")
	}
	invNS := invNamespace(t)
	chunks, err := cs.CoreV1().Secrets(invNS).List(ctx, metav1.ListOptions{LabelSelector: inventory.LabelChunkOf})
	if err != nil {
		t.Fatal(err)
	}
	if len(chunks.Items) == 0 {
		t.Errorf("no inventory chunk Secrets in %s: an inventory of %d members should not fit one Secret", invNS, scaleObjects-1000)
	}
}

// tail returns the last n bytes of s.
func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "…" + s[len(s)-n:]
}
