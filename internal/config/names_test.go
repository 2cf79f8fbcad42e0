package config

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestManagerProblems(t *testing.T) {
	tests := map[string]struct {
		name string
		want string // fragment of the only problem; "" for none
	}{
		"plain":                 {"syncd-web", ""},
		"with dots and slashes": {"syncd.dev/web:replicas", ""},
		"version suffix":        {"syncd-web-v2", ""},
		"short hex word":        {"syncd-cafe-feed", ""},
		"letters-only hex run":  {"syncd-deadbeefcafe", ""},
		"seven digits":          {"syncd-team-1234567", ""},
		"words without vowels":  {"syncd-shh-psst", ""},
		"unix timestamp":        {"syncd-web-1764453600", `"1764453600" looks like a timestamp`},
		"compact date":          {"syncd-20261129-web", `"20261129" looks like a timestamp`},
		"dashed date":           {"syncd-2026-11-29", `"2026-11-29" looks like a date`},
		"rfc3339":               {"syncd-2026-11-29T22:04:00Z", "looks like a date"},
		"clock time":            {"syncd-web-at-22:04", `"22:04" looks like a date or time`},
		"git short sha":         {"syncd-web-3f2a9c1b", `"3f2a9c1b" looks like a hash`},
		"uuid":                  {"syncd-6f1c2a9e-0b7d-4c7e-9a7b-2f3e4d5c6b7a", "looks like a hash"},
		"pod name":              {"syncd-web-6fz7kq9xw4-x2v4q", `"-6fz7kq9xw4-x2v4q" looks like a pod name's hash suffix`},
		"handoff":               {"syncd-web-handoff", "reserved for the applier's handoff manager"},
		"kubectl":               {"kubectl-client-side-apply", "belongs to the API server or another tool"},
		"server reserved":       {"before-first-apply", "belongs to the API server or another tool"},
		"syncd's controller":    {"syncd-controller", `"syncd-controller" is syncd's own (the App controller's status`},
		"syncd's CLI":           {"syncd-cli", `"syncd-cli" is syncd's own`},
		"syncd's inventory":     {"syncd-inventory", `"syncd-inventory" is syncd's own (the inventory Secrets)`},
		"space":                 {"syncd web", "has characters syncd does not allow"},
		"leading dash":          {"-syncd", "has characters syncd does not allow"},
		"too long":              {"syncd-" + strings.Repeat("x", 123), "is 129 characters long"},
		"longest allowed":       {"syncd-" + strings.Repeat("x", 122), ""},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got := managerProblems(tc.name)
			switch {
			case tc.want == "" && len(got) > 0:
				t.Errorf("managerProblems(%q) = %q, want none", tc.name, got)
			case tc.want != "" && (len(got) != 1 || !strings.Contains(got[0], tc.want)):
				t.Errorf("managerProblems(%q) = %q, want one problem containing %q", tc.name, got, tc.want)
			}
		})
	}
}

func TestKindProblem(t *testing.T) {
	tests := map[string]struct {
		kind string
		want string
	}{
		"core":              {"ConfigMap", ""},
		"grouped":           {"apps/Deployment", ""},
		"dotted group":      {"networking.k8s.io/Ingress", ""},
		"empty":             {"", "empty kind"},
		"lowercase":         {"configmap", "starting with a capital letter (Configmap)"},
		"with version":      {"apps/v1/Deployment", `write group/Kind without the version: "apps/Deployment"`},
		"core version":      {"v1/Secret", `write "Secret"`},
		"core group":        {"core/Secret", `write "Secret"`},
		"bad group":         {"Apps/Deployment", `group "Apps" is not a valid API group`},
		"too many slashes":  {"a/b/c/D", "is not a kind"},
		"punctuation":       {"Deploy-ment", `"Deploy-ment" is not a kind name`},
		"wildcard":          {"*", `"*" is not a kind name`},
		"empty kind part":   {"apps/", "is not a kind name"},
		"leading slash":     {"/Deployment", `write "Deployment"`},
		"lowercase grouped": {"apps/deployment", "(Deployment)"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got := kindProblem(tc.kind)
			if (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
				t.Errorf("kindProblem(%q) = %q, want %q", tc.kind, got, orNone(tc.want))
			}
		})
	}
}

