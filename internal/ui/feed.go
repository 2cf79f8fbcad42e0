package ui

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"

	"golang.org/x/sync/errgroup"

	"syncd.dev/syncd/internal/drift"
	"syncd.dev/syncd/internal/planner"
	"syncd.dev/syncd/internal/redact"
)

// feedChecks bounds the drift checks (each a render) the feed runs at
// once.
const feedChecks = 4

// feedEntry is one line of the drift feed: a finding of a file app's
// check, or an App's drift count as its status tells it.
type feedEntry struct {
	Time *time.Time
	App  AppRef
	// Finding is the field's finding; nil for a count.
	Finding *drift.Finding
	// Ref is the finding's object, linked to its ownership map.
	Ref *planner.ObjectRef
	// Summary says what a count entry counts.
	Summary string
}

// feedPage is what the drift feed shows.
type feedPage struct {
	Entries []feedEntry
	// Notes say which apps' findings could not be listed, and why.
	Notes []string
}

// feed builds the drift feed: every drift finding of the file apps the
// drift source knows (one check per app, feedChecks at a time), and the
// drift counts of the App objects and of the file apps it does not know,
// newest first; entries without a time come last.
func (s *Server) feed(ctx context.Context) (*feedPage, error) {
	rows, warns, err := s.appRows(ctx)
	if err != nil {
		return nil, err
	}
	reports := make([]*drift.Report, len(rows))
	errs := make([]error, len(rows))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(feedChecks)
	for i, row := range rows {
		if !s.checksDrift(row) {
			continue
		}
		g.Go(func() error {
			reports[i], errs[i] = s.opts.Drift.Drift(gctx, row.Ref)
			return nil
		})
	}
	_ = g.Wait() // errors are per app, in errs
	page := &feedPage{Notes: warns}
	for i, row := range rows {
		switch {
		case errs[i] != nil && !row.Ref.File():
			// An App the check cannot translate (not of a GitSource)
			// still has the count its controller wrote.
			page.Entries = append(page.Entries, countEntry(row))
		case errs[i] != nil:
			page.Notes = append(page.Notes, fmt.Sprintf("%s: drift: %s", row.Ref, redact.Error(errs[i])))
		case reports[i] != nil:
			page.Entries = append(page.Entries, findingEntries(row.Ref, reports[i])...)
		case row.Drift > 0 || row.Overlaps > 0:
			page.Entries = append(page.Entries, countEntry(row))
		}
	}
	slices.SortStableFunc(page.Entries, newerFirst)
	return page, nil
}

// checksDrift says whether the feed runs a drift check of row: every
// file app the drift source knows, and an App whose controller counted
// drift or overlaps (a render and a read of each of its objects, so not
// for the Apps that have none).
func (s *Server) checksDrift(row AppRow) bool {
	if s.opts.Drift == nil {
		return false
	}
	return row.Ref.File() || row.Drift > 0 || row.Overlaps > 0
}

// findingEntries are a report's drift findings (not the informational
// classes), each at its culprit's time.
func findingEntries(app AppRef, rep *drift.Report) []feedEntry {
	var out []feedEntry
	for i := range rep.Findings {
		f := &rep.Findings[i]
		if !f.Class.IsDrift() {
			continue
		}
		ref := f.Ref
		out = append(out, feedEntry{Time: culpritTime(f), App: app, Finding: f, Ref: &ref})
	}
	return out
}

// culpritTime is when the finding's culprit last wrote the object's
// fields; nil when unknown (a removed field has no owner).
func culpritTime(f *drift.Finding) *time.Time {
	for _, o := range f.Owners {
		if o.Manager == f.Culprit {
			return o.Time
		}
	}
	return nil
}

// countEntry is an app's drift as its status counts it: an App's
// controller and a daemon (for its file apps) keep counts, not findings.
func countEntry(row AppRow) feedEntry {
	rev := cmp.Or(row.DriftRevision, row.Revision)
	e := feedEntry{Time: row.DriftTime, App: row.Ref, Summary: fmt.Sprintf("%d fields differ from revision %s", row.Drift, shortRevision(rev))}
	if row.Overlaps > 0 {
		e.Summary += fmt.Sprintf("; %d objects overlap with another app", row.Overlaps)
	}
	return e
}

// newerFirst orders entries by time, newest first, those without a time
// last.
func newerFirst(a, b feedEntry) int {
	switch {
	case a.Time == nil && b.Time == nil:
		return 0
	case a.Time == nil:
		return 1
	case b.Time == nil:
		return -1
	}
	return cmp.Compare(b.Time.UnixNano(), a.Time.UnixNano())
}
