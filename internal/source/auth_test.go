package source

import (
	"crypto/ed25519"
	"crypto/rand"
	"path/filepath"
	"strings"
	"testing"

	gossh "golang.org/x/crypto/ssh"
)

func TestPollOverSSHChecksHostKey(t *testing.T) {
	u := newUpstream(t)
	want := u.commit("one", map[string]string{"f": "1"})
	u.push("main")
	dir := t.TempDir()
	keyFile, clientPub := newClientKey(t, dir)
	srv := newSSHServer(t, u, clientPub)

	_, otherPriv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	otherSigner, err := gossh.NewSignerFromKey(otherPriv)
	if err != nil {
		t.Fatal(err)
	}
	otherKeyFile, _ := newClientKey(t, t.TempDir())

	tests := map[string]struct {
		knownHosts string
		keyFile    string
		wantKind   Kind
	}{
		"known host":                  {knownHosts: knownHostsLine(srv.addr, srv.hostPub), keyFile: keyFile},
		"unknown host key is refused": {knownHosts: knownHostsLine(srv.addr, otherSigner.PublicKey()), keyFile: keyFile, wantKind: KindHostKey},
		"host not listed is refused":  {knownHosts: knownHostsLine("127.0.0.2:22", srv.hostPub), keyFile: keyFile, wantKind: KindHostKey},
		"client key not authorized":   {knownHosts: knownHostsLine(srv.addr, srv.hostPub), keyFile: otherKeyFile, wantKind: KindAuth},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			kh := writeFile(t, filepath.Join(t.TempDir(), "known_hosts"), tc.knownHosts)
			s := newSource(t, Spec{URL: srv.url(), Branch: "main", Auth: &Auth{SSHKeyFile: tc.keyFile, KnownHostsFile: kh}})
			if tc.wantKind != "" {
				e := pollErr(t, s, tc.wantKind)
				if strings.Contains(e.Error(), "PRIVATE KEY") {
					t.Errorf("error %q shows key material", e)
				}
				return
			}
			rev, _ := poll(t, s)
			if rev.SHA != want {
				t.Errorf("SHA = %s, want %s", rev.SHA, want)
			}
			if strings.Contains(rev.URL, "git@") {
				t.Errorf("revision URL %q keeps userinfo", rev.URL)
			}
		})
	}
}