func TestFieldPathProblem(t *testing.T) {
	tests := map[string]struct {
		path string
		want string
	}{
		"simple":         {".spec.replicas", ""},
		"keyed item":     {`.spec.template.spec.containers[name="app"].image`, ""},
		"any item":       {".spec.template.spec.containers[*].image", ""},
		"any map key":    {".metadata.labels.*", ""},
		"quoted name":    {`.metadata.labels."app.kubernetes.io/name"`, ""},
		"set value":      {`.metadata.finalizers[="example.com/guard"]`, ""},
		"two keys":       {`.spec.ports[containerPort=80,protocol="TCP"].name`, ""},
		"index":          {".spec.args[0]", ""},
		"empty":          {"", "empty path"},
		"leading item":   {"[0].spec", `an object's fields start with "."`},
		"no dot":         {"spec.replicas", `at position 0: a path starts with "."`},
		"double dot":     {".spec..replicas", `at position 5: a field name must follow "."`},
		"unclosed":       {".spec.containers[*", "at position 16"},
		"unclosed quote": {`.spec.containers[name="app].image`, "missing closing quote"},
		"empty bracket":  {".spec.containers[].image", "a list item is [*], [N], [=value] or [key=value,...]"},
		"junk after ]":   {".spec.containers[*]image", `unexpected 'i': expected "." or "["`},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got := fieldPathProblem(tc.path)
			if (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
				t.Errorf("fieldPathProblem(%q) = %q, want %q", tc.path, got, orNone(tc.want))
			}
		})
	}
}

func TestClassifyURL(t *testing.T) {
	type result struct {
		Kind     string
		Loopback bool
		Problem  string // fragment
	}
	tests := map[string]struct {
		url  string
		want result
	}{
		"https":             {"https://github.com/org/repo.git", result{Kind: urlHTTP}},
		"http localhost":    {"http://localhost:3000/repo.git", result{Kind: urlHTTP, Loopback: true}},
		"http loopback ip6": {"http://[::1]:3000/repo.git", result{Kind: urlHTTP, Loopback: true}},
		"https user only":   {"https://bot@github.com/org/repo.git", result{Kind: urlHTTP}},
		"ssh":               {"ssh://git@github.com:22/org/repo.git", result{Kind: urlSSH}},
		"scp-like":          {"git@github.com:org/repo.git", result{Kind: urlSSH}},
		"scp-like no user":  {"github.com:org/repo.git", result{Kind: urlSSH}},
		"scp-like abs path": {"git@host:/srv/repo.git", result{Kind: urlSSH}},
		"file":              {"file:///srv/git/repo.git", result{Kind: urlFile}},
		"file with host":    {"file://host/srv/repo.git", result{Problem: "no host"}},
		"password":          {"https://u:p@github.com/r.git", result{Problem: "embeds a password"}},
		"git protocol":      {"git://github.com/r.git", result{Problem: "git:// protocol"}},
		"relative path":     {"repo.git", result{Problem: "not one git can fetch"}},
		"bad url":           {"https://%zz/", result{Problem: "the URL is not valid"}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			kind, loopback, prob := classifyURL(tc.url)
			got := result{kind, loopback, prob}
			if tc.want.Problem != "" && strings.Contains(prob, tc.want.Problem) {
				got.Problem = tc.want.Problem
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("classifyURL(%q) (-want +got):\n%s", tc.url, diff)
			}
		})
	}
}

func TestScheduleProblem(t *testing.T) {
	tests := map[string]struct {
		spec string
		want string
	}{
		"five fields":     {"*/5 * * * *", ""},
		"every":           {"@every 5m", ""},
		"hourly":          {"@hourly", ""},
		"time zone":       {"CRON_TZ=Europe/Berlin 30 2 * * 1-5", ""},
		"six fields":      {"0 */5 * * * *", "expected exactly 5 fields"},
		"bad every":       {"@every soon", "not a cron schedule"},
		"zero every":      {"@every 0s", "at least 1s"},
		"tz only":         {"TZ=UTC", "has a time zone but no schedule"},
		"unknown zone":    {"CRON_TZ=Mars/Olympus * * * * *", "not a cron schedule"},
		"out of range":    {"61 * * * *", "not a cron schedule"},
		"unknown keyword": {"@sometimes", "unrecognized descriptor"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got := scheduleProblem(tc.spec)
			if (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
				t.Errorf("scheduleProblem(%q) = %q, want %q", tc.spec, got, orNone(tc.want))
			}
		})
	}
}

func TestGlobProblem(t *testing.T) {
	tests := map[string]struct {
		pattern string
		want    string
	}{
		"star":      {"*", ""},
		"prefix":    {"kubectl-*", ""},
		"class":     {"web-[a-c]?", ""},
		"empty":     {"", "empty pattern"},
		"unclosed":  {"web-[a", "not a valid pattern"},
		"backslash": {`web\`, "not a valid pattern"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got := globProblem(tc.pattern)
			if (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
				t.Errorf("globProblem(%q) = %q, want %q", tc.pattern, got, orNone(tc.want))
			}
		})
	}
}

func orNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}
