package renderproc

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"unsafe"

	"github.com/google/go-cmp/cmp"
)

// TestAnswerObjectsShareStrings reads an answer of two objects: they are
// decoded as written, and share one copy of each key and of each short
// string value they both hold, never of a long one.
func TestAnswerObjectsShareStrings(t *testing.T) {
	long := strings.Repeat("x", internMax+1)
	ms := configMaps(2, long)
	for i, m := range ms {
		m.Object.Object["spec"] = map[string]any{"ports": []any{map[string]any{"protocol": "TCP", "port": int64(80 + i)}}}
	}
	want := configMaps(2, long)
	for i, m := range want {
		m.Object.Object["spec"] = map[string]any{"ports": []any{map[string]any{"protocol": "TCP", "port": int64(80 + i)}}}
	}
	var answer bytes.Buffer
	if err := writeAnswer(&answer, ms, nil); err != nil {
		t.Fatal(err)
	}
	res := readAnswer(&answer, DefaultOutput)
	if res.err != nil {
		t.Fatal(res.err)
	}
	if diff := cmp.Diff(want, res.manifests); diff != "" {
		t.Fatalf("manifests (-written +read):\n%s", diff)
	}
	a, b := strs(res.manifests[0].Object.Object, ""), strs(res.manifests[1].Object.Object, "")
	got := map[string]bool{}
	for where, s := range a {
		if o, ok := b[where]; ok && o == s {
			got[where] = unsafe.StringData(o) == unsafe.StringData(s)
		}
	}
	wantShared := map[string]bool{
		"key apiVersion": true, "key kind": true, "key metadata": true, "key data": true, "key spec": true,
		"key metadata.name": true, "key metadata.namespace": true, "key data.v": true,
		"key spec.ports": true, "key spec.ports[0].protocol": true, "key spec.ports[0].port": true,
		"apiVersion": true, "kind": true, "metadata.namespace": true, "spec.ports[0].protocol": true,
		"data.v": false,
	}
	if diff := cmp.Diff(wantShared, got); diff != "" {
		t.Errorf("strings shared by both objects (-want +got):\n%s", diff)
	}
}

// strs lists the keys ("key path") and string values ("path") below v.
func strs(v any, path string) map[string]string {
	out := map[string]string{}
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			p := strings.TrimPrefix(path+"."+k, ".")
			out["key "+p] = k
			for q, s := range strs(e, p) {
				out[q] = s
			}
		}
	case []any:
		for i, e := range x {
			for q, s := range strs(e, fmt.Sprintf("%s[%d]", path, i)) {
				out[q] = s
			}
		}
	case string:
		out[path] = x
	}
	return out
}
