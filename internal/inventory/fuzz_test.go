package inventory

import (
	"bytes"
	"compress/gzip"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// gzipped returns data gzip-compressed, so the fuzzer's bytes reach the
// JSON decoders behind inflate.
func gzipped(t *testing.T, data []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	if _, err := zw.Write(data); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// FuzzDecode feeds arbitrary parent data to the inventory decoders: the
// raw bytes (not gzip, or a gzip stream), and the same bytes compressed,
// as a member list and as a chunk index. None may panic; an inventory that
// decodes has a kind, a name and a version for every member, and encodes
// to what decodes back equal.
func FuzzDecode(f *testing.F) {
	inv := &Inventory{App: "web", ID: "applyset-x", Members: []*Member{
		{Version: "v1", Kind: "ConfigMap", Namespace: "a", Name: "cm", Stage: 2, Slices: []SliceHash{{Manager: "syncd-web", Hash: "ab"}}, ResourceVersion: "7"},
		{Group: "apps", Version: "v1", Kind: "Deployment", Namespace: "a", Name: "web", Blocked: "budget", Adopted: true},
	}}
	good, err := inv.Encode()
	if err != nil {
		f.Fatal(err)
	}
	f.Add(good)
	for _, seed := range []string{
		`{"version":1,"app":"web","members":[]}`,
		`{"version":1,"members":[null]}`,
		`{"version":1,"members":[{"version":"v1","kind":"ConfigMap"}]}`,
		`{"version":2,"app":"web","chunks":["syncd-applyset-web-0"],"sha256":"0123456789abcdef"}`,
		`{"version":3}`,
		`{"version":1,"unknown":true}`,
		"\x1f\x8b\x08\x00",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		check := func(got *Inventory) {
			for i, m := range got.Members {
				if m == nil || m.Kind == "" || m.Name == "" || m.Version == "" {
					t.Fatalf("decoded member %d without identity: %+v", i, m)
				}
			}
			enc, err := got.Encode()
			if err != nil {
				t.Fatalf("encode a decoded inventory: %v", err)
			}
			back, err := Decode("fuzz", enc)
			if err != nil {
				t.Fatalf("decode what Encode wrote: %v", err)
			}
			if diff := cmp.Diff(got, back); diff != "" {
				t.Fatalf("round trip (-decoded +again):\n%s", diff)
			}
		}
		if got, err := Decode("fuzz", data); err == nil {
			check(got)
		}
		if got, err := Decode("fuzz", gzipped(t, data)); err == nil {
			check(got)
		}
		_, _ = parentVersion("fuzz", data)
		if idx, err := decodeIndex("fuzz", data); err == nil && (len(idx.Chunks) == 0 || len(idx.SHA256) < 10) {
			t.Fatalf("accepted a chunk index without chunks or sha256: %+v", idx)
		}
	})
}
