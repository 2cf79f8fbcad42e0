package source

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ProtonMail/go-crypto/openpgp"
	"github.com/ProtonMail/go-crypto/openpgp/armor"
	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/google/go-cmp/cmp"
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

// forgeCommit stores a copy of commit sha, keeping its signature but with
// message msg, points main at it and returns its SHA: the signature is
// made by the same key but over other content.
func (u *upstream) forgeCommit(sha, msg string) string {
	u.t.Helper()
	repo, err := git.PlainOpen(u.work)
	if err != nil {
		u.t.Fatal(err)
	}
	c, err := repo.CommitObject(plumbingHash(sha))
	if err != nil {
		u.t.Fatal(err)
	}
	if c.PGPSignature == "" {
		u.t.Fatalf("commit %s is not signed", sha)
	}
	forged := *c
	forged.Message = msg
	obj := repo.Storer.NewEncodedObject()
	if err := forged.Encode(obj); err != nil {
		u.t.Fatal(err)
	}
	h, err := repo.Storer.SetEncodedObject(obj)
	if err != nil {
		u.t.Fatal(err)
	}
	if err := repo.Storer.SetReference(plumbing.NewHashReference(plumbing.NewBranchReferenceName("main"), h)); err != nil {
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
	s := newSource(t, Spec{URL: srv.url(), Branch: "main", Verify: &Verify{Mode: VerifyHead, KeysFile: keysFile}})
	rev, _ := poll(t, s)
	if rev.SHA != signed || !strings.Contains(rev.Signer, "Release Bot") {
		t.Fatalf("signed commit: SHA %s signer %q, want %s by Release Bot", rev.SHA, rev.Signer, signed)
	}

	// Each case pushes a commit that must be refused and returns its SHA
	// and a phrase the error must contain.
	tests := map[string]func(name string) (sha, want string){
		"unsigned": func(name string) (string, string) {
			return u.goGitCommit(name, map[string]string{"f": name}, nil), "is not signed"
		},
		"signed by stranger": func(name string) (string, string) {
			return u.goGitCommit(name, map[string]string{"f": name}, stranger), "unknown entity"
		},
		"trusted signature over other content": func(name string) (string, string) {
			orig := u.goGitCommit(name, map[string]string{"f": name}, trusted)
			return u.forgeCommit(orig, "forged: "+name), "invalid signature"
		},
	}
	for name, bad := range tests {
		t.Run(name, func(t *testing.T) {
			sha, want := bad(name)
			u.push("main")
			e := pollErr(t, s, KindVerification)
			if !strings.Contains(e.Error(), sha) || !strings.Contains(e.Error(), want) {
				t.Errorf("error %q does not name commit %s and say %q", e, sha, want)
			}
			if last, _ := s.Last(); last != rev || !isDir(last.Dir) {
				t.Errorf("Last() = %s, want %s still in force with its tree", last.SHA, signed)
			}
		})
	}

	next := u.goGitCommit("signed again", map[string]string{"f": "ok"}, trusted)
	u.push("main")
	if rev, res := poll(t, s); rev.SHA != next || res.Moved != Updated {
		t.Errorf("after a signed commit: %s %v, want %s Updated", rev.SHA, res.Moved, next)
	}
}

func TestPollVerifiesTags(t *testing.T) {
	trusted, trustedArmor := newPGPKey(t, "Release Bot")
	_, otherArmor := newPGPKey(t, "Other Team")
	// Two exports concatenated: the trusted key is in the second block.
	keysFile := writeFile(t, filepath.Join(t.TempDir(), "keys.asc"), otherArmor+"\n"+trustedArmor)
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
			s := newSource(t, Spec{URL: srv.url(), Tag: tc.tag, Verify: &Verify{Mode: VerifyTag, KeysFile: keysFile}})
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

func TestPollVerifyKeysFileErrors(t *testing.T) {
	trusted, trustedArmor := newPGPKey(t, "Release Bot")
	var emptyBlock bytes.Buffer
	w, err := armor.Encode(&emptyBlock, openpgp.PublicKeyType, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	keysFile := writeFile(t, filepath.Join(t.TempDir(), "keys.asc"), trustedArmor)

	u := newUpstream(t)
	u.commit("base", nil)
	u.goGitCommit("signed", map[string]string{"f": "1"}, trusted)
	u.push("main")
	srv := newHTTPServer(t, u, "")
	s := newSource(t, Spec{URL: srv.url(), Branch: "main", Verify: &Verify{Mode: VerifyHead, KeysFile: keysFile}})
	rev, _ := poll(t, s)
	// A new signed commit: every case below must refuse it for the keys
	// file alone.
	next := u.goGitCommit("signed too", map[string]string{"f": "2"}, trusted)
	u.push("main")

	// Each case turns keysFile into something unusable; want is what the
	// error must say besides naming the file.
	tests := map[string]struct {
		setup func() error
		want  string
	}{
		"missing":           {setup: func() error { return nil }, want: "no such file"},
		"a directory":       {setup: func() error { return os.Mkdir(keysFile, 0o755) }, want: "is a directory"},
		"empty":             {setup: func() error { return os.WriteFile(keysFile, nil, 0o600) }, want: "holds no armored OpenPGP public keys"},
		"not armored":       {setup: func() error { return os.WriteFile(keysFile, []byte("ssh-ed25519 AAAA\n"), 0o600) }, want: "holds no armored OpenPGP public keys"},
		"empty armor block": {setup: func() error { return os.WriteFile(keysFile, emptyBlock.Bytes(), 0o600) }, want: "holds no armored OpenPGP public keys"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if err := os.RemoveAll(keysFile); err != nil {
				t.Fatal(err)
			}
			if err := tc.setup(); err != nil {
				t.Fatal(err)
			}
			e := pollErr(t, s, KindVerification)
			if msg := e.Error(); !strings.Contains(msg, "git.verify.keysFile "+keysFile) || !strings.Contains(msg, tc.want) {
				t.Errorf("error %q does not name git.verify.keysFile %s and say %q", msg, keysFile, tc.want)
			}
			if last, _ := s.Last(); last != rev || !isDir(last.Dir) {
				t.Errorf("Last() = %s, want %s still in force with its tree", last.SHA, rev.SHA)
			}
		})
	}

	if err := os.RemoveAll(keysFile); err != nil {
		t.Fatal(err)
	}
	writeFile(t, keysFile, trustedArmor)
	if got, res := poll(t, s); got.SHA != next || res.Moved != Updated {
		t.Errorf("with the keys file restored: %s %v, want %s Updated", got.SHA, res.Moved, next)
	}
}

func TestPollVerifyTagKeepsPreviousOnUnsignedTag(t *testing.T) {
	trusted, trustedArmor := newPGPKey(t, "Release Bot")
	keysFile := writeFile(t, filepath.Join(t.TempDir(), "keys.asc"), trustedArmor)
	u := newUpstream(t)
	c1 := u.commit("one", map[string]string{"f": "1"})
	u.goGitTag("v1.0.0", c1, trusted)
	u.push("main", "--tags")
	srv := newHTTPServer(t, u, "")
	s := newSource(t, Spec{URL: srv.url(), Semver: ">=1.0.0", Verify: &Verify{Mode: VerifyTag, KeysFile: keysFile}})
	rev, _ := poll(t, s)
	if rev.SHA != c1 || rev.Tag != "v1.0.0" || !strings.Contains(rev.Signer, "Release Bot") {
		t.Fatalf("first poll = %s %s signer %q, want %s v1.0.0 by Release Bot", rev.SHA, rev.Tag, rev.Signer, c1)
	}

	// Newer tags that are not signed by a listed key never take over.
	tests := []struct {
		tag  string
		push func(tag, sha string)
		want string
	}{
		{tag: "v1.1.0", push: func(tag, sha string) { u.goGitTag(tag, sha, nil) }, want: "tag v1.1.0 is not signed"},
		{tag: "v1.2.0", push: func(tag, sha string) { u.git("tag", tag, sha) }, want: "tag v1.2.0 is a lightweight tag"},
	}
	for _, tc := range tests {
		t.Run(tc.tag, func(t *testing.T) {
			c := u.commit("for "+tc.tag, map[string]string{"f": tc.tag})
			tc.push(tc.tag, c)
			u.push("main", "--tags")
			e := pollErr(t, s, KindVerification)
			if !strings.Contains(e.Error(), tc.want) {
				t.Errorf("error %q does not say %q", e, tc.want)
			}
			if last, _ := s.Last(); last != rev || readTree(t, last.Dir)["f"] != "1" {
				t.Errorf("Last() = %s %s, want %s v1.0.0 still in force with its tree", last.SHA, last.Tag, c1)
			}
		})
	}

	c4 := u.commit("four", map[string]string{"f": "4"})
	u.goGitTag("v1.3.0", c4, trusted)
	u.push("main", "--tags")
	if got, res := poll(t, s); got.SHA != c4 || got.Tag != "v1.3.0" || res.Moved != Updated {
		t.Errorf("after a signed v1.3.0: %s %s %v, want %s v1.3.0 Updated", got.SHA, got.Tag, res.Moved, c4)
	}
}

func TestReadKeysReadsEveryBlock(t *testing.T) {
	a, aArmor := newPGPKey(t, "Alice Admin")
	b, bArmor := newPGPKey(t, "Bob Builder")
	var sig bytes.Buffer
	if err := openpgp.ArmoredDetachSign(&sig, a, strings.NewReader("x"), nil); err != nil {
		t.Fatal(err)
	}
	tests := map[string]struct {
		in      string
		wantIDs []string // key IDs read, in order
		wantErr string
	}{
		"one block":              {in: aArmor, wantIDs: []string{a.PrimaryKey.KeyIdString()}},
		"two concatenated":       {in: "# team keys\n" + aArmor + "\n\n" + bArmor, wantIDs: []string{a.PrimaryKey.KeyIdString(), b.PrimaryKey.KeyIdString()}},
		"nothing armored":        {in: "just text\n", wantErr: "no armored data found"},
		"a signature, not a key": {in: aArmor + sig.String(), wantErr: "armored block 2: openpgp: invalid argument: expected public or private key block"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got, err := readKeys([]byte(tc.in))
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("readKeys error = %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			ring, err := openpgp.ReadArmoredKeyRing(strings.NewReader(got))
			if err != nil {
				t.Fatalf("re-armored keys do not parse: %v", err)
			}
			var ids []string
			for _, e := range ring {
				ids = append(ids, e.PrimaryKey.KeyIdString())
			}
			if diff := cmp.Diff(tc.wantIDs, ids); diff != "" {
				t.Errorf("key IDs (-want +got):\n%s", diff)
			}
		})
	}
}

func TestPollVerifyTagRefusesReplayedTag(t *testing.T) {
	trusted, trustedArmor := newPGPKey(t, "Release Bot")
	keysFile := writeFile(t, filepath.Join(t.TempDir(), "keys.asc"), trustedArmor)

	// Each case follows a ref that resolves to signed v2.0.0 at first;
	// then someone who can push refs points replay (a tag ref) at the
	// signed tag object of the older v1.0.0.
	tests := map[string]struct {
		git    Spec
		replay string
	}{
		"tag moved to an older signed tag object":      {git: Spec{Tag: "v2.0.0"}, replay: "v2.0.0"},
		"newer semver tag made of an older tag object": {git: Spec{Semver: ">=1.0.0"}, replay: "v9.0.0"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			u := newUpstream(t)
			c1 := u.commit("one", map[string]string{"f": "1"})
			u.goGitTag("v1.0.0", c1, trusted)
			c2 := u.commit("two", map[string]string{"f": "2"})
			u.goGitTag("v2.0.0", c2, trusted)
			u.push("main", "--tags")
			srv := newHTTPServer(t, u, "")
			g := tc.git
			g.URL = srv.url()
			g.Verify = &Verify{Mode: VerifyTag, KeysFile: keysFile}
			s := newSource(t, g)
			rev, _ := poll(t, s)
			if rev.SHA != c2 || rev.Tag != "v2.0.0" {
				t.Fatalf("first poll = %s %s, want %s v2.0.0", rev.SHA, rev.Tag, c2)
			}

			oldTagObject := u.git("rev-parse", "refs/tags/v1.0.0")
			u.git("update-ref", "refs/tags/"+tc.replay, oldTagObject)
			u.push("-f", "refs/tags/"+tc.replay)
			e := pollErr(t, s, KindVerification)
			for _, want := range []string{"refs/tags/" + tc.replay, oldTagObject, `named "v1.0.0", not "` + tc.replay + `"`, "a replayed tag", "delete refs/tags/" + tc.replay} {
				if !strings.Contains(e.Error(), want) {
					t.Errorf("error %q does not say %q", e, want)
				}
			}
			if last, _ := s.Last(); last != rev || readTree(t, last.Dir)["f"] != "2" {
				t.Errorf("Last() = %s %s, want %s v2.0.0 still in force with its tree", last.SHA, last.Tag, c2)
			}
		})
	}
}
