package webhook

import (
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"syncd.dev/syncd/internal/config"
)

// FuzzHandler sends arbitrary push payloads to the handler, once with a
// signature the fuzzer chose and once signed with the secret. Neither may
// panic; an unsigned payload never triggers a poll; a signed one triggers
// only sources one of its repository URLs names and that follow its ref.
func FuzzHandler(f *testing.F) {
	for _, seed := range []struct{ body, sig string }{
		{`{"repository":{"clone_url":"https://git.example/org/app.git"}}`, "sha256=00"},
		{`{"ref":"refs/heads/main","repository":{"clone_url":"https://git.example/org/app.git"}}`, ""},
		{`{"ref":"refs/tags/v1.0.0","repository":{"clone_url":"https://git.example/org/app.git"}}`, ""},
		{`{"ref":"refs/heads/dev","project":{"git_ssh_url":"git@git.example:org/other.git"}}`, ""},
		{`{"project":{"git_ssh_url":"git@git.example:org/app.git"}}`, ""},
		{`{"repository":{"html_url":"HTTPS://GIT.EXAMPLE/org/app/"}}`, "sha256=zz"},
		{`{"repository":{"clone_url":"https://git.example/org/other.git"}}`, "sha1=ab"},
		{`{"repository":{"url":{"nested":true}}}`, "sha256="},
		{`not json`, "sha256=" + strings.Repeat("a", 64)},
	} {
		f.Add([]byte(seed.body), seed.sig)
	}
	const secret = "fuzz-secret"
	sources := map[string]string{"app": "https://git.example/org/app.git", "other": "ssh://git@git.example:2222/org/other"}
	listed := []config.Source{onBranch("app", sources["app"], "main"), gitSource("other", sources["other"], config.GitRef{Semver: "^1"})}
	f.Fuzz(func(t *testing.T, body []byte, sig string) {
		rec := pollerOf(listed...)
		h := NewHandler(func() ([]byte, error) { return []byte(secret), nil }, []Poller{rec}, nil)
		send := func(sig string) int {
			req := httptest.NewRequest(http.MethodPost, "/webhook/github", strings.NewReader(string(body)))
			req.Header.Set("X-GitHub-Event", "push")
			req.Header.Set("X-Hub-Signature-256", sig)
			w := httptest.NewRecorder()
			h.ServeHTTP(w, req)
			return w.Code
		}
		valid := "sha256=" + sign(secret, string(body))
		if sig != valid {
			send(sig)
			if len(rec.triggered) > 0 {
				t.Fatalf("a payload with signature %q triggered %v", sig, rec.triggered)
			}
		}
		send(valid)
		if len(rec.triggered) == 0 {
			return
		}
		p, err := parsePayload(body)
		if err != nil {
			t.Fatalf("triggered %v from a payload that is not JSON: %v", rec.triggered, err)
		}
		urls, ref := p.repositoryURLs(), parseRef(p.str("ref"))
		for _, src := range listed {
			if slices.Contains(rec.triggered, src.Name) && !ref.moves(src.Git) {
				t.Fatalf("triggered source %s, which does not follow %q", src.Name, ref.full)
			}
		}
		for _, name := range rec.triggered {
			named := false
			for _, u := range urls {
				named = named || SameRepository(u, sources[name])
			}
			if !named {
				t.Fatalf("triggered source %s (%s), which none of %q names", name, sources[name], urls)
			}
		}
	})
}
