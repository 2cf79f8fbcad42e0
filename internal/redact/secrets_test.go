package redact

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestSecretsMask(t *testing.T) {
	tests := map[string]struct {
		values    []string
		in, want  string
		wantFound []string
	}{
		"a value inside a longer string": {
			values: []string{"Pw-9xQ2vL7k"}, in: "jdbc://db-Pw-9xQ2vL7k-eu", want: "jdbc://db-<redacted>-eu",
			wantFound: []string{"Pw-9xQ2vL7k"}},
		"every occurrence": {
			values: []string{"hunter2-long"}, in: "a hunter2-long b hunter2-long", want: "a <redacted> b <redacted>",
			wantFound: []string{"hunter2-long"}},
		"overlapping values become one marker": {
			values: []string{"abcdefgh12", "xxabcdefgh"}, in: "1 xxabcdefgh12 2", want: "1 <redacted> 2",
			wantFound: []string{"abcdefgh12", "xxabcdefgh"}},
		"a value inside another": {
			values: []string{"token-inner", "outer-token-inner-x"}, in: "outer-token-inner-x and token-inner", want: "<redacted> and <redacted>",
			wantFound: []string{"outer-token-inner-x", "token-inner"}},
		"a longer value starting before an earlier match": {
			values: []string{"bcdefghi", "efghijkl", "abcdefghijklmnop"}, in: "-abcdefghijklmnop-", want: "-<redacted>-",
			wantFound: []string{"abcdefghijklmnop", "bcdefghi", "efghijkl"}},
		"a short value is not searched for": {
			values: []string{"admin", "5432"}, in: "admin connects to 5432", want: "admin connects to 5432"},
		"a multi-line value": {
			values: []string{"-----BEGIN KEY-----\nMIIB\n-----END KEY-----"}, in: "key: -----BEGIN KEY-----\nMIIB\n-----END KEY-----\n", want: "key: <redacted>\n",
			wantFound: []string{"-----BEGIN KEY-----\nMIIB\n-----END KEY-----"}},
		"no value": {
			in: "nothing to hide here", want: "nothing to hide here"},
		"a near miss": {
			values: []string{"Pw-9xQ2vL7k"}, in: "Pw-9xQ2vL7 Pw-9xQ2vL7j", want: "Pw-9xQ2vL7 Pw-9xQ2vL7j"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			s := NewSecrets(tc.values)
			if diff := cmp.Diff(tc.want, s.Mask(tc.in)); diff != "" {
				t.Errorf("Mask (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantFound, s.Found(tc.in)); diff != "" {
				t.Errorf("Found (-want +got):\n%s", diff)
			}
		})
	}
}

// TestSecretsMaskMatchesNaive checks the automaton against a plain search
// over many values sharing prefixes and suffixes.
func TestSecretsMaskMatchesNaive(t *testing.T) {
	var values []string
	for i := range 300 {
		values = append(values, fmt.Sprintf("tok-%03d-%s", i, strings.Repeat("ab", i%5+1)))
	}
	s := NewSecrets(values)
	for i := range 300 {
		in := fmt.Sprintf("x tok-%03d-%s y tok-%03d-", i, strings.Repeat("ab", 5), (i+7)%300)
		var want []string
		for _, v := range values {
			if strings.Contains(in, v) {
				want = append(want, v)
			}
		}
		if diff := cmp.Diff(want, s.Found(in)); diff != "" {
			t.Fatalf("Found(%q) (-naive +automaton):\n%s", in, diff)
		}
		if got := s.Mask(in); strings.Contains(got, values[i]) {
			t.Fatalf("Mask(%q) = %q, still holding %q", in, got, values[i])
		}
	}
}

func TestRulesMaskSecretsInObjects(t *testing.T) {
	r := (*Rules)(nil).WithSecrets(NewSecrets([]string{"Pw-9xQ2vL7k", "Pw-NEW-4rT8"}))
	live := map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "data": map[string]any{"url": "jdbc://db-Pw-9xQ2vL7k-eu", "other": "x"}}
	after := map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "data": map[string]any{"url": "jdbc://db-Pw-NEW-4rT8-eu", "other": "x"}, "list": []any{"a Pw-NEW-4rT8"}}
	a, b := r.Pair(live, after)
	wantA := map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "data": map[string]any{"url": "jdbc://db-<redacted>-eu", "other": "x"}}
	wantB := map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "data": map[string]any{"url": "jdbc://db-<redacted, changed>-eu", "other": "x"}, "list": []any{"a <redacted>"}}
	if diff := cmp.Diff(wantA, a); diff != "" {
		t.Errorf("before (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(wantB, b); diff != "" {
		t.Errorf("after (-want +got):\n%s", diff)
	}
	if live["data"].(map[string]any)["url"] != "jdbc://db-Pw-9xQ2vL7k-eu" || after["list"].([]any)[0] != "a Pw-NEW-4rT8" {
		t.Error("Pair changed its arguments")
	}
	if got := r.Value(map[string]any{"k": []any{"Pw-9xQ2vL7k!"}}); !cmp.Equal(got, map[string]any{"k": []any{"<redacted>!"}}) {
		t.Errorf("Value = %v", got)
	}
}

func TestCollect(t *testing.T) {
	secret := map[string]any{"apiVersion": "v1", "kind": "Secret",
		"metadata":   map[string]any{"name": "db", "annotations": map[string]any{LastApplied: "{}"}},
		"data":       map[string]any{"password": "aHVudGVyMi1sb25n"}, // hunter2-long
		"stringData": map[string]any{"token": "tok-1234567", "port": int64(5432)}}
	got := (*Rules)(nil).Collect(secret)
	want := []string{"5432", "aHVudGVyMi1sb25n", "hunter2-long", "tok-1234567", "{}"}
	if diff := cmp.Diff(want, sorted(got)); diff != "" {
		t.Errorf("Collect (-want +got):\n%s", diff)
	}
}

func sorted(s []string) []string {
	out := slices.Clone(s)
	slices.Sort(out)
	return out
}
