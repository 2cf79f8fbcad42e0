package webhook

import (
	"strings"

	"syncd.dev/syncd/internal/config"
)

// pushedRef is the ref a push moved, as its payload's "ref" names it
// (GitHub, GitLab and Gitea all send it in full).
type pushedRef struct {
	// full is the ref as sent, for the answer.
	full string
	// branch is X of refs/heads/X, tag is Y of refs/tags/Y; both are
	// empty for any other ref (refs/pull/…, refs/merge-requests/…).
	branch, tag string
}

// parseRef reads a push's ref.
func parseRef(ref string) pushedRef {
	r := pushedRef{full: ref}
	if b, ok := strings.CutPrefix(ref, "refs/heads/"); ok {
		r.branch = b
	} else if t, ok := strings.CutPrefix(ref, "refs/tags/"); ok {
		r.tag = t
	}
	return r
}

// moves reports whether a push of r can move the revision g follows: a
// branch source's branch; a tag source's tag (a re-tagged tag is
// followed); any tag for a semver source, whose highest matching tag a
// new, moved or deleted tag may change (the range is the source's to
// resolve, not the webhook's); never a commit, which no push moves.
func (r pushedRef) moves(g config.GitSource) bool {
	kind, value := g.Ref()
	switch kind {
	case config.RefBranch:
		return r.branch != "" && r.branch == value
	case config.RefTag:
		return r.tag != "" && r.tag == value
	case config.RefSemver:
		return r.tag != ""
	}
	return false
}

// pushMatch is what a push concerns among the sources.
type pushMatch struct {
	// ofRepository counts the Git sources of the pushed repository.
	ofRepository int
	// poll names those of them whose revision the push can move, in
	// the sources' order.
	poll []string
}

// matchPush decides which sources a push of ref to the repository of
// urls can move. Only Git sources follow a Git ref: a Helm or OCI
// source is never the pushed repository's.
func matchPush(sources []config.Source, urls []string, ref pushedRef) pushMatch {
	var m pushMatch
	for _, src := range sources {
		if src.Kind() != config.SourceGit || !namedByAny(src.Git.URL, urls) {
			continue
		}
		m.ofRepository++
		if ref.moves(src.Git) {
			m.poll = append(m.poll, src.Name)
		}
	}
	return m
}

// pushPlan is what a push concerns among the sources of every poller.
type pushPlan struct {
	// ofRepository counts the Git sources of the pushed repository.
	ofRepository int
	// poll are those of them whose revision the push can move, each
	// with the poller that listed it, in the pollers' order.
	poll []pollTarget
}

// pollTarget is a source to poll and the poller that runs it.
type pollTarget struct {
	poller Poller
	source string
}

// planPush matches a push with each poller's sources, by the one rule
// of matchPush: the counts add up, and each source to poll keeps the
// poller that listed it (two pollers may list a name alike).
func planPush(pollers []Poller, urls []string, ref pushedRef) pushPlan {
	var p pushPlan
	for _, pl := range pollers {
		m := matchPush(pl.Sources(), urls, ref)
		p.ofRepository += m.ofRepository
		for _, name := range m.poll {
			p.poll = append(p.poll, pollTarget{poller: pl, source: name})
		}
	}
	return p
}

// namedByAny reports whether any of urls names the repository of u.
func namedByAny(u string, urls []string) bool {
	for _, pushed := range urls {
		if SameRepository(u, pushed) {
			return true
		}
	}
	return false
}

// repositoryName is the pushed repository as an answer shows it: host
// and path of its first URL that parses, never its credentials.
func repositoryName(urls []string) string {
	for _, u := range urls {
		if n := normalize(u); n != "" {
			return n
		}
	}
	return ""
}
