package webhook

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
)

// payload is a delivery's JSON object, read field by field: a field
// that is absent or of another type reads as empty, so that only a body
// that is not a JSON object is refused, whatever event it carries.
type payload map[string]json.RawMessage

// parsePayload reads body as a JSON object.
func parsePayload(body []byte) (payload, error) {
	var p payload
	if err := json.Unmarshal(body, &p); err != nil {
		return nil, err
	}
	if p == nil {
		return nil, errors.New("null is not a JSON object")
	}
	return p, nil
}

// str returns the string field key, or "".
func (p payload) str(key string) string {
	var s string
	if json.Unmarshal(p[key], &s) != nil {
		return ""
	}
	return s
}

// object returns the object field key, or nil.
func (p payload) object(key string) map[string]any {
	var m map[string]any
	if json.Unmarshal(p[key], &m) != nil {
		return nil
	}
	return m
}

// urlFields are where a push gives its repository's URLs: GitHub and
// Gitea in repository (clone_url, ssh_url, html_url, git_url), GitLab
// in project (git_http_url, git_ssh_url, web_url) and repository (url,
// homepage, git_http_url, git_ssh_url).
var urlFields = []string{"clone_url", "ssh_url", "html_url", "git_url", "git_http_url", "git_ssh_url", "web_url", "url", "homepage"}

// repositoryURLs returns every URL the payload gives for its repository.
func (p payload) repositoryURLs() []string {
	var out []string
	for _, m := range []map[string]any{p.object("repository"), p.object("project")} {
		for _, k := range urlFields {
			if s, ok := m[k].(string); ok && s != "" {
				out = append(out, s)
			}
		}
	}
	return out
}

// parsed is what a verified delivery asks of syncd.
type parsed struct {
	event event
	// urls are the pushed repository's URLs and ref the ref it moved;
	// set for a push only.
	urls []string
	ref  pushedRef
}

// errNoRepository is a push that names no repository URL.
var errNoRepository = errors.New("not a push payload: no repository URL in it")

// parseDelivery reads a verified body: an error when it is not a JSON
// object, or when it is a push that names no repository. Any other
// event is read without looking further.
func parseDelivery(provider string, hdr http.Header, body []byte) (parsed, error) {
	p, err := parsePayload(body)
	if err != nil {
		return parsed{}, fmt.Errorf("not a JSON object: %w", err)
	}
	d := parsed{event: eventOf(provider, hdr, p)}
	if d.event.kind != pushEvent {
		return d, nil
	}
	if d.urls = p.repositoryURLs(); len(d.urls) == 0 {
		return parsed{}, errNoRepository
	}
	d.ref = parseRef(p.str("ref"))
	return d, nil
}

// maxEcho bounds what an answer shows of a value the sender chose.
const maxEcho = 64

// quoted is s as an answer may show it: at most maxEcho bytes, in Go
// quotes with every control or non-ASCII byte escaped. The event header
// is not covered by the signature, and a payload is the sender's: shown
// raw, either could write into the Git host's delivery log whatever it
// liked, at any length.
func quoted(s string) string {
	if len(s) > maxEcho {
		s = s[:maxEcho] + "..."
	}
	return strconv.QuoteToASCII(s)
}
