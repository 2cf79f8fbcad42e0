// Package webhook receives Git push events from GitHub, GitLab and Gitea,
// verifies each provider's signature or token, and asks for an immediate
// poll of the Git sources whose repository the push names and whose
// revision the pushed ref can move (their branch; their tag; any tag for
// a semver range; never a pinned commit). The sources are listed and
// polled by Pollers, one per driver (the config file's sources, the
// GitSources of App objects), all matched by the same rule; a replica
// that runs no source (a standby) lists none. GitHub's ping and any other
// event (pull or merge requests, issues, …) are verified the same way,
// answered 200 and poll nothing.
//
// It guarantees that a request without a configured secret and a present,
// well-formed signature header (or the right GitLab token) is refused with
// 401 before any byte of its body is read; that no more than MaxBody bytes
// are read from anyone (413 past it); and that the JSON is parsed only
// after the HMAC over the body matched. It does not apply anything itself
// and does not trust the pushed SHA: it only triggers a poll, which
// resolves the ref from Git as usual. A verified delivery is accepted
// once within DefaultReplayWindow, by its id header and, where the HMAC
// covers the body, by the body; a replay is answered 200 and polls
// nothing. The event header is not covered by GitHub's or Gitea's HMAC:
// a signed body is read as the event its header names, so only a body
// that names a repository and a ref some source follows can poll,
// whatever the header says. The memory of deliveries is bounded
// (DefaultReplayCapacity, oldest forgotten first) and per process:
// another replica, or a replay after the window, polls again. It does
// not rate-limit, and it does not bound how many bodies are read at
// once: the HTTP server's timeouts and a NetworkPolicy are the caller's
// part.
package webhook
