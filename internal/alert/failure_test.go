package alert

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"syncd.dev/syncd/internal/reconcile"
	"syncd.dev/syncd/internal/source"
)

// failureView is what a test checks of an error alert.
type failureView struct {
	Resolved bool
	Revision string
	Cause    string
	Summary  string // its first words
}

func viewFailures(evs []Event) []failureView {
	var out []failureView
	for _, ev := range evs {
		words := strings.Fields(ev.Summary)
		out = append(out, failureView{Resolved: ev.Resolved, Revision: ev.Revision, Cause: ev.Cause, Summary: strings.Join(words[:min(3, len(words))], " ")})
	}
	return out
}

func TestFailuresCause(t *testing.T) {
	render := func(rev, msg string) Attempt {
		return Attempt{App: "shop", Revision: rev, Stage: reconcile.StageRender, Result: reconcile.ResultFailed, Err: errors.New(msg), At: t0}
	}
	conflicts := func(rev string) Attempt {
		return Attempt{App: "shop", Revision: rev, Stage: reconcile.StageApply, Result: reconcile.ResultConflicts, Err: errors.New("1 object(s) blocked by field conflicts"), At: t0}
	}
	unreachable := func(kind source.Kind, msg string) Attempt {
		return Attempt{App: "shop", Revision: "r1", Stage: reconcile.StageSource, Result: reconcile.ResultFailed, At: t0,
			Err: &source.Error{Source: "repo", Kind: kind, URL: "https://git.example/shop", Ref: "branch main", Op: "list refs", Err: errors.New(msg)}}
	}
	ok := func(rev string) Attempt { return Attempt{App: "shop", Revision: rev, At: t0} }
	const (
		renderR1    = "stage=render result=failed revision=r1"
		renderR2    = "stage=render result=failed revision=r2"
		conflictsR1 = "stage=apply result=conflicts revision=r1"
		srcDown     = "stage=source source=repo kind=Unreachable"
		srcAuth     = "stage=source source=repo kind=AuthFailed"
	)
	tests := map[string]struct {
		attempts []Attempt
		want     [][]failureView // per attempt
	}{
		"a retry of the same failure is the same alert, whatever its text": {
			attempts: []Attempt{render("r1", "bad yaml at line 7"), render("r1", "bad yaml at line 7, again")},
			want: [][]failureView{
				{{Revision: "r1", Cause: renderR1, Summary: "bad yaml at"}},
				{{Revision: "r1", Cause: renderR1, Summary: "bad yaml at"}},
			},
		},
		"a failure at a new revision supersedes the open one": {
			attempts: []Attempt{render("r1", "bad yaml"), render("r2", "missing.yaml does not exist")},
			want: [][]failureView{
				{{Revision: "r1", Cause: renderR1, Summary: "bad yaml"}},
				{
					{Revision: "r2", Cause: renderR2, Summary: "missing.yaml does not"},
					{Resolved: true, Revision: "r2", Cause: renderR1, Summary: "superseded: the app"},
				},
			},
		},
		"a failure of another stage at the same revision supersedes the open one": {
			attempts: []Attempt{render("r1", "bad yaml"), conflicts("r1"), ok("r2")},
			want: [][]failureView{
				{{Revision: "r1", Cause: renderR1, Summary: "bad yaml"}},
				{
					{Revision: "r1", Cause: conflictsR1, Summary: "1 object(s) blocked"},
					{Resolved: true, Revision: "r1", Cause: renderR1, Summary: "superseded: the app"},
				},
				{{Resolved: true, Revision: "r2", Cause: conflictsR1, Summary: "app shop reconciles"}},
			},
		},
		"a source failure names the source and its kind, and is resolved when it answers": {
			attempts: []Attempt{unreachable(source.KindUnreachable, "connection refused"), unreachable(source.KindUnreachable, "i/o timeout"), unreachable(source.KindAuth, "401"), ok("r2")},
			want: [][]failureView{
				{{Revision: "r1", Cause: srcDown, Summary: `source "repo": list`}},
				{{Revision: "r1", Cause: srcDown, Summary: `source "repo": list`}},
				{
					{Revision: "r1", Cause: srcAuth, Summary: `source "repo": list`},
					{Resolved: true, Revision: "r1", Cause: srcDown, Summary: "superseded: the app"},
				},
				{{Resolved: true, Revision: "r2", Cause: srcAuth, Summary: "source repo answers"}},
			},
		},
		"a success without an open failure says nothing": {
			attempts: []Attempt{ok("r1")},
			want:     [][]failureView{nil},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			var f Failures
			var got [][]failureView
			for _, a := range tc.attempts {
				got = append(got, viewFailures(f.Events(a)))
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("events per attempt (-want +got):\n%s", diff)
			}
		})
	}
}

