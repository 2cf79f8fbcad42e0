package install

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/yaml"
)

type workflowStep struct {
	Name string            `json:"name"`
	Run  string            `json:"run"`
	Uses string            `json:"uses"`
	Env  map[string]string `json:"env"`
}

type workflow struct {
	Jobs map[string]struct {
		Env   map[string]string `json:"env"`
		Steps []workflowStep    `json:"steps"`
	} `json:"jobs"`
}

// fakeSyncd stands in for the built syncd: it records its arguments and
// the kubeconfig it was given, prints a plan, and exits with $FAKE_CODE.
const fakeSyncd = `#!/bin/bash
printf '%s\n' "$@" > "$FAKE_LOG/syncd.args"
while [ $# -gt 0 ]; do
  if [ "$1" = --kubeconfig ]; then cat "$2" > "$FAKE_LOG/kubeconfig.seen"; fi
  shift
done
echo '### syncd plan: app ` + "`web`" + ` at ` + "`local:/checkout`" + `'
echo
echo "| object | change |"
echo "warning: something" >&2
exit "$FAKE_CODE"
`

// fakeGH stands in for the gh CLI: it records each call, and answers the
// comment listing with $FAKE_EXISTING (the id of a comment holding the
// marker; the real listing filters by the marker with --jq).
const fakeGH = `#!/bin/bash
echo "$*" >> "$FAKE_LOG/gh.calls"
if [ "$1" = api ] && [ "$2" = --paginate ]; then
  case "$*" in *'contains("<!-- syncd-plan -->")'*) ;; *) echo "listing without the marker filter" >&2; exit 9 ;; esac
  [ -n "$FAKE_EXISTING" ] && echo "$FAKE_EXISTING"
fi
exit 0
`

