package config

import (
	"fmt"
	"path"
	"regexp"
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation"

	"syncd.dev/syncd/internal/paths"
)

// MaxManagerLength is the longest field manager name the API server
// accepts.
const MaxManagerLength = 128

// HandoffSuffix ends the name of the applier's handoff manager; user
// managers may not end with it. It is the one definition:
// ownership.HandoffManager and ownership.HandoffOwner name and recognise
// handoff managers with it.
const HandoffSuffix = "-handoff"

var (
	managerCharsRE = regexp.MustCompile(`^[A-Za-z0-9]([A-Za-z0-9._:/-]*[A-Za-z0-9])?$`)
	digitRunRE     = regexp.MustCompile(`[0-9]{8,}`)
	// Dates with separators (2026-11-29, 2026_11_29, 2026.11.29) and
	// clock times (22:04), as in RFC 3339 timestamps.
	dateRE   = regexp.MustCompile(`(?:19|20)[0-9]{2}[-_.](?:0[1-9]|1[0-2])[-_.](?:0[1-9]|[12][0-9]|3[01])|[0-9]{1,2}:[0-9]{2}`)
	hexRunRE = regexp.MustCompile(`[0-9a-fA-F]{8,}`)
	// The pod-template-hash and random suffix Kubernetes puts on pod names
	// (-7d9f8b6c5d-x2v4q), drawn from its "safe" alphabet.
	podSuffixRE = regexp.MustCompile(`-[bcdfghjklmnpqrstvwxz2456789]{6,10}-[bcdfghjklmnpqrstvwxz2456789]{5}$`)
	digitRE     = regexp.MustCompile(`[0-9]`)
	letterRE    = regexp.MustCompile(`[A-Za-z]`)
)

// SyncdManagers are the field managers of syncd's own writes, with what
// each writes. No app may apply as one of them: it would take syncd's own
// fields, and syncd's writes would read as the app's. The packages that
// write as them check that their names are listed here.
var SyncdManagers = map[string]string{
	"syncd-controller": "the App controller's status and finalizer writes",
	"syncd-cli":        "the App commands' edits (syncd reconcile, suspend, resume)",
	"syncd-inventory":  "the inventory Secrets",
}

// foreignManagers are field manager names used by the API server itself or
// by well-known tools; syncd taking one of them would take fields away
// from that tool.
var foreignManagers = map[string]bool{
	"before-first-apply":        true,
	"kubectl":                   true,
	"kubectl-client-side-apply": true,
	"kubectl-create":            true,
	"kubectl-edit":              true,
	"kubectl-patch":             true,
	"kubectl-label":             true,
	"kubectl-annotate":          true,
	"kubectl-scale":             true,
	"kubectl-set":               true,
	"kubectl-rollout":           true,
	"kube-controller-manager":   true,
	"kube-scheduler":            true,
	"kubelet":                   true,
	"helm":                      true,
	"kustomize-controller":      true,
	"argocd-controller":         true,
}

// managerProblems returns what is wrong with a field manager name; empty
// when it is a stable, usable name.
func managerProblems(name string) []string {
	var probs []string
	if len(name) > MaxManagerLength {
		probs = append(probs, fmt.Sprintf("manager %q is %d characters long; the API server accepts at most %d", name, len(name), MaxManagerLength))
	}
	if !managerCharsRE.MatchString(name) {
		probs = append(probs, fmt.Sprintf("manager %q has characters syncd does not allow; use letters, digits and . _ : / -, starting and ending with a letter or digit", name))
	}
	if strings.HasSuffix(name, HandoffSuffix) {
		probs = append(probs, fmt.Sprintf("manager %q ends in %q, which is reserved for the applier's handoff manager; choose another name", name, HandoffSuffix))
	}
	if what, own := SyncdManagers[name]; own {
		probs = append(probs, fmt.Sprintf("manager %q is syncd's own (%s); an app applying as it would take syncd's fields: choose another name (an app named X applies as syncd-X unless it sets manager)", name, what))
	}
	if foreignManagers[name] {
		probs = append(probs, fmt.Sprintf("manager %q belongs to the API server or another tool; syncd would take its fields away, choose a name of your own such as \"syncd-...\"", name))
	}
	if why := unstable(name); why != "" {
		probs = append(probs, fmt.Sprintf("manager %q looks unstable (%s); a manager name must stay the same across restarts and releases, or the fields owned under the old name are orphaned: use a fixed name", name, why))
	}
	return probs
}

