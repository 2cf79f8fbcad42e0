package webhook

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"syncd.dev/syncd/internal/config"
	"syncd.dev/syncd/internal/prom"
)

// DefaultMaxBody is the largest push payload a Handler reads, 1 MiB.
//
// The payload is read in full before its signature can be checked, so the
// limit is what any unauthenticated client can make syncd buffer per
// request. syncd needs only the repository URLs from it. A push of a few
// commits is a few KiB; GitHub lists at most 2048 commits in a push event
// and caps any payload at 25 MB, so only a push of hundreds of commits
// comes near 1 MiB. Such a push is refused with 413 and the next poll of
// the source picks the commit up anyway: a too-small limit costs latency,
// never a missed commit. (Flux's notification-controller caps every
// receiver type, container registries included, at 3 MiB.)
const DefaultMaxBody = 1 << 20

// Poller is one driver's part of the sources a push may poll: the
// daemon's (the config file's sources) or the App controller's (the
// GitSources its running Apps use). It lists only what this replica
// runs: a standby, or a shard that runs none of a source's apps, lists
// nothing, so a push it receives polls nothing.
type Poller interface {
	// Sources returns the sources the poller runs now, each with a name
	// unique among them, its URL and, for a Git source, the revision it
	// follows. The names are shown in the answer: never a URL.
	Sources() []config.Source
	// Trigger polls the named source now.
	Trigger(source string) error
}

// Handler serves POST /webhook/{github,gitlab,gitea}.
//
// Order of checks: method, provider, a configured secret and a well-formed
// signature header (or the GitLab token) — none of which reads the body —
// then the body, up to MaxBody (413 past it), then the HMAC over the body
// (401), then the JSON (400 when it is not a JSON object, or a push names
// no repository), and last whether the delivery was already received
// within the replay window (200, nothing polled). Only then does the event
// count: a push polls the sources of its repository that follow the
// pushed branch or tag; GitHub's ping and any other event are answered
// 200 and poll nothing.
type Handler struct {
	// Secret returns the shared secret (re-read on each request so a
	// rotated secret works).
	Secret func() ([]byte, error)
	// Pollers list and poll the sources a push may concern; every
	// poller's sources are matched with the push by the same rule
	// (matchPush), and a source is polled through the poller that
	// listed it.
	Pollers []Poller
	// MaxBody bounds the payload in bytes; 0 means DefaultMaxBody.
	MaxBody int64

	received *prometheus.CounterVec
	replays  *replayGuard
}

// NewHandler returns a Handler whose counters are registered on reg.
func NewHandler(secret func() ([]byte, error), pollers []Poller, reg prometheus.Registerer) *Handler {
	h := &Handler{Secret: secret, Pollers: pollers,
		received: prom.CounterVec("syncd_webhook_requests_total",
			"Push webhook requests by provider (github, gitlab, gitea, unknown) and result (triggered, ignored, ping, not_push, replayed, unauthorized, too_large, bad_request, not_found).",
			"provider", "result"),
		replays: newReplayGuard(DefaultReplayWindow, DefaultReplayCapacity, time.Now)}
	if reg != nil {
		reg.MustRegister(h.received)
	}
	return h
}

// result is an outcome counted in syncd_webhook_requests_total.
type result string

// Results counted in syncd_webhook_requests_total.
const (
	// resultTriggered: a push polled at least one source.
	resultTriggered result = "triggered"
	// resultIgnored: a push that concerns no source: none of its
	// repository, or none following the pushed branch or tag.
	resultIgnored result = "ignored"
	// resultPing: GitHub's ping, answered 200.
	resultPing result = "ping"
	// resultNotPush: an event other than a push or a ping, answered 200.
	resultNotPush      result = "not_push"
	resultReplayed     result = "replayed"
	resultUnauthorized result = "unauthorized"
	resultTooLarge     result = "too_large"
	resultBadRequest   result = "bad_request"
	resultNotFound     result = "not_found"
)

