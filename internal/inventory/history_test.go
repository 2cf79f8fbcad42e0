package inventory

import (
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"syncd.dev/syncd/internal/applier"
)

// TestRecordHistory: an apply that changed something is always
// recorded; one that changed nothing only when its revision, result or
// refused prune differs from the last line; the oldest lines go past
// MaxHistory.
func TestRecordHistory(t *testing.T) {
	at := func(min int) metav1.Time { return metav1.NewTime(time.Date(2026, 12, 5, 4, min, 0, 0, time.UTC)) }
	first := HistoryEntry{Time: at(0), Revision: "a", Result: HistoryApplied, Writes: applier.Writes{Created: 3}}
	tests := map[string]struct {
		history []HistoryEntry
		entry   HistoryEntry
		want    []HistoryEntry
	}{
		"first apply": {nil, first, []HistoryEntry{first}},
		"no-op sync of the same revision": {[]HistoryEntry{first},
			HistoryEntry{Time: at(5), Revision: "a", Result: HistoryApplied},
			[]HistoryEntry{first}},
		"a hand edit taken back at the same revision": {[]HistoryEntry{first},
			HistoryEntry{Time: at(5), Revision: "a", Result: HistoryApplied, Writes: applier.Writes{Configured: 1}},
			[]HistoryEntry{first, {Time: at(5), Revision: "a", Result: HistoryApplied, Writes: applier.Writes{Configured: 1}}}},
		"a hand edit reverted by force at the same revision": {[]HistoryEntry{first},
			HistoryEntry{Time: at(5), Revision: "a", Result: HistoryApplied, Writes: applier.Writes{Forced: 1}},
			[]HistoryEntry{first, {Time: at(5), Revision: "a", Result: HistoryApplied, Writes: applier.Writes{Forced: 1}}}},
		"a new revision with nothing to change": {[]HistoryEntry{first},
			HistoryEntry{Time: at(5), Revision: "b", Result: HistoryApplied},
			[]HistoryEntry{first, {Time: at(5), Revision: "b", Result: HistoryApplied}}},
		"the same revision now conflicts": {[]HistoryEntry{first},
			HistoryEntry{Time: at(5), Revision: "a", Result: HistoryConflicts},
			[]HistoryEntry{first, {Time: at(5), Revision: "a", Result: HistoryConflicts}}},
		"a prune refused": {[]HistoryEntry{first},
			HistoryEntry{Time: at(5), Revision: "a", Result: HistoryApplied, PruneRefused: ReasonBudget},
			[]HistoryEntry{first, {Time: at(5), Revision: "a", Result: HistoryApplied, PruneRefused: ReasonBudget}}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, recordHistory(tc.history, tc.entry)); diff != "" {
				t.Errorf("recordHistory (-want +got):\n%s", diff)
			}
		})
	}

	var full []HistoryEntry
	for i := range MaxHistory + 3 {
		full = recordHistory(full, HistoryEntry{Time: at(i), Revision: fmt.Sprint(i), Result: HistoryApplied})
	}
	if len(full) != MaxHistory || full[0].Revision != "3" || full[MaxHistory-1].Revision != fmt.Sprint(MaxHistory+2) {
		t.Errorf("after %d applies: %d lines from %s to %s, want the last %d", MaxHistory+3, len(full), full[0].Revision, full[len(full)-1].Revision, MaxHistory)
	}
}

// TestHistoryAnnotationRoundTrip: the annotation decodes to what was
// encoded, and one edited into garbage is dropped, not an error.
func TestHistoryAnnotationRoundTrip(t *testing.T) {
	h := []HistoryEntry{{Time: metav1.NewTime(time.Date(2026, 12, 5, 4, 0, 0, 0, time.UTC)), Revision: "a", Result: HistoryFailed, Writes: applier.Writes{Configured: 2}, PruneRefused: ReasonApplyIncomplete}}
	if diff := cmp.Diff(h, decodeHistory(encodeHistory(h))); diff != "" {
		t.Errorf("round trip (-want +got):\n%s", diff)
	}
	if got := decodeHistory("{not json"); got != nil {
		t.Errorf("garbage decoded to %v", got)
	}
}

// TestHistoryAnnotationKeys: the counts keep their JSON keys (created,
// configured), so entries written before forced writes were recorded
// still read, and a forced write has its own.
func TestHistoryAnnotationKeys(t *testing.T) {
	old := `[{"time":"2026-12-05T04:00:00Z","revision":"a","result":"applied","created":3,"configured":1}]`
	want := []HistoryEntry{{Time: metav1.NewTime(time.Date(2026, 12, 5, 4, 0, 0, 0, time.UTC)), Revision: "a", Result: HistoryApplied, Writes: applier.Writes{Created: 3, Configured: 1}}}
	if diff := cmp.Diff(want, decodeHistory(old)); diff != "" {
		t.Errorf("an entry of the earlier shape (-want +got):\n%s", diff)
	}
	forced := []HistoryEntry{{Time: want[0].Time, Revision: "a", Result: HistoryApplied, Writes: applier.Writes{Forced: 1}}}
	if got, want := encodeHistory(forced), `[{"time":"2026-12-05T04:00:00Z","revision":"a","result":"applied","forced":1}]`; got != want {
		t.Errorf("encoded %s, want %s", got, want)
	}
}

func TestHistoryNote(t *testing.T) {
	tests := map[string]struct {
		e    HistoryEntry
		want string
	}{
		"nothing to add":  {HistoryEntry{Writes: applier.Writes{Created: 1, Configured: 2}, Pruned: 1}, ""},
		"a forced revert": {HistoryEntry{Writes: applier.Writes{Forced: 1}}, "1 forced"},
		"everything": {HistoryEntry{Writes: applier.Writes{Recreated: 1, Yielded: 2}, Orphaned: 3, PruneRefused: ReasonBudget},
			"1 recreated, 2 yielded; 3 orphaned; prune refused (budget)"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if got := tc.e.Note(); got != tc.want {
				t.Errorf("Note() = %q, want %q", got, tc.want)
			}
		})
	}
}
