package source

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ProtonMail/go-crypto/openpgp"
	"github.com/ProtonMail/go-crypto/openpgp/armor"
	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing/object"

	"syncd.dev/syncd/internal/config"
)

func newPGPKey(t testing.TB, name string) (*openpgp.Entity, string) {
	t.Helper()
	e, err := openpgp.NewEntity(name, "", strings.ToLower(strings.Fields(name)[0])+"@example.com", nil)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	w, err := armor.Encode(&buf, openpgp.PublicKeyType, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Serialize(w); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return e, buf.String()
}

// goGitCommit commits files in the work tree through go-git, signed with
// key when it is not nil, and returns the SHA.
func (u *upstream) goGitCommit(msg string, files map[string]string, key *openpgp.Entity) string {
	u.t.Helper()
	for name, content := range files {
		writeFile(u.t, filepath.Join(u.work, name), content)
	}
	repo, err := git.PlainOpen(u.work)
	if err != nil {
		u.t.Fatal(err)
	}
	wt, err := repo.Worktree()
	if err != nil {
		u.t.Fatal(err)
	}
	if err := wt.AddWithOptions(&git.AddOptions{All: true}); err != nil {
		u.t.Fatal(err)
	}
	sig := &object.Signature{Name: "Signer", Email: "signer@example.com", When: time.Now()}
	h, err := wt.Commit(msg, &git.CommitOptions{Author: sig, Committer: sig, SignKey: key, AllowEmptyCommits: true})
	if err != nil {
		u.t.Fatal(err)
	}
	return h.String()
}

func (u *upstream) goGitTag(name, sha string, key *openpgp.Entity) {
	u.t.Helper()
	repo, err := git.PlainOpen(u.work)
	if err != nil {
		u.t.Fatal(err)
	}
	sig := &object.Signature{Name: "Signer", Email: "signer@example.com", When: time.Now()}
	if _, err := repo.CreateTag(name, plumbingHash(sha), &git.CreateTagOptions{Tagger: sig, Message: "release " + name, SignKey: key}); err != nil {
		u.t.Fatal(err)
	}
}

func TestPollVerifiesSignatures(t *testing.T) {
	trusted, trustedArmor := newPGPKey(t, "Release Bot")
	stranger, _ := newPGPKey(t, "Mallory Stranger")
	keysFile := writeFile(t, filepath.Join(t.TempDir(), "keys.asc"), trustedArmor)

	u := newUpstream(t)
	u.commit("base", nil) // the git CLI names the branch main
	signed := u.goGitCommit("signed", map[string]string{"f": "signed"}, trusted)
	u.push("main")
	srv := newHTTPServer(t, u, "")
	s := newSource(t, config.GitSource{URL: srv.url(), Branch: "main", Verify: &config.GitVerify{Mode: config.VerifyHead, KeysFile: keysFile}})
	rev, _ := poll(t, s)
	if rev.SHA != signed || !strings.Contains(rev.Signer, "Release Bot") {
		t.Fatalf("signed commit: SHA %s signer %q, want %s by Release Bot", rev.SHA, rev.Signer, signed)
	}

	tests := map[string]*openpgp.Entity{
		"unsigned":           nil,
		"signed by stranger": stranger,
	}
	for name, key := range tests {
		t.Run(name, func(t *testing.T) {
			bad := u.goGitCommit(name, map[string]string{"f": name}, key)
			u.push("main")
			e := pollErr(t, s, KindVerification)
			if !strings.Contains(e.Error(), bad) {
				t.Errorf("error %q does not name commit %s", e, bad)
			}
			if last, _ := s.Last(); last.SHA != signed || !isDir(last.Dir) {
				t.Errorf("Last() = %s, want %s still in force", last.SHA, signed)
			}
		})
	}

	next := u.goGitCommit("signed again", map[string]string{"f": "ok"}, trusted)
	u.push("main")
	if rev, res := poll(t, s); rev.SHA != next || res.Change != Updated {
		t.Errorf("after a signed commit: %s %v, want %s Updated", rev.SHA, res.Change, next)
	}
}

func TestPollVerifiesTags(t *testing.T) {
	trusted, trustedArmor := newPGPKey(t, "Release Bot")
	keysFile := writeFile(t, filepath.Join(t.TempDir(), "keys.asc"), trustedArmor)
	u := newUpstream(t)
	c := u.commit("base", nil)
	u.goGitTag("v1.0.0", c, trusted)
	u.goGitTag("v1.1.0", c, nil)
	u.git("tag", "v1.2.0") // lightweight
	u.push("main", "--tags")
	srv := newHTTPServer(t, u, "")

	tests := map[string]struct {
		tag      string
		wantKind Kind
	}{
		"signed annotated tag":   {tag: "v1.0.0"},
		"unsigned annotated tag": {tag: "v1.1.0", wantKind: KindVerification},
		"lightweight tag":        {tag: "v1.2.0", wantKind: KindVerification},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			s := newSource(t, config.GitSource{URL: srv.url(), Tag: tc.tag, Verify: &config.GitVerify{Mode: config.VerifyTag, KeysFile: keysFile}})
			if tc.wantKind != "" {
				pollErr(t, s, tc.wantKind)
				return
			}
			rev, _ := poll(t, s)
			if rev.SHA != c || !strings.Contains(rev.Signer, "Release Bot") {
				t.Errorf("got %s signer %q, want %s by Release Bot", rev.SHA, rev.Signer, c)
			}
		})
	}
}
