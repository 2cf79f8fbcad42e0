package webhook

import (
	"net/http"
	"strings"
)

// eventKind is what a verified delivery asks of syncd.
type eventKind int

const (
	// pushEvent moved a branch or a tag: it may poll sources.
	pushEvent eventKind = iota
	// pingEvent is GitHub's check when a hook is created or its "Test"
	// is pressed: answered 200, it polls nothing.
	pingEvent
	// otherEvent is any other event the hook was set to send (issues,
	// pull or merge requests, tag creation, …): answered 200, it polls
	// nothing. A hook that sends more than pushes must not look broken
	// to the Git host, which disables (GitLab) or flags (GitHub) a hook
	// that keeps failing.
	otherEvent
)

// event is a delivery's kind and its name as the provider gave it,
// for the answer. The name comes from a header the signature does not
// cover: it is shown only through quoted.
type event struct {
	kind eventKind
	name string
}

// eventHeaders name a delivery's event, by provider; the first present
// wins. Gitea sends its own, Gogs' and GitHub's (Forgejo adds its own).
var eventHeaders = map[string][]string{
	"github": {"X-GitHub-Event"},
	"gitea":  {"X-Gitea-Event", "X-Forgejo-Event", "X-Gogs-Event", "X-GitHub-Event"},
	"gitlab": {"X-Gitlab-Event"},
}

// eventOf reads a delivery's event from its provider's header and, for
// a GitLab system hook, from the body. A request without the header is
// read as a push, as it was before syncd read the header (a script, a
// proxy that drops it): its body still has to name a repository and
// the ref it moved.
func eventOf(provider string, hdr http.Header, p payload) event {
	name := eventHeader(provider, hdr)
	switch {
	case name == "":
		return event{kind: pushEvent, name: "push"}
	case provider == "gitlab":
		return gitlabEvent(name, p)
	case strings.EqualFold(name, "push"):
		return event{kind: pushEvent, name: name}
	case strings.EqualFold(name, "ping"):
		return event{kind: pingEvent, name: name}
	}
	return event{kind: otherEvent, name: name}
}

// eventHeader returns the first of provider's event headers present.
func eventHeader(provider string, hdr http.Header) string {
	for _, h := range eventHeaders[provider] {
		if v := hdr.Get(h); v != "" {
			return v
		}
	}
	return ""
}

// gitlabPushEvents are the X-Gitlab-Event values of a push, lower-cased:
// a branch push ("Push Hook") and a tag push ("Tag Push Hook", a push
// of refs/tags/…, which a semver source must see). The "… Event" forms
// are what GitLab 10's "Test" button sent (gitlab-foss#37288).
var gitlabPushEvents = map[string]bool{"push hook": true, "tag push hook": true, "push event": true, "tag push event": true}

// gitlabSystemPushes are the event_name values of a push sent to a
// system hook (X-Gitlab-Event: System Hook), whose payload is then the
// project hook's.
var gitlabSystemPushes = map[string]bool{"push": true, "tag_push": true}

// gitlabEvent reads a GitLab event: its header names it, except for a
// system hook, where the body's event_name (else object_kind) does.
func gitlabEvent(name string, p payload) event {
	if !strings.EqualFold(name, "System Hook") {
		if gitlabPushEvents[strings.ToLower(name)] {
			return event{kind: pushEvent, name: name}
		}
		return event{kind: otherEvent, name: name}
	}
	kind := p.str("event_name")
	if kind == "" {
		kind = p.str("object_kind")
	}
	if gitlabSystemPushes[kind] {
		return event{kind: pushEvent, name: name + " " + kind}
	}
	return event{kind: otherEvent, name: strings.TrimSpace(name + " " + kind)}
}
