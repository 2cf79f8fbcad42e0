package main

import (
	"strings"
	"testing"
)

// transcript runs syncd against one config and cache directory and keeps
// every command's output, so that a test can check at its end that no
// output showed a secret value.
type transcript struct {
	t          *testing.T
	cfg, cache string
	outputs    []string
}

func newTranscript(t *testing.T, cfg string) *transcript {
	return &transcript{t: t, cfg: cfg, cache: t.TempDir()}
}

// output runs syncd ARGS with the transcript's config and cache directory
// and records what it printed under what; the caller judges the result.
func (tr *transcript) output(what string, args ...string) result {
	tr.t.Helper()
	r := syncd(tr.t, append(args, "--config", tr.cfg, "--cache-dir", tr.cache)...)
	tr.record(what, r.stdout+r.stderr)
	return r
}

// run is output that fails the test unless syncd exits with want.
func (tr *transcript) run(what string, want int, args ...string) result {
	tr.t.Helper()
	r := tr.output(what, args...)
	if r.code != want {
		tr.t.Fatalf("%s: code %d, want %d\n%s%s", what, r.code, want, r.stdout, r.stderr)
	}
	return r
}

// record keeps an output the test got some other way.
func (tr *transcript) record(what, out string) {
	tr.outputs = append(tr.outputs, what+":\n"+out)
}

// neverShows fails the test for each recorded output containing secret.
func (tr *transcript) neverShows(secret string) {
	tr.t.Helper()
	for _, out := range tr.outputs {
		if strings.Contains(out, secret) {
			tr.t.Errorf("an output shows the Secret's value:\n%s", out)
		}
	}
}
