package config

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// header is a valid start of a config with one source "repo" polled every
// minute; cases append to it (it is 8 lines long, so a following
// "apps:" is on line 9 and its first item on line 10).
const header = `apiVersion: syncd/v1alpha1
kind: Config
sources:
  - name: repo
    git:
      url: https://git.example.com/org/repo.git
      branch: main
      interval: 1m
`

func TestParseAccepts(t *testing.T) {
	tests := map[string]struct {
		yaml  string
		check func(t *testing.T, c *Config)
	}{
		"scp-like url, @every schedule, ssh auth": {
			yaml: `apiVersion: syncd/v1alpha1
kind: Config
sources:
  - name: repo
    git:
      url: git@github.com:org/repo.git
      tag: v1.2.3
      schedule: "@every 5m"
      auth: {sshKeyFile: key, knownHostsFile: known_hosts}
`,
		},
		"token over http to localhost, 64-hex commit, time zone schedule": {
			yaml: `apiVersion: syncd/v1alpha1
kind: Config
sources:
  - name: repo
    git:
      url: http://127.0.0.1:8080/repo.git
      commit: 0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef
      schedule: "CRON_TZ=UTC 0 3 * * *"
      auth: {tokenFile: token}
`,
		},
		"date-like branch keeps its text": {
			yaml: strings.Replace(header, "branch: main", "branch: 2026-11-29", 1),
			check: func(t *testing.T, c *Config) {
				if got := c.Sources[0].Git.Branch; got != "2026-11-29" {
					t.Errorf("branch = %q, want %q", got, "2026-11-29")
				}
			},
		},
		"anchors, aliases and merge keys": {
			yaml: header + `apps:
  - &base
    name: web
    source: repo
    namespace: web
  - <<: *base
    name: api
    split:
      - manager: syncd-api-replicas
        paths: [.spec.replicas]
`,
			check: func(t *testing.T, c *Config) {
				got := []string{c.Apps[1].Name, c.Apps[1].Namespace, c.Apps[1].Source, c.Apps[1].DefaultManager()}
				want := []string{"api", "web", "repo", "syncd-api"}
				if diff := cmp.Diff(want, got); diff != "" {
					t.Errorf("merged app (-want +got):\n%s", diff)
				}
			},
		},
		"no apps, sources or alerts": {
			yaml: "apiVersion: syncd/v1alpha1\nkind: Config\n",
		},
		"defaults": {
			yaml: header + "apps:\n  - name: web\n    source: repo\n",
			check: func(t *testing.T, c *Config) {
				a := c.Apps[0]
				got := []any{a.TreePath(), a.DefaultManager(), a.PruneEnabled(), a.Conflicts.DefaultAction(), a.Managers()}
				want := []any{".", "syncd-web", true, ActionFail, []string{"syncd-web"}}
				if diff := cmp.Diff(want, got); diff != "" {
					t.Errorf("defaults (-want +got):\n%s", diff)
				}
			},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			c, err := Parse([]byte(tc.yaml), "syncd.yaml")
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			if tc.check != nil {
				tc.check(t, c)
			}
		})
	}
}

