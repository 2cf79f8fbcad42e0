package main

import (
	"bytes"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"syncd.dev/syncd/internal/planner"
)

// TestProgressReporter: a line per finished stage when stderr is not a
// terminal, one line redrawn in place (at most every progressRedraw
// while objects are done) and cleared at the end on a terminal, nothing
// when quiet.
func TestProgressReporter(t *testing.T) {
	tests := map[string]struct {
		mode  progressMode
		verb  string
		width int
		want  string
	}{
		"lines": {mode: progressLines, verb: "applied", want: "app web: cluster: 1/1 objects applied in 100ms\n" +
			"app web: namespaced: 2/3 objects applied in 1.3s\n"},
		"lines, dry run": {mode: progressLines, verb: "dry-run", want: "app web: cluster: 1/1 objects dry-run in 100ms\n" +
			"app web: namespaced: 2/3 objects dry-run in 1.3s\n"},
		"terminal": {mode: progressTerminal, verb: "applied", want: "\r\x1b[Kapp web: rendering" +
			"\r\x1b[Kapp web: applying cluster 0/1 objects 0s" +
			"\r\x1b[Kapp web: applying cluster 1/1 objects 100ms" +
			"\r\x1b[Kapp web: applying namespaced 0/3 objects 0s" +
			// The second object is done within progressRedraw of the
			// first: no redraw.
			"\r\x1b[Kapp web: applying namespaced 1/3 objects 1.2s" +
			"\r\x1b[K"},
		"narrow terminal": {mode: progressTerminal, verb: "dry-run", width: 26, want: "\r\x1b[Kapp web: rendering" +
			"\r\x1b[Kapp web: dry-running clus" +
			"\r\x1b[Kapp web: dry-running clus" +
			"\r\x1b[Kapp web: dry-running name" +
			"\r\x1b[Kapp web: dry-running name" +
			"\r\x1b[K"},
		"quiet": {mode: progressNone},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			var out bytes.Buffer
			clock := time.Unix(0, 0)
			p := newProgressReporter(&out, tc.mode, tc.verb)
			if p != nil {
				p.now = func() time.Time { return clock }
				p.every = 0
				p.width = tc.width
			}
			p.Start("web")
			if pr := p.progress(); pr != nil {
				pr.StageStarted(planner.StageCluster, 1)
				clock = clock.Add(100 * time.Millisecond)
				pr.ObjectDone(planner.StageCluster)
				pr.StageDone(planner.StageCluster)
				pr.StageStarted(planner.StageNamespaced, 3)
				clock = clock.Add(1200 * time.Millisecond)
				pr.ObjectDone(planner.StageNamespaced)
				clock = clock.Add(100 * time.Millisecond)
				pr.ObjectDone(planner.StageNamespaced)
				pr.StageDone(planner.StageNamespaced)
			}
			p.Stop()
			if diff := cmp.Diff(tc.want, out.String()); diff != "" {
				t.Errorf("stderr (-want +got):\n%s", diff)
			}
		})
	}
}
