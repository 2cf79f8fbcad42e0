package gitserver

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/cgi"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"
)

// Server serves every bare repository below Root at URL/<name>.
type Server struct {
	// URL is the server's base URL, such as http://127.0.0.1:40123.
	URL string
	// Root holds the bare repositories.
	Root string

	home     string
	srv      *http.Server
	down     atomic.Bool
	requests atomic.Int64
	auth     atomic.Pointer[string] // the Authorization header required, if set
}

// Start serves root (created if missing) on a free loopback port.
func Start(root string) (*Server, error) {
	if err := os.MkdirAll(root, 0o755); err != nil {
		return nil, fmt.Errorf("gitserver: %w", err)
	}
	out, err := exec.Command("git", "--exec-path").Output()
	if err != nil {
		return nil, fmt.Errorf("gitserver: git --exec-path: %w (is git installed?)", err)
	}
	home := filepath.Join(root, ".home")
	if err := os.MkdirAll(home, 0o755); err != nil {
		return nil, fmt.Errorf("gitserver: %w", err)
	}
	s := &Server{Root: root, home: home}
	backend := &cgi.Handler{
		Path:   filepath.Join(strings.TrimSpace(string(out)), "git-http-backend"),
		Root:   "/",
		Stderr: io.Discard,
		Env:    append(Env(home), "GIT_PROJECT_ROOT="+root, "GIT_HTTP_EXPORT_ALL=1"),
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("gitserver: %w", err)
	}
	s.URL = "http://" + l.Addr().String()
	s.srv = &http.Server{
		ReadHeaderTimeout: 10 * time.Second,
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			s.requests.Add(1)
			if s.down.Load() {
				http.Error(w, "git server is down (simulated outage)", http.StatusServiceUnavailable)
				return
			}
			if want := s.auth.Load(); want != nil && r.Header.Get("Authorization") != *want {
				w.Header().Set("WWW-Authenticate", `Basic realm="git"`)
				http.Error(w, "authentication required", http.StatusUnauthorized)
				return
			}
			backend.ServeHTTP(w, r)
		}),
	}
	go func() { _ = s.srv.Serve(l) }()
	return s, nil
}

// RequireBasic makes every request without HTTP basic auth for user and
// password fail with 401, as a Git host does for a private repository.
func (s *Server) RequireBasic(user, password string) {
	h := "Basic " + base64.StdEncoding.EncodeToString([]byte(user+":"+password))
	s.auth.Store(&h)
}

// SetDown makes every request fail with 503 Service Unavailable (true) or
// be served again (false).
func (s *Server) SetDown(down bool) { s.down.Store(down) }

// Requests returns how many HTTP requests the server has received.
func (s *Server) Requests() int64 { return s.requests.Load() }

// Close stops the server.
func (s *Server) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return s.srv.Shutdown(ctx)
}

// Repo is a bare repository on the server plus a work tree that commits
// to it.
type Repo struct {
	// URL is the clone URL.
	URL string
	// Bare is the bare repository's directory.
	Bare string
	// Work is the work tree's directory.
	Work string

	home string
}

// NewRepo creates the bare repository Root/<name>.git, served at
// URL/<name>.git, and a work tree for it in work (created if missing).
func (s *Server) NewRepo(name, work string) (*Repo, error) {
	r := &Repo{
		URL:  s.URL + "/" + name + ".git",
		Bare: filepath.Join(s.Root, name+".git"),
		Work: work,
		home: s.home,
	}
	if err := os.MkdirAll(work, 0o755); err != nil {
		return nil, fmt.Errorf("gitserver: %w", err)
	}
	if _, err := r.run(s.Root, "init", "-q", "--bare", "-b", "main", r.Bare); err != nil {
		return nil, err
	}
	if _, err := r.Git("init", "-q", "-b", "main"); err != nil {
		return nil, err
	}
	if _, err := r.Git("remote", "add", "origin", r.Bare); err != nil {
		return nil, err
	}
	return r, nil
}

// Git runs git in the work tree and returns its trimmed output.
func (r *Repo) Git(args ...string) (string, error) { return r.run(r.Work, args...) }

func (r *Repo) run(dir string, args ...string) (string, error) {
	full := append([]string{"-c", "commit.gpgsign=false", "-c", "tag.gpgsign=false", "-c", "core.hooksPath=/dev/null"}, args...)
	cmd := exec.Command("git", full...)
	cmd.Dir = dir
	cmd.Env = Env(r.home)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("git %s: %w\n%s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out)), nil
}

// Commit writes files (path relative to the work tree → content; a nil
// value deletes the file), commits everything on the current branch and
// pushes it. It returns the new commit's SHA.
func (r *Repo) Commit(msg string, files map[string][]byte) (string, error) {
	for name, content := range files {
		p := filepath.Join(r.Work, filepath.FromSlash(name))
		if content == nil {
			if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
				return "", fmt.Errorf("gitserver: %w", err)
			}
			continue
		}
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return "", fmt.Errorf("gitserver: %w", err)
		}
		if err := os.WriteFile(p, content, 0o644); err != nil {
			return "", fmt.Errorf("gitserver: %w", err)
		}
	}
	if _, err := r.Git("add", "-A"); err != nil {
		return "", err
	}
	if _, err := r.Git("commit", "-q", "--allow-empty", "-m", msg); err != nil {
		return "", err
	}
	branch, err := r.Git("rev-parse", "--abbrev-ref", "HEAD")
	if err != nil {
		return "", err
	}
	if _, err := r.Git("push", "-q", "origin", branch); err != nil {
		return "", err
	}
	return r.Git("rev-parse", "HEAD")
}

// Env is the environment git runs with: HOME set to home, no system or
// global configuration, fixed identities, no prompts.
func Env(home string) []string {
	return []string{
		"HOME=" + home,
		"GIT_CONFIG_NOSYSTEM=1",
		"GIT_CONFIG_GLOBAL=" + filepath.Join(home, "gitconfig"),
		"GIT_AUTHOR_NAME=syncd test",
		"GIT_AUTHOR_EMAIL=test@syncd.invalid",
		"GIT_COMMITTER_NAME=syncd test",
		"GIT_COMMITTER_EMAIL=test@syncd.invalid",
		"GIT_TERMINAL_PROMPT=0",
		"PATH=" + os.Getenv("PATH"),
	}
}