func TestParseRejects(t *testing.T) {
	tests := map[string]struct {
		yaml string
		want []wantErr
	}{
		"unknown field inside a merged mapping": {
			yaml: header + `apps:
  - &base
    name: web
    source: repo
    colour: blue
  - <<: *base
    name: api
`,
			want: []wantErr{{13, "apps[0].colour", `unknown field "colour"`}},
		},
		"a bad value reached through a merge key points at its anchor": {
			yaml: header + `apps:
  - &base
    name: web
    source: repo
    namespace: Bad_NS
  - <<: *base
    name: api
`,
			want: []wantErr{
				{13, "apps[0].namespace", `"Bad_NS" is not a valid namespace`},
				{13, "apps[1].namespace", `"Bad_NS" is not a valid namespace`},
			},
		},
		"a mapping that merges itself": {
			yaml: header + "apps:\n  - &a\n    name: web\n    source: repo\n    <<: *a\n",
			want: []wantErr{
				{0, "", "anchor 'a' value contains itself"},
				{10, "apps[0]", "contains an alias to itself"},
			},
		},
		"a list item that is its own ancestor": {
			yaml: header + "apps:\n  - &a\n    name: web\n    source: repo\n    split: [*a]\n",
			want: []wantErr{
				{0, "", "anchor 'a' value contains itself"},
				{10, "apps[0].split[0]", "contains an alias to itself"},
			},
		},
		"prune guards out of range": {
			yaml: header + "apps:\n  - name: web\n    source: repo\n    pruneBudget: 150\n    adopted: keep\n",
			want: []wantErr{
				{12, "apps[0].pruneBudget", "150 is not a percentage; use 0 to 100"},
				{13, "apps[0].adopted", `"keep" is not an adopted action`},
			},
		},
		"apply settings out of range": {
			yaml: header + "apps:\n  - name: web\n    source: repo\n    handoff: drop\n    timeout: 5m\n    serviceAccountName: deployer\n",
			want: []wantErr{
				{12, "apps[0].handoff", `"drop" is not a handoff mode`},
				{13, "apps[0].timeout", "timeout only applies with wait: true"},
				{14, "apps[0].serviceAccountName", "set namespace too"},
			},
		},
		"dryRunAll without validation": {
			yaml: header + "apps:\n  - name: web\n    source: repo\n    validate: false\n    dryRunAll: true\n",
			want: []wantErr{
				{13, "apps[0].dryRunAll", "dryRunAll only applies with validation on"},
			},
		},
		"drift mode and sensitive fields": {
			yaml: header + "apps:\n  - name: web\n    source: repo\n    drift:\n      mode: watch\n    sensitive:\n      - kinds: [v1/ConfigMap]\n        paths: [data.password]\n      - kinds: [Secret]\n",
			want: []wantErr{
				{13, "apps[0].drift.mode", `"watch" is not a drift mode; use correct (default`},
				{15, "apps[0].sensitive[0].kinds[0]", `write "ConfigMap"`},
				{16, "apps[0].sensitive[0].paths[0]", `field path "data.password"`},
				{17, "apps[0].sensitive[1].paths", "paths is required"},
			},
		},
		"a prune budget that is not a whole number": {
			yaml: header + "apps:\n  - name: web\n    source: repo\n    pruneBudget: 25%\n",
			want: []wantErr{{12, "apps[0].pruneBudget", `expected a whole number, got "25%"`}},
		},
		"a field name that is not a string": {
			yaml: header + "apps:\n  - name: web\n    source: repo\n    1: x\n",
			want: []wantErr{{12, "apps[0]", "field names must be strings, got the number 1"}},
		},
		"a custom tag": {
			yaml: header + "apps:\n  - name: !secret web\n    source: repo\n",
			want: []wantErr{{10, "apps[0].name", "a value tagged !secret; remove the tag"}},
		},
		"a list where a mapping belongs": {
			yaml: header + "apps:\n  - [web, repo]\n",
			want: []wantErr{{10, "apps[0]", "expected a mapping of fields (adopted, allowEmpty, allowRewinds, cluster, conflicts, decryption, dependsOn, drift, dryRunAll, handoff, helm, ignore, installsSyncd, manager, migrate, name, namespace, path, prune, pruneBudget, recreate, sensitive, serviceAccountName, source, split, substitute, substituteFrom, substituteStrict, timeout, validate, wait), got a list"}},
		},
		"an interval that is a number": {
			yaml: strings.Replace(header, "interval: 1m", "interval: 60", 1),
			want: []wantErr{
				{5, "sources[0].git", "no polling schedule"},
				{8, "sources[0].git.interval", "expected a duration such as 30s, 5m or 1h30m, got the number 60"},
			},
		},
		"an unquoted wildcard in a flow list": {
			yaml: header + "apps:\n  - name: web\n    source: repo\n    conflicts:\n      rules:\n        - managers: [*]\n          action: yield\n",
			want: []wantErr{{14, "", "put field paths and patterns in quotes"}},
		},
		"@every below a second": {
			yaml: strings.Replace(header, "interval: 1m", `schedule: "@every 10ms"`, 1),
			want: []wantErr{{8, "sources[0].git.schedule", "at least 1s"}},
		},
		"aliased lists become null after a type error": {
			yaml: `apiVersion: syncd/v1alpha1
kind: Config
apps:
  - &l [a, b]
  - *l
`,
			want: []wantErr{
				{4, "apps[0]", "expected a mapping of fields"},
				{5, "apps[1].name", "name is required"},
				{5, "apps[1].source", "source is required"},
			},
		},
		"https URL without a host": {
			yaml: strings.Replace(header, "https://git.example.com/org/repo.git", "https:///org/repo.git", 1),
			want: []wantErr{{6, "sources[0].git.url", "the URL has no host"}},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			c, err := Parse([]byte(tc.yaml), "syncd.yaml")
			if c != nil {
				t.Errorf("Parse returned a config along with the error")
			}
			checkErrors(t, "syncd.yaml", problems(t, err), tc.want)
		})
	}
}

// TestParseAliasBomb feeds a document whose aliases expand to a million
// well-typed nodes; the walker must stop at maxNodes and report it.
func TestParseAliasBomb(t *testing.T) {
	var b strings.Builder
	b.WriteString(header + "apps:\n  - &app\n    name: web\n    source: repo\n    split:\n      - &split\n        manager: syncd-web-x\n        paths: [")
	b.WriteString(strings.TrimSuffix(strings.Repeat(`".x", `, 100), ", "))
	b.WriteString("]\n" + strings.Repeat("      - *split\n", 99))
	b.WriteString(strings.Repeat("  - *app\n", 99))
	_, err := Parse([]byte(b.String()), "syncd.yaml")
	errs := problems(t, err)
	if len(errs) != 1 || !strings.Contains(errs[0].Message, "expands to more than 65536 YAML nodes") {
		t.Fatalf("Parse of an alias bomb = %v, want one problem about too many nodes", err)
	}
}