func TestFailureSummary(t *testing.T) {
	var f Failures
	err := &source.Error{Source: "repo", Kind: source.KindRepositoryNotFound, URL: "https://git.example/shop", Ref: "branch main", Op: "list refs",
		Err: errors.New("repository not found"), Hint: "check the url and that the credentials can read it"}
	evs := f.Events(Attempt{App: "shop", Revision: "r1", Stage: reconcile.StageSource, Result: reconcile.ResultFailed, Err: fmt.Errorf("app shop: %w", err), At: t0})
	if len(evs) != 1 {
		t.Fatalf("got %d events, want 1: %+v", len(evs), evs)
	}
	for _, want := range []string{`source "repo"`, "RepositoryNotFound", "check the url", "the last good revision stays applied"} {
		if !strings.Contains(evs[0].Summary, want) {
			t.Errorf("summary %q does not say %q", evs[0].Summary, want)
		}
	}
}

// TestErrorCausesReachTheReceiver checks, through a webhook sink, that a
// new cause is delivered while the old one is open and that the old one
// gets its resolved message, with the fingerprint it was opened with.
func TestErrorCausesReachTheReceiver(t *testing.T) {
	rec := newRecorder(t)
	n := mustNew(t, []Sink{testAlert(t, "ops", SinkWebhook, rec.URL)}, testOptions(newFakeClock()))
	var f Failures
	for _, a := range []Attempt{
		{App: "shop", Revision: "r1", Stage: reconcile.StageRender, Result: reconcile.ResultFailed, Err: errors.New("bad yaml")},
		{App: "shop", Revision: "r1", Stage: reconcile.StageRender, Result: reconcile.ResultFailed, Err: errors.New("bad yaml")},
		{App: "shop", Revision: "r2", Stage: reconcile.StageRender, Result: reconcile.ResultFailed, Err: errors.New("missing.yaml does not exist")},
		{App: "shop", Revision: "r3"},
	} {
		a.At = t0
		for _, ev := range f.Events(a) {
			n.Notify(ev)
		}
	}
	closeNotifier(t, n)
	type got struct{ State, Revision, Summary, Fingerprint string }
	var gots []got
	for _, r := range rec.Requests() {
		var p webhookSchema
		decodeStrict(t, r.Body, &p)
		gots = append(gots, got{p.State, p.Revision, strings.Join(strings.Fields(p.Summary)[:2], " "), p.Fingerprint})
	}
	if len(gots) != 4 {
		t.Fatalf("sent %d alerts, want 4: %+v", len(gots), gots)
	}
	first, second := gots[0].Fingerprint, gots[1].Fingerprint
	want := []got{
		{"open", "r1", "bad yaml", first},
		{"open", "r2", "missing.yaml does", second},
		{"resolved", "r2", "superseded: the", first},
		{"resolved", "r3", "app shop", second},
	}
	if first == second {
		t.Errorf("both causes have fingerprint %s", first)
	}
	if diff := cmp.Diff(want, gots); diff != "" {
		t.Errorf("sent (-want +got):\n%s", diff)
	}
}