// ServeHTTP implements http.Handler.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	provider := strings.TrimPrefix(r.URL.Path, "/webhook/")
	if !knownProvider(provider) {
		// The label is the path a stranger chose: never a label value.
		h.count("unknown", resultNotFound)
		http.Error(w, fmt.Sprintf("unknown provider %q: use /webhook/github, /webhook/gitlab or /webhook/gitea", provider), http.StatusNotFound)
		return
	}
	if r.Method != http.MethodPost {
		http.Error(w, "POST only", http.StatusMethodNotAllowed)
		return
	}
	check, err := h.credentials(provider, r.Header)
	if err != nil {
		h.count(provider, resultUnauthorized)
		http.Error(w, err.Error(), http.StatusUnauthorized)
		return
	}
	body, status, err := readBody(w, r, h.maxBody())
	if err != nil {
		h.count(provider, resultFor(status))
		http.Error(w, err.Error(), status)
		return
	}
	if err := check.verify(body); err != nil {
		h.count(provider, resultUnauthorized)
		http.Error(w, err.Error(), http.StatusUnauthorized)
		return
	}
	d, err := parseDelivery(provider, r.Header, body)
	if err != nil {
		h.count(provider, resultBadRequest)
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	if !h.replays.first(deliveryKeys(provider, r.Header, body, !check.tokenChecked)) {
		// 200, not an error: GitLab disables a hook that keeps failing,
		// and a retry of a delivery that was received is no failure.
		h.reply(w, provider, answer{result: resultReplayed, code: http.StatusOK,
			text: fmt.Sprintf("delivery already received within the last %s: not polled again", h.replays.window)})
		return
	}
	h.reply(w, provider, h.serve(d))
}

// answer is what a verified delivery is told, and how it is counted.
type answer struct {
	result result
	code   int
	text   string
}

// serve acts on a verified, first delivery: a push polls the sources it
// concerns; a ping or another event polls nothing. Neither of the two is
// an error: 200, since GitHub marks a hook whose ping failed as failing,
// and GitLab disables a hook that keeps failing.
func (h *Handler) serve(d parsed) answer {
	switch d.event.kind {
	case pingEvent:
		return answer{result: resultPing, code: http.StatusOK,
			text: "ping received: this hook is set up; pushes poll the sources that follow the pushed branch or tag"}
	case otherEvent:
		return answer{result: resultNotPush, code: http.StatusOK,
			text: fmt.Sprintf("ignored: %s events do not trigger a poll", quoted(d.event.name))}
	}
	return h.servePush(d)
}

// servePush polls the sources a push can move. Whether it polled or
// not, a push is answered 202, as a standby replica answers it.
func (h *Handler) servePush(d parsed) answer {
	p := planPush(h.Pollers, d.urls, d.ref)
	switch {
	case p.ofRepository == 0:
		return ignoredPush("no source matches the pushed repository")
	case len(p.poll) == 0:
		return ignoredPush(fmt.Sprintf("no source follows %s of %s", quoted(d.ref.full), quoted(repositoryName(d.urls))))
	}
	polled := trigger(p.poll)
	if len(polled) == 0 {
		return ignoredPush("no source could be polled now; their next poll picks the push up")
	}
	return answer{result: resultTriggered, code: http.StatusAccepted, text: "polling " + strings.Join(polled, ", ")}
}

// ignoredPush is the answer to a push that polled nothing, and why.
func ignoredPush(why string) answer {
	return answer{result: resultIgnored, code: http.StatusAccepted, text: "ignored: " + why}
}

// reply writes a as plain text and counts it.
func (h *Handler) reply(w http.ResponseWriter, provider string, a answer) {
	h.count(provider, a.result)
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(a.code)
	fmt.Fprintln(w, a.text)
}

func (h *Handler) maxBody() int64 {
	if h.MaxBody > 0 {
		return h.MaxBody
	}
	return DefaultMaxBody
}

