package webhook

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
)

// maxBody bounds a push payload.
const maxBody = 5 << 20

// Triggerer polls a source now.
type Triggerer interface {
	Trigger(source string) error
}

// Handler serves POST /webhook/{github,gitlab,gitea}.
type Handler struct {
	// Secret returns the shared secret (re-read on each request so a
	// rotated secret works).
	Secret func() ([]byte, error)
	// Sources returns source name → Git URL of the running config.
	Sources func() map[string]string
	Trigger Triggerer

	received *prometheus.CounterVec
}

// NewHandler returns a Handler whose counters are registered on reg.
func NewHandler(secret func() ([]byte, error), sources func() map[string]string, t Triggerer, reg prometheus.Registerer) *Handler {
	h := &Handler{Secret: secret, Sources: sources, Trigger: t,
		received: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "syncd_webhook_requests_total",
			Help: "Push webhook requests by provider and result (triggered, ignored, unauthorized, bad_request).",
		}, []string{"provider", "result"})}
	if reg != nil {
		reg.MustRegister(h.received)
	}
	return h
}

// ServeHTTP implements http.Handler.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	provider := strings.TrimPrefix(r.URL.Path, "/webhook/")
	if r.Method != http.MethodPost {
		http.Error(w, "POST only", http.StatusMethodNotAllowed)
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, maxBody+1))
	if err != nil || len(body) > maxBody {
		h.count(provider, "bad_request")
		http.Error(w, "payload unreadable or too large", http.StatusBadRequest)
		return
	}
	secret, err := h.Secret()
	if err != nil || len(secret) == 0 {
		h.count(provider, "unauthorized")
		http.Error(w, "webhook secret not configured", http.StatusUnauthorized)
		return
	}
	if err := verify(provider, r.Header, body, secret); err != nil {
		h.count(provider, "unauthorized")
		http.Error(w, err.Error(), http.StatusUnauthorized)
		return
	}
	urls, err := repositoryURLs(body)
	if err != nil {
		h.count(provider, "bad_request")
		http.Error(w, "not a push payload: "+err.Error(), http.StatusBadRequest)
		return
	}
	var triggered []string
	for name, u := range h.Sources() {
		for _, pushed := range urls {
			if SameRepository(u, pushed) {
				if h.Trigger.Trigger(name) == nil {
					triggered = append(triggered, name)
				}
				break
			}
		}
	}
	if len(triggered) == 0 {
		h.count(provider, "ignored")
		w.WriteHeader(http.StatusAccepted)
		fmt.Fprintln(w, "no source matches the pushed repository")
		return
	}
	h.count(provider, "triggered")
	w.WriteHeader(http.StatusAccepted)
	fmt.Fprintf(w, "polling %s\n", strings.Join(triggered, ", "))
}

func (h *Handler) count(provider, result string) {
	if h.received != nil {
		h.received.WithLabelValues(provider, result).Inc()
	}
}

// verify checks the provider's authentication of the request.
func verify(provider string, hdr http.Header, body, secret []byte) error {
	switch provider {
	case "github":
		return verifyHMAC(hdr.Get("X-Hub-Signature-256"), "sha256=", body, secret)
	case "gitea":
		sig := hdr.Get("X-Gitea-Signature")
		if sig == "" {
			sig = hdr.Get("X-Hub-Signature-256")
			return verifyHMAC(sig, "sha256=", body, secret)
		}
		return verifyHMAC(sig, "", body, secret)
	case "gitlab":
		tok := hdr.Get("X-Gitlab-Token")
		if tok == "" || !hmac.Equal([]byte(tok), secret) {
			return errors.New("X-Gitlab-Token missing or wrong")
		}
		return nil
	}
	return fmt.Errorf("unknown provider %q: use /webhook/github, /webhook/gitlab or /webhook/gitea", provider)
}

func verifyHMAC(sig, prefix string, body, secret []byte) error {
	if sig == "" || !strings.HasPrefix(sig, prefix) {
		return errors.New("signature header missing")
	}
	got, err := hex.DecodeString(strings.TrimPrefix(sig, prefix))
	if err != nil {
		return errors.New("signature is not hex")
	}
	mac := hmac.New(sha256.New, secret)
	mac.Write(body)
	if !hmac.Equal(got, mac.Sum(nil)) {
		return errors.New("signature does not match")
	}
	return nil
}

// repositoryURLs returns every URL a push payload gives for its repository
// (GitHub/Gitea: repository.clone_url, ssh_url, html_url; GitLab:
// project.git_http_url, git_ssh_url, web_url, repository.*).
func repositoryURLs(body []byte) ([]string, error) {
	var p struct {
		Repository map[string]any `json:"repository"`
		Project    map[string]any `json:"project"`
	}
	if err := json.Unmarshal(body, &p); err != nil {
		return nil, err
	}
	var out []string
	for _, m := range []map[string]any{p.Repository, p.Project} {
		for _, k := range []string{"clone_url", "ssh_url", "html_url", "git_url", "git_http_url", "git_ssh_url", "web_url", "url", "homepage"} {
			if s, ok := m[k].(string); ok && s != "" {
				out = append(out, s)
			}
		}
	}
	if len(out) == 0 {
		return nil, errors.New("no repository URL in the payload")
	}
	return out, nil
}

// SameRepository reports whether two Git URLs name the same repository:
// host and path compared without scheme, userinfo, port, ".git" suffix,
// trailing slash or case ("git@host:org/repo.git" equals
// "https://host/org/repo").
func SameRepository(a, b string) bool {
	na, nb := normalize(a), normalize(b)
	return na != "" && na == nb
}

func normalize(raw string) string {
	s := strings.TrimSpace(raw)
	if !strings.Contains(s, "://") {
		// scp-like: user@host:path
		if at := strings.Index(s, "@"); at >= 0 {
			s = s[at+1:]
		}
		s = "ssh://" + strings.Replace(s, ":", "/", 1)
	}
	u, err := url.Parse(s)
	if err != nil {
		return ""
	}
	p := strings.TrimSuffix(strings.TrimSuffix(u.Path, "/"), ".git")
	return strings.ToLower(u.Hostname() + p)
}
