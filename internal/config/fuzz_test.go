package config

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// FuzzParse checks that Parse never panics and that it either returns a
// config or a non-empty, sorted Errors whose entries all name the file.
func FuzzParse(f *testing.F) {
	files, err := filepath.Glob("testdata/*.yaml")
	if err != nil {
		f.Fatal(err)
	}
	more, err := filepath.Glob("testdata/invalid/*.yaml")
	if err != nil {
		f.Fatal(err)
	}
	for _, file := range append(files, more...) {
		data, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Add([]byte(header + "apps:\n  - &a {name: web, source: repo}\n  - <<: [*a, *a]\n    name: api\n"))
	f.Add([]byte(header + "      schedule: \"CRON_TZ=\"\n"))
	f.Add([]byte(header + "apps:\n  - &a\n    name: web\n    source: repo\n    <<: *a\n"))
	f.Add([]byte("&r {apiVersion: syncd/v1alpha1, kind: Config, apps: [*r]}\n"))

	f.Fuzz(func(t *testing.T, data []byte) {
		cfg, err := Parse(data, "fuzz.yaml")
		if err == nil {
			if cfg == nil {
				t.Fatal("Parse returned neither a config nor an error")
			}
			return
		}
		if cfg != nil {
			t.Fatal("Parse returned a config along with an error")
		}
		var errs Errors
		if !errors.As(err, &errs) || len(errs) == 0 {
			t.Fatalf("Parse error is %T %q, want a non-empty Errors", err, err)
		}
		if !slices.IsSortedFunc(errs, func(a, b FieldError) int { return a.Line - b.Line }) {
			t.Fatalf("problems not sorted by line: %v", errs)
		}
		for _, fe := range errs {
			if fe.File != "fuzz.yaml" || fe.Message == "" {
				t.Fatalf("problem without file or message: %#v", fe)
			}
		}
	})
}