// credentials checks what the request claims before its body is read: a
// secret is configured and the provider's header is present and well
// formed (GitLab's token is checked in full).
func (h *Handler) credentials(provider string, hdr http.Header) (signature, error) {
	secret, err := h.Secret()
	if err != nil || len(secret) == 0 {
		return signature{}, errors.New("webhook secret not configured")
	}
	return parseSignature(provider, hdr, secret)
}

// readBody reads at most limit bytes of the body. A declared or actual
// length over limit is 413; the connection is closed after it.
func readBody(w http.ResponseWriter, r *http.Request, limit int64) ([]byte, int, error) {
	tooLarge := fmt.Errorf("payload over %d bytes", limit)
	if r.ContentLength > limit {
		return nil, http.StatusRequestEntityTooLarge, tooLarge
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, limit))
	var maxErr *http.MaxBytesError
	switch {
	case errors.As(err, &maxErr):
		return nil, http.StatusRequestEntityTooLarge, tooLarge
	case err != nil:
		return nil, http.StatusBadRequest, errors.New("payload unreadable")
	}
	return body, 0, nil
}

func resultFor(status int) result {
	if status == http.StatusRequestEntityTooLarge {
		return resultTooLarge
	}
	return resultBadRequest
}

// trigger polls each target now, through its poller, and returns the
// names of those it could.
func trigger(targets []pollTarget) []string {
	var polled []string
	for _, t := range targets {
		if t.poller.Trigger(t.source) == nil {
			polled = append(polled, t.source)
		}
	}
	return polled
}

func (h *Handler) count(provider string, r result) {
	if h.received != nil {
		h.received.WithLabelValues(provider, string(r)).Inc()
	}
}

func knownProvider(p string) bool {
	return p == "github" || p == "gitea" || p == "gitlab"
}

// signature is what a request presents, checked against the body once
// the body is read. The zero value verifies nothing.
type signature struct {
	mac    []byte
	secret []byte
	// tokenChecked: GitLab's token, compared with the secret already; it
	// does not cover the body.
	tokenChecked bool
}

// parseSignature reads the provider's header without the body: GitHub's
// X-Hub-Signature-256 ("sha256=" + hex), Gitea's X-Gitea-Signature (hex;
// X-Hub-Signature-256 as a fallback), GitLab's X-Gitlab-Token (compared
// here, in constant time).
func parseSignature(provider string, hdr http.Header, secret []byte) (signature, error) {
	switch provider {
	case "github":
		return parseHMAC(hdr.Get("X-Hub-Signature-256"), "sha256=", secret)
	case "gitea":
		if sig := hdr.Get("X-Gitea-Signature"); sig != "" {
			return parseHMAC(sig, "", secret)
		}
		return parseHMAC(hdr.Get("X-Hub-Signature-256"), "sha256=", secret)
	case "gitlab":
		tok := hdr.Get("X-Gitlab-Token")
		if tok == "" || !hmac.Equal([]byte(tok), secret) {
			return signature{}, errors.New("X-Gitlab-Token missing or wrong")
		}
		return signature{tokenChecked: true}, nil
	}
	return signature{}, fmt.Errorf("unknown provider %q", provider)
}

func parseHMAC(sig, prefix string, secret []byte) (signature, error) {
	if sig == "" || !strings.HasPrefix(sig, prefix) {
		return signature{}, errors.New("signature header missing")
	}
	got, err := hex.DecodeString(strings.TrimPrefix(sig, prefix))
	if err != nil || len(got) != sha256.Size {
		return signature{}, errors.New("signature is not a hex SHA-256 HMAC")
	}
	return signature{mac: got, secret: secret}, nil
}

// verify checks the HMAC-SHA256 of body against the presented one.
func (s signature) verify(body []byte) error {
	if s.tokenChecked {
		return nil
	}
	if s.mac == nil {
		return errors.New("no signature")
	}
	m := hmac.New(sha256.New, s.secret)
	m.Write(body)
	if !hmac.Equal(s.mac, m.Sum(nil)) {
		return errors.New("signature does not match")
	}
	return nil
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
