package source

import (
	"bytes"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/cgi"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	gliderssh "github.com/gliderlabs/ssh"
	"github.com/go-git/go-git/v5/plumbing"
	gossh "golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"
)

// gitEnv is the environment for the git CLI in tests: no user or system
// config, fixed identities, no signing.
func gitEnv(home string) []string {
	env := []string{
		"HOME=" + home,
		"GIT_CONFIG_NOSYSTEM=1",
		"GIT_CONFIG_GLOBAL=" + filepath.Join(home, "gitconfig"),
		"GIT_AUTHOR_NAME=Ann Author",
		"GIT_AUTHOR_EMAIL=ann@example.com",
		"GIT_COMMITTER_NAME=Carl Committer",
		"GIT_COMMITTER_EMAIL=carl@example.com",
		"GIT_TERMINAL_PROMPT=0",
		"PATH=" + os.Getenv("PATH"),
	}
	return env
}

// upstream is a bare repository served by the test servers plus a work
// tree that commits and pushes to it with the git CLI.
type upstream struct {
	t    testing.TB
	home string
	root string // GIT_PROJECT_ROOT
	bare string // root/repo.git
	work string
}

func newUpstream(t testing.TB) *upstream {
	t.Helper()
	base := t.TempDir()
	u := &upstream{t: t, home: filepath.Join(base, "home"), root: filepath.Join(base, "srv"), work: filepath.Join(base, "work")}
	u.bare = filepath.Join(u.root, "repo.git")
	for _, d := range []string{u.home, u.root, u.work} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	u.run(u.root, "init", "-q", "--bare", u.bare)
	u.run(u.work, "init", "-q")
	u.run(u.work, "remote", "add", "origin", u.bare)
	return u
}

// run runs git in dir and returns its trimmed stdout.
func (u *upstream) run(dir string, args ...string) string {
	u.t.Helper()
	full := append([]string{"-c", "commit.gpgsign=false", "-c", "tag.gpgsign=false", "-c", "init.defaultBranch=main", "-c", "protocol.file.allow=always"}, args...)
	cmd := exec.Command("git", full...)
	cmd.Dir = dir
	cmd.Env = gitEnv(u.home)
	out, err := cmd.CombinedOutput()
	if err != nil {
		u.t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}

func (u *upstream) git(args ...string) string { u.t.Helper(); return u.run(u.work, args...) }

// commit writes files (a nil-string value deletes... use "" for empty) and
// commits them, returning the new SHA.
func (u *upstream) commit(msg string, files map[string]string) string {
	u.t.Helper()
	for name, content := range files {
		p := filepath.Join(u.work, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			u.t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			u.t.Fatal(err)
		}
	}
	u.git("add", "-A")
	u.git("commit", "-q", "--allow-empty", "-m", msg)
	return u.git("rev-parse", "HEAD")
}

func (u *upstream) push(args ...string) {
	u.t.Helper()
	u.git(append([]string{"push", "-q", "origin"}, args...)...)
}

// httpServer serves root over git smart HTTP through git http-backend, with
// basic auth (when token is set) and counters.
type httpServer struct {
	*httptest.Server
	token atomic.Pointer[string]

	mu        sync.Mutex
	infoRefs  int
	packPosts int
	packBytes int64 // bytes of upload-pack responses
	allBytes  int64 // bytes of all responses
	hangup    atomic.Bool
	// echoAuth makes every request fail with 401 and a body that echoes
	// the Authorization header and the password it carries, the way a
	// careless proxy might.
	echoAuth atomic.Bool
	// cutPack makes upload-pack responses stop halfway: the headers
	// announce the whole body, half of it is sent, then the connection is
	// closed. cuts records each cut response.
	cutPack atomic.Bool
	cuts    []cutResponse
}

// cutResponse records one upload-pack response cut by cutPack.
type cutResponse struct {
	full, sent int // body bytes the server had and sent
	packAt     int // offset of the "PACK" signature in the body; -1 if none
}

func newHTTPServer(t testing.TB, u *upstream, token string) *httpServer {
	t.Helper()
	execPath, err := exec.Command("git", "--exec-path").Output()
	if err != nil {
		t.Fatal(err)
	}
	backend := &cgi.Handler{
		Path:   filepath.Join(strings.TrimSpace(string(execPath)), "git-http-backend"),
		Root:   "/",
		Stderr: io.Discard,
		Env:    append(gitEnv(u.home), "GIT_PROJECT_ROOT="+u.root, "GIT_HTTP_EXPORT_ALL=1", "GIT_TRACE_PACKET="+os.Getenv("TEST_TRACE_PACKET"), "GIT_TRACE="+os.Getenv("TEST_TRACE")),
	}
	s := &httpServer{}
	s.token.Store(&token)
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if s.echoAuth.Load() {
			_, pass, _ := r.BasicAuth()
			w.Header().Set("WWW-Authenticate", `Basic realm="git"`)
			w.WriteHeader(http.StatusUnauthorized)
			fmt.Fprintf(w, "denied\nAuthorization: %s\npassword: %s\n", r.Header.Get("Authorization"), pass)
			return
		}
		if tok := *s.token.Load(); tok != "" {
			user, pass, ok := r.BasicAuth()
			if !ok || user != "git" || pass != tok {
				w.Header().Set("WWW-Authenticate", `Basic realm="git"`)
				http.Error(w, "unauthorized", http.StatusUnauthorized)
				return
			}
		}
		isPack := r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/git-upload-pack")
		s.mu.Lock()
		if r.Method == http.MethodGet && strings.HasSuffix(r.URL.Path, "/info/refs") {
			s.infoRefs++
		}
		if isPack {
			s.packPosts++
		}
		s.mu.Unlock()
		if isPack && s.hangup.Load() {
			conn, _, err := w.(http.Hijacker).Hijack()
			if err == nil {
				conn.Close()
			}
			return
		}
		if isPack && s.cutPack.Load() {
			s.serveCut(w, r, backend)
			return
		}
		cw := &countingWriter{ResponseWriter: w}
		backend.ServeHTTP(cw, r)
		s.mu.Lock()
		if isPack {
			s.packBytes += cw.n
		}
		s.allBytes += cw.n
		s.mu.Unlock()
	}))
	t.Cleanup(s.Close)
	return s
}

