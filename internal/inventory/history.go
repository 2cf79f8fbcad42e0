package inventory

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"syncd.dev/syncd/internal/applier"
)

// AnnotationHistory on the parent holds the app's last applies, oldest
// first (a JSON list of HistoryEntry, at most MaxHistory): what
// `syncd history` prints, for App objects and config file apps alike.
const AnnotationHistory = "syncd.dev/history"

// MaxHistory bounds the applies the parent keeps.
const MaxHistory = 10

// HistoryEntry is one apply of the app: when, which revision, how it
// ended and what it changed.
type HistoryEntry struct {
	Time     metav1.Time `json:"time"`
	Revision string      `json:"revision,omitempty"`
	// Result is how the apply ended (a HistoryResult).
	Result HistoryResult `json:"result"`
	// Writes are the slices the API server wrote, by action, as the
	// Synced Event counts them (its fields are inline in the JSON:
	// created, configured, forced, ...). Entries written before forced,
	// yielded and handed-off writes were recorded count recreated
	// objects as created.
	applier.Writes
	Pruned   int `json:"pruned,omitempty"`
	Orphaned int `json:"orphaned,omitempty"`
	// PruneRefused is the guard that kept the prune from running.
	PruneRefused Reason `json:"pruneRefused,omitempty"`
}

// HistoryResult is how an apply ended.
type HistoryResult string

const (
	// HistoryApplied: every object was applied.
	HistoryApplied HistoryResult = "applied"
	// HistoryConflicts: field conflicts held objects back.
	HistoryConflicts HistoryResult = "conflicts"
	// HistoryFailed: the apply failed or left objects unapplied.
	HistoryFailed HistoryResult = "failed"
)

// historyEntry describes the run that ends with cs, applyErr and rep.
func (r *Run) historyEntry(now time.Time, cs *applier.ChangeSet, applyErr error, rep *Report) HistoryEntry {
	e := HistoryEntry{Time: metav1.NewTime(now.UTC().Truncate(time.Second)), Revision: r.revision, Result: HistoryApplied,
		Pruned: len(rep.Deleted), Orphaned: len(rep.Orphaned)}
	e.Writes = cs.Writes()
	switch {
	case applyErr != nil || cs == nil:
		e.Result = HistoryFailed
	case cs.Count(applier.Conflicted) > 0:
		e.Result = HistoryConflicts
	case !cs.OK():
		e.Result = HistoryFailed
	}
	if rep.Refused != nil {
		e.PruneRefused = rep.Refused.Reason
	}
	return e
}

// Note says what an entry's created, configured and pruned counts do
// not: the other writes (recreated, forced, yielded, handed off), objects
// orphaned and a prune refused, joined by "; " ("" when none), as
// `syncd history` prints it.
func (e HistoryEntry) Note() string {
	var parts []string
	if others := e.Writes.Others(); others != "" {
		parts = append(parts, others)
	}
	if e.Orphaned > 0 {
		parts = append(parts, fmt.Sprintf("%d orphaned", e.Orphaned))
	}
	if e.PruneRefused != "" {
		parts = append(parts, fmt.Sprintf("prune refused (%s)", e.PruneRefused))
	}
	return strings.Join(parts, "; ")
}

// recordHistory returns history with e appended when e is worth a line:
// it changed something, or its revision or result differs from the
// last recorded apply. A sync that found nothing to do adds nothing, so
// the parent is not rewritten for it. The oldest entries past
// MaxHistory are dropped.
func recordHistory(history []HistoryEntry, e HistoryEntry) []HistoryEntry {
	changed := e.Writes.Total()+e.Pruned+e.Orphaned > 0
	if n := len(history); n > 0 && !changed {
		last := history[n-1]
		if last.Revision == e.Revision && last.Result == e.Result && last.PruneRefused == e.PruneRefused {
			return history
		}
	}
	out := append(append([]HistoryEntry{}, history...), e)
	if len(out) > MaxHistory {
		out = out[len(out)-MaxHistory:]
	}
	return out
}

// decodeHistory reads the annotation; an unreadable one (edited by
// hand) is dropped rather than failing the app's syncs.
func decodeHistory(v string) []HistoryEntry {
	if v == "" {
		return nil
	}
	var out []HistoryEntry
	if json.Unmarshal([]byte(v), &out) != nil {
		return nil
	}
	return out
}

// encodeHistory writes the annotation's value.
func encodeHistory(h []HistoryEntry) string {
	b, _ := json.Marshal(h) // a slice of plain structs always encodes
	return string(b)
}
