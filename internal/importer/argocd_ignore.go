package importer

import (
	"encoding/json"
	"strconv"
	"strings"

	"syncd.dev/syncd/internal/config"
	"syncd.dev/syncd/internal/paths"
)

// argoIgnoreDifferences maps spec.ignoreDifferences: JSON pointers
// become ignore rules with syncd's field paths, and
// managedFieldsManagers a conflict rule that yields those managers'
// fields to them (syncd's closest: it neither corrects nor reports
// them). jq expressions have no equivalent.
func argoIgnoreDifferences(spec *fields) ([]config.IgnoreRule, []config.ConflictRule) {
	var rules []config.IgnoreRule
	var yields []config.ConflictRule
	for i, v := range spec.list("ignoreDifferences") {
		f := spec.item("ignoreDifferences", i, v)
		kinds, names, namespaces := argoKinds(f.str("group"), f.str("kind")), nonEmpty(f.str("name")), nonEmpty(f.str("namespace"))
		ps := argoPointerPaths(f)
		if len(ps) > 0 {
			rules = append(rules, config.IgnoreRule{Kinds: kinds, Names: names, Namespaces: namespaces, Paths: ps})
		}
		if ms := f.strings("managedFieldsManagers"); len(ms) > 0 {
			f.warn("managedFieldsManagers", "became a conflict rule that yields these managers' fields to them (they are neither corrected nor reported as drift); add an ignore rule with their paths and managers to also keep them out of the plan")
			yields = append(yields, config.ConflictRule{Kinds: kinds, Names: names, Managers: ms, Action: config.ActionYield})
		}
		f.none("jqPathExpressions", "jq is not supported: write the fields as paths of an ignore rule (.spec.template.spec.containers[*].image)")
		f.done()
	}
	return rules, yields
}

// argoKinds is the kind of an ignoreDifferences entry as syncd writes
// it ("group/Kind", "Kind" for the core group); none for "*".
func argoKinds(group, kind string) []string {
	switch {
	case kind == "" || kind == "*":
		return nil
	case group == "" || group == "core":
		return []string{kind}
	}
	return []string{group + "/" + kind}
}

// nonEmpty is [s], or none for "" and "*".
func nonEmpty(s string) []string {
	if s == "" || s == "*" {
		return nil
	}
	return []string{s}
}

// argoPointerPaths converts an entry's jsonPointers.
func argoPointerPaths(f *fields) []string {
	var out []string
	for _, ptr := range f.strings("jsonPointers") {
		p, lossy := pointerPath(ptr)
		if _, err := paths.Parse(p); err != nil {
			f.warn("jsonPointers", "%q cannot be written as a field path (%v); not imported", ptr, err)
			continue
		}
		if lossy {
			f.warn("jsonPointers", "%q indexes a list: the rule ignores every item (%s); narrow it with [name=\"...\"] if it should not", ptr, p)
		}
		out = append(out, p)
	}
	return out
}

// pointerPath converts a JSON pointer (/spec/template/spec/containers/0/image)
// into syncd's field-path notation; a list index becomes [*] (lossy),
// since syncd matches keyed lists by key, not by position.
func pointerPath(ptr string) (p string, lossy bool) {
	var b strings.Builder
	for _, seg := range strings.Split(strings.TrimPrefix(ptr, "/"), "/") {
		seg = strings.ReplaceAll(strings.ReplaceAll(seg, "~1", "/"), "~0", "~")
		switch {
		case isIndex(seg):
			b.WriteString("[*]")
			lossy = true
		case strings.ContainsAny(seg, `.[]"*/`) || seg == "":
			q, _ := json.Marshal(seg)
			b.WriteString("." + string(q))
		default:
			b.WriteString("." + seg)
		}
	}
	return b.String(), lossy
}

// isIndex reports whether a pointer segment is a list index.
func isIndex(seg string) bool {
	_, err := strconv.Atoi(seg)
	return err == nil && seg != "" && !strings.HasPrefix(seg, "-")
}