// unstable says why name looks generated per run or per release (a
// timestamp, a hash, a pod name), or "" when it does not.
func unstable(name string) string {
	if m := digitRunRE.FindString(name); m != "" {
		return fmt.Sprintf("%q looks like a timestamp or build number", m)
	}
	if m := dateRE.FindString(name); m != "" {
		return fmt.Sprintf("%q looks like a date or time", strings.TrimRight(m, "-_./:"))
	}
	for _, m := range hexRunRE.FindAllString(name, -1) {
		if digitRE.MatchString(m) && letterRE.MatchString(m) {
			return fmt.Sprintf("%q looks like a hash or random suffix", m)
		}
	}
	if m := podSuffixRE.FindString(name); m != "" && digitRE.MatchString(m) {
		return fmt.Sprintf("%q looks like a pod name's hash suffix", m)
	}
	return ""
}

var (
	kindRE    = regexp.MustCompile(`^[A-Z][A-Za-z0-9]*$`)
	versionRE = regexp.MustCompile(`^v[0-9]+((alpha|beta)[0-9]+)?$`)
)

// kindProblem checks a "Kind" or "group/Kind" entry; it returns "" when
// the entry is well formed.
// GroupKind reads a kind as syncd.yaml writes it ("ConfigMap" for the
// core group, "apps/Deployment" otherwise); kindProblem says whether it
// is well formed. Every stage's options take kinds parsed by it.
func GroupKind(k string) schema.GroupKind {
	if group, kind, ok := strings.Cut(k, "/"); ok {
		return schema.GroupKind{Group: group, Kind: kind}
	}
	return schema.GroupKind{Kind: k}
}

func kindProblem(s string) string {
	if s == "" {
		return "empty kind; write Kind for the core group (ConfigMap) or group/Kind (apps/Deployment)"
	}
	parts := strings.Split(s, "/")
	switch len(parts) {
	case 1:
		return kindNameProblem(s, parts[0])
	case 2:
		group, kind := parts[0], parts[1]
		if group == "" || group == "core" || versionRE.MatchString(group) {
			return fmt.Sprintf("%q: core kinds have no group and kinds are written without a version; write %q", s, kind)
		}
		if errs := validation.IsDNS1123Subdomain(group); len(errs) > 0 {
			return fmt.Sprintf("%q: group %q is not a valid API group (%s)", s, group, strings.Join(errs, "; "))
		}
		return kindNameProblem(s, kind)
	case 3:
		if versionRE.MatchString(parts[1]) {
			return fmt.Sprintf("%q: write group/Kind without the version: %q", s, parts[0]+"/"+parts[2])
		}
	}
	return fmt.Sprintf("%q is not a kind; write Kind for the core group (ConfigMap) or group/Kind (apps/Deployment)", s)
}

func kindNameProblem(s, kind string) string {
	if kindRE.MatchString(kind) {
		return ""
	}
	if kind != "" && kindRE.MatchString(strings.ToUpper(kind[:1])+kind[1:]) {
		return fmt.Sprintf("%q: kinds are written as in manifests, starting with a capital letter (%s)", s, strings.ToUpper(kind[:1])+kind[1:])
	}
	return fmt.Sprintf("%q: %q is not a kind name; kinds are letters and digits starting with a capital letter, such as Deployment", s, kind)
}

// fieldPathProblem parses a field path such as
// .spec.template.spec.containers[name="app"].image with the same parser
// the planner and the applier use (package paths), so a path accepted here
// is accepted there. It returns "" when the path parses.
func fieldPathProblem(p string) string {
	if _, err := paths.Parse(p); err != nil {
		return err.Error()
	}
	if !strings.HasPrefix(p, ".") {
		// The paths grammar allows a leading list item, but an object is a
		// map at the top, so such a pattern could never match.
		return fmt.Sprintf("field path %q: an object's fields start with \".\", e.g. .spec.replicas", p)
	}
	return ""
}

// globProblem checks a path.Match pattern; "" when it is well formed.
func globProblem(pattern string) string {
	if pattern == "" {
		return "empty pattern; use * to match everything"
	}
	if _, err := path.Match(pattern, ""); err != nil {
		return fmt.Sprintf("%q is not a valid pattern (%v); use * and ? as wildcards and [...] for character classes", pattern, err)
	}
	return ""
}
