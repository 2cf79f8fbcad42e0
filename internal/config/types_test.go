package config

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"syncd.dev/syncd/internal/alertevent"
)

func TestGitSourceRef(t *testing.T) {
	tests := map[string]struct {
		git  GitSource
		want [2]string
	}{
		"branch": {GitSource{GitRef: GitRef{Branch: "main"}}, [2]string{RefBranch, "main"}},
		"tag":    {GitSource{GitRef: GitRef{Tag: "v1"}}, [2]string{RefTag, "v1"}},
		"semver": {GitSource{GitRef: GitRef{Semver: "~1.2"}}, [2]string{RefSemver, "~1.2"}},
		"commit": {GitSource{GitRef: GitRef{Commit: "abc"}}, [2]string{RefCommit, "abc"}},
		"none":   {GitSource{}, [2]string{}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			kind, value := tc.git.Ref()
			if diff := cmp.Diff(tc.want, [2]string{kind, value}); diff != "" {
				t.Errorf("Ref() (-want +got):\n%s", diff)
			}
		})
	}
}

func TestHelpers(t *testing.T) {
	c := &Config{Sources: []Source{{Name: "a"}, {Name: "b", Git: GitSource{GitRef: GitRef{Branch: "dev"}}}}}
	src, ok := c.Source("b")
	_, missing := c.Source("c")
	alert := Alert{Events: []string{alertevent.Drift}}
	no := false
	app := App{
		Name: "web",
		AppSpec: AppSpec{
			Path: "deploy", Prune: &no, Manager: "m", Split: []SplitRule{{Manager: "m-images"}},
			Conflicts: ConflictPolicy{Default: ActionYield},
		},
	}
	got := []any{
		src.Git.Branch, ok, missing,
		GitAuth{}.BasicUsername(), GitAuth{Username: "bot"}.BasicUsername(),
		alert.Wants(alertevent.Drift), alert.Wants(alertevent.Sync), Alert{}.Wants(alertevent.Sync),
		app.TreePath(), app.PruneEnabled(), app.Managers(), app.Conflicts.DefaultAction(),
	}
	want := []any{
		"dev", true, false,
		"git", "bot",
		true, false, true,
		"deploy", false, []string{"m", "m-images"}, ActionYield,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("helpers (-want +got):\n%s", diff)
	}
}

func TestDriftMode(t *testing.T) {
	tests := map[string]struct {
		mode   string
		want   string
		detect bool
	}{
		"default": {"", DriftCorrect, false},
		"correct": {DriftCorrect, DriftCorrect, false},
		"detect":  {DriftDetect, DriftDetect, true},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			a := App{AppSpec: AppSpec{Drift: DriftPolicy{Mode: tc.mode}}}
			if got := a.DriftMode(); got != tc.want {
				t.Errorf("DriftMode() = %q, want %q", got, tc.want)
			}
			if got := a.DetectOnly(); got != tc.detect {
				t.Errorf("DetectOnly() = %v, want %v", got, tc.detect)
			}
		})
	}
}

// TestValidates: an app validates each stage with a dry run unless it
// says validate: false.
func TestValidates(t *testing.T) {
	yes, no := true, false
	tests := map[string]struct {
		validate *bool
		want     bool
	}{
		"unset: default true": {nil, true},
		"true":                {&yes, true},
		"false":               {&no, false},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if got := (App{AppSpec: AppSpec{Validate: tc.validate}}).Validates(); got != tc.want {
				t.Errorf("Validates() = %v, want %v", got, tc.want)
			}
		})
	}
}