// serveCut runs the backend into a buffer, then sends the status, the
// headers (with the whole body's Content-Length) and the first half of the
// body, and closes the connection: a server dying mid-pack.
func (s *httpServer) serveCut(w http.ResponseWriter, r *http.Request, backend http.Handler) {
	rec := httptest.NewRecorder()
	backend.ServeHTTP(rec, r)
	body := rec.Body.Bytes()
	cut := cutResponse{full: len(body), sent: len(body) / 2, packAt: bytes.Index(body, []byte("PACK"))}
	conn, buf, err := w.(http.Hijacker).Hijack()
	if err != nil {
		return
	}
	defer conn.Close()
	fmt.Fprintf(buf, "HTTP/1.1 %d %s\r\nContent-Type: %s\r\nContent-Length: %d\r\n\r\n",
		rec.Code, http.StatusText(rec.Code), rec.Header().Get("Content-Type"), len(body))
	_, _ = buf.Write(body[:cut.sent])
	_ = buf.Flush()
	s.mu.Lock()
	s.cuts = append(s.cuts, cut)
	s.mu.Unlock()
}

// takeCuts returns and forgets the responses cut so far.
func (s *httpServer) takeCuts() []cutResponse {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.cuts
	s.cuts = nil
	return c
}

func (s *httpServer) url() string { return s.URL + "/repo.git" }

// totalBytes returns the bytes of all responses so far.
func (s *httpServer) totalBytes() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.allBytes
}

// counts returns and resets the request counters.
func (s *httpServer) counts() (infoRefs, packPosts int, packBytes int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	infoRefs, packPosts, packBytes = s.infoRefs, s.packPosts, s.packBytes
	s.infoRefs, s.packPosts, s.packBytes = 0, 0, 0
	return
}

type countingWriter struct {
	http.ResponseWriter
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.ResponseWriter.Write(p)
	c.n += int64(n)
	return n, err
}

// sshServer serves root over SSH, running git-upload-pack for the
// session's command. Only clientKey may log in.
type sshServer struct {
	addr    string
	hostPub gossh.PublicKey
}

func newSSHServer(t testing.TB, u *upstream, clientKey gossh.PublicKey) *sshServer {
	t.Helper()
	_, hostPriv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	signer, err := gossh.NewSignerFromKey(hostPriv)
	if err != nil {
		t.Fatal(err)
	}
	srv := &gliderssh.Server{
		Handler: func(s gliderssh.Session) {
			args := s.Command()
			if len(args) != 2 || args[0] != "git-upload-pack" {
				_, _ = s.Stderr().Write([]byte("only git-upload-pack is served\n"))
				_ = s.Exit(1)
				return
			}
			repo := filepath.Join(u.root, filepath.Clean("/"+strings.Trim(args[1], "'")))
			cmd := exec.Command("git-upload-pack", repo)
			cmd.Env = gitEnv(u.home)
			cmd.Stdin, cmd.Stdout, cmd.Stderr = s, s, s.Stderr()
			code := 0
			if err := cmd.Run(); err != nil {
				code = 1
			}
			_ = s.Exit(code)
		},
		PublicKeyHandler: func(ctx gliderssh.Context, key gliderssh.PublicKey) bool {
			return gliderssh.KeysEqual(key, clientKey)
		},
	}
	srv.AddHostKey(signer)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	return &sshServer{addr: ln.Addr().String(), hostPub: signer.PublicKey()}
}

func (s *sshServer) url() string { return "ssh://git@" + s.addr + "/repo.git" }

// knownHostsLine returns a known_hosts line for addr with key.
func knownHostsLine(addr string, key gossh.PublicKey) string {
	return knownhosts.Line([]string{knownhosts.Normalize(addr)}, key) + "\n"
}

// newClientKey writes an OpenSSH private key file and returns its path and
// public key.
func newClientKey(t testing.TB, dir string) (string, gossh.PublicKey) {
	t.Helper()
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	block, err := gossh.MarshalPrivateKey(priv, "test")
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, "id_ed25519")
	if err := os.WriteFile(p, pem.EncodeToMemory(block), 0o600); err != nil {
		t.Fatal(err)
	}
	sshPub, err := gossh.NewPublicKey(pub)
	if err != nil {
		t.Fatal(err)
	}
	return p, sshPub
}

func writeFile(t testing.TB, p, content string) string {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func plumbingHash(s string) plumbing.Hash { return plumbing.NewHash(s) }
