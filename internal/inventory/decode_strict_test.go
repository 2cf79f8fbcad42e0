package inventory

import (
	"encoding/json"
	"fmt"
	"runtime"
	"strings"
	"testing"

	"syncd.dev/syncd/internal/planner"
)

// TestDecodeStrictRefuses: an inventory with a field this syncd does not
// know, or a key given twice, is refused naming the key; a plain one is
// read.
func TestDecodeStrictRefuses(t *testing.T) {
	for name, tc := range map[string]struct{ raw, want string }{
		"unknown field":        {`{"app":"web","id":"x","version":1,"members":[],"pruneAll":true}`, `unknown field "pruneAll"`},
		"unknown member field": {`{"app":"web","id":"x","version":1,"members":[{"version":"v1","kind":"ConfigMap","name":"a","stage":3,"owner":"b"}]}`, `unknown field "members[0].owner"`},
		"duplicate key":        {`{"app":"web","app":"shop","id":"x","version":1,"members":[]}`, `duplicate field "app"`},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := decodeStrict[Inventory]([]byte(tc.raw))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want an error containing %q", err, tc.want)
			}
		})
	}
	inv, err := decodeStrict[Inventory]([]byte(`{"app":"web","id":"x","version":1,"members":[{"version":"v1","kind":"ConfigMap","name":"a","stage":3}]}`))
	if err != nil || inv.App != "web" || len(inv.Members) != 1 || inv.Members[0].Name != "a" {
		t.Fatalf("a plain inventory: %+v, %v", inv, err)
	}
}

// TestDecodeStrictDecodesInPlace: reading an inventory of 10,000 members
// allocates less than its JSON's size again on top of what it decodes
// into (a json.Decoder copies the JSON into a buffer that grows by
// doubling: up to twice its size more).
func TestDecodeStrictDecodesInPlace(t *testing.T) {
	inv := &Inventory{App: "web", ID: "x", Version: FormatVersion}
	for i := range 10000 {
		inv.Members = append(inv.Members, &Member{Version: "v1", Kind: "ConfigMap", Namespace: "web", Name: fmt.Sprintf("obj-%05d", i),
			Stage: planner.StageNamespaced, ResourceVersion: fmt.Sprint(100000 + i),
			Slices: []SliceHash{{Manager: "syncd-web", Hash: strings.Repeat(fmt.Sprintf("%x", i%16), 64)}}})
	}
	raw, err := json.Marshal(inv)
	if err != nil {
		t.Fatal(err)
	}
	decoded := allocated(t, func() {
		if _, err := decodeStrict[Inventory](raw); err != nil {
			t.Fatal(err)
		}
	})
	// What the decoded value itself takes: the same JSON decoded without
	// any check, in place.
	plain := allocated(t, func() {
		if err := json.Unmarshal(raw, new(Inventory)); err != nil {
			t.Fatal(err)
		}
	})
	if extra := decoded - plain; extra > uint64(len(raw))/2 {
		t.Errorf("decodeStrict allocated %d bytes more than json.Unmarshal of the same %d bytes of JSON: it copies the JSON", extra, len(raw))
	}
}

// allocated is how many bytes f allocates.
func allocated(t *testing.T, f func()) uint64 {
	t.Helper()
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}