// TestPlanWorkflowScripts runs the shell of examples/github/syncd-plan.yml
// (steps Plan, Comment, Result) with stand-ins for syncd and gh: exit 2
// ("changes") must not fail the job, 1 and 3 must, the comment is posted
// in every case, and an existing comment (found by its marker) is edited
// rather than a second one added.
func TestPlanWorkflowScripts(t *testing.T) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("no bash")
	}
	data := mustRead(t, "examples/github/syncd-plan.yml")
	var wf workflow
	if err := yaml.Unmarshal(data, &wf); err != nil {
		t.Fatalf("examples/github/syncd-plan.yml: %v", err)
	}
	var top map[string]any
	if err := yaml.Unmarshal(data, &top); err != nil {
		t.Fatal(err)
	}
	// YAML 1.1 reads the key "on" as true; GitHub reads it as "on".
	trigger, _ := top["on"].(map[string]any)
	if trigger == nil {
		trigger, _ = top["true"].(map[string]any)
	}
	if _, ok := trigger["pull_request"]; !ok {
		t.Errorf("the workflow does not run on pull_request: on = %v", trigger)
	}
	if perms, _ := top["permissions"].(map[string]any); perms["pull-requests"] != "write" {
		t.Errorf("permissions: got %v, want pull-requests: write (to comment)", top["permissions"])
	}
	job, ok := wf.Jobs["plan"]
	if !ok {
		t.Fatal("examples/github/syncd-plan.yml: no job plan")
	}
	step := func(name string) workflowStep {
		for _, s := range job.Steps {
			if s.Name == name {
				return s
			}
		}
		t.Fatalf("examples/github/syncd-plan.yml: no step %q", name)
		return workflowStep{}
	}

	tests := map[string]struct {
		code       string
		existing   string
		wantResult int
		wantStatus string
		wantGH     string // the call that writes the comment
	}{
		"no changes, first comment":   {code: "0", wantResult: 0, wantStatus: "No changes.", wantGH: "pr comment 7 --repo o/r --body-file"},
		"changes, first comment":      {code: "2", wantResult: 0, wantStatus: "Changes to apply.", wantGH: "pr comment 7 --repo o/r --body-file"},
		"changes, comment exists":     {code: "2", existing: "42", wantResult: 0, wantStatus: "Changes to apply.", wantGH: "api --method PATCH repos/o/r/issues/comments/42 -F body=@"},
		"blocked fails after comment": {code: "3", existing: "42", wantResult: 1, wantStatus: "**Blocked**", wantGH: "api --method PATCH repos/o/r/issues/comments/42"},
		"error fails after comment":   {code: "1", wantResult: 1, wantStatus: "**syncd plan failed** (exit 1).", wantGH: "pr comment 7"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			tmp := t.TempDir()
			runner, logs, bin, ws := filepath.Join(tmp, "runner"), filepath.Join(tmp, "log"), filepath.Join(tmp, "bin"), filepath.Join(tmp, "ws")
			for _, d := range []string{runner, logs, bin, ws} {
				if err := os.Mkdir(d, 0o755); err != nil {
					t.Fatal(err)
				}
			}
			writeExec(t, filepath.Join(runner, "syncd"), fakeSyncd)
			writeExec(t, filepath.Join(bin, "gh"), fakeGH)
			output := filepath.Join(tmp, "github_output")
			base := []string{
				"PATH=" + bin + ":" + os.Getenv("PATH"),
				"RUNNER_TEMP=" + runner, "GITHUB_WORKSPACE=" + ws, "GITHUB_OUTPUT=" + output,
				"FAKE_LOG=" + logs, "FAKE_CODE=" + tc.code, "FAKE_EXISTING=" + tc.existing,
			}
			for k, v := range job.Env {
				base = append(base, k+"="+v)
			}
			run := func(s workflowStep, extra ...string) int {
				cmd := exec.Command(bash, "-e", "-c", s.Run)
				cmd.Env = append(append(base, extra...), stepEnv(s)...)
				out, err := cmd.CombinedOutput()
				var exit *exec.ExitError
				if errors.As(err, &exit) {
					t.Logf("step %s exited %d:\n%s", s.Name, exit.ExitCode(), out)
					return exit.ExitCode()
				}
				if err != nil {
					t.Fatalf("step %s: %v", s.Name, err)
				}
				return 0
			}

			if code := run(step("Plan"), "KUBECONFIG_DATA=apiVersion: v1 # test", "HEAD_SHA=0123456789abcdef"); code != 0 {
				t.Fatalf("step Plan exited %d with syncd exiting %s: it must never fail", code, tc.code)
			}
			args, _ := os.ReadFile(filepath.Join(logs, "syncd.args"))
			wantArgs := "plan --kubeconfig " + runner + "/kubeconfig --config examples/syncd.yaml --app web --path " + ws + "/examples/app -o markdown"
			if got := strings.Join(strings.Fields(string(args)), " "); got != wantArgs {
				t.Errorf("syncd args:\n got %s\nwant %s", got, wantArgs)
			}
			if seen, _ := os.ReadFile(filepath.Join(logs, "kubeconfig.seen")); string(seen) != "apiVersion: v1 # test\n" {
				t.Errorf("kubeconfig given to syncd: %q", seen)
			}
			if _, err := os.Stat(filepath.Join(runner, "kubeconfig")); !os.IsNotExist(err) {
				t.Errorf("the kubeconfig is left on disk after the plan (stat: %v)", err)
			}
			out, _ := os.ReadFile(output)
			if got := strings.TrimSpace(string(out)); got != "code="+tc.code {
				t.Errorf("step output: got %q, want code=%s", got, tc.code)
			}
			comment, _ := os.ReadFile(filepath.Join(runner, "comment.md"))
			for _, want := range []string{"<!-- syncd-plan -->\n", tc.wantStatus, "| object | change |", "warning: something", "at 0123456789ab"} {
				if !strings.Contains(string(comment), want) {
					t.Errorf("comment lacks %q:\n%s", want, comment)
				}
			}
			if !strings.HasPrefix(string(comment), "<!-- syncd-plan -->") {
				t.Errorf("comment does not start with the marker")
			}
			// One heading: the workflow's (with the commit), not syncd's
			// (with the checkout directory) as well.
			if n := strings.Count(string(comment), "### syncd plan: "); n != 1 {
				t.Errorf("comment has %d \"### syncd plan:\" headings, want 1:\n%s", n, comment)
			}

			if code := run(step("Comment"), "GH_TOKEN=t", "PR=7", "REPO=o/r"); code != 0 {
				t.Fatalf("step Comment exited %d", code)
			}
			calls, _ := os.ReadFile(filepath.Join(logs, "gh.calls"))
			lines := strings.Split(strings.TrimSpace(string(calls)), "\n")
			if len(lines) != 2 {
				t.Fatalf("gh calls: got %q, want a listing and one write", lines)
			}
			if !strings.HasPrefix(lines[1], tc.wantGH) {
				t.Errorf("gh write: got %q, want it to start with %q", lines[1], tc.wantGH)
			}

			if diff := cmp.Diff(tc.wantResult, run(step("Result"), "CODE="+tc.code)); diff != "" {
				t.Errorf("step Result exit (-want +got):\n%s", diff)
			}
		})
	}
}

func stepEnv(s workflowStep) []string {
	var out []string
	for k, v := range s.Env {
		if strings.Contains(v, "${{") {
			continue // set by the test as GitHub would
		}
		out = append(out, k+"="+v)
	}
	return out
}

func writeExec(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o755); err != nil {
		t.Fatal(err)
	}
}
