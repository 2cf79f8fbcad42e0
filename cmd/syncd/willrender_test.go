package main

import (
	"os"
	"path/filepath"
	"testing"

	"syncd.dev/syncd/internal/config"
)

// TestWillRender: syncd apply --config starts its render child early
// only when an app to apply will render rather than read a kept answer:
// a Helm section, decryption, an OCI or Helm repository source, or a Git
// source never fetched into the cache directory; a Git app whose source
// was fetched reads its kept answer (or renders late, when its tree
// moved).
func TestWillRender(t *testing.T) {
	cache := t.TempDir()
	if err := os.Mkdir(filepath.Join(cache, "fetched"), 0o755); err != nil {
		t.Fatal(err)
	}
	sources := []config.Source{
		{Name: "fetched", Git: config.GitSource{URL: "https://example.com/a.git"}},
		{Name: "new", Git: config.GitSource{URL: "https://example.com/b.git"}},
		{Name: "artifact", OCI: &config.OCISource{URL: "oci://example.com/a"}},
		{Name: "charts", Helm: &config.HelmSource{URL: "https://example.com/charts"}},
	}
	app := func(name, source string) config.App { return config.App{Name: name, Source: source} }
	withHelm := app("chart", "fetched")
	withHelm.Helm = &config.HelmSpec{}
	withKeys := app("secret", "fetched")
	withKeys.Decryption = &config.Decryption{Provider: config.DecryptionSOPS}
	tests := map[string]struct {
		apps []config.App
		only string
		want bool
	}{
		"a Git app whose source was fetched":       {apps: []config.App{app("web", "fetched")}, want: false},
		"a Git app whose source was never fetched": {apps: []config.App{app("web", "new")}, want: true},
		"an app with a helm section":               {apps: []config.App{withHelm}, want: true},
		"an app with decryption":                   {apps: []config.App{withKeys}, want: true},
		"an OCI artifact":                          {apps: []config.App{app("web", "artifact")}, want: true},
		"a Helm repository's chart":                {apps: []config.App{app("web", "charts")}, want: true},
		"one of several will render":               {apps: []config.App{app("web", "fetched"), withKeys}, want: true},
		"--app names the one that will not":        {apps: []config.App{app("web", "fetched"), withKeys}, only: "web", want: false},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			cfg := &config.Config{Sources: sources, Apps: tc.apps}
			if got := willRender(cfg, tc.only, cache); got != tc.want {
				t.Errorf("willRender = %v, want %v", got, tc.want)
			}
		})
	}
}
