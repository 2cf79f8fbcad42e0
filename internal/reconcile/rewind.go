package reconcile

import (
	"context"
	"fmt"

	"syncd.dev/syncd/internal/config"
	"syncd.dev/syncd/internal/inventory"
	"syncd.dev/syncd/internal/redact"
	"syncd.dev/syncd/internal/source"
)

// Rewind is a revision that does not descend from the one the app's
// inventory records as last applied and pruned: a force-push that rewound
// the branch, a tag moved to another line, a commit pin set back, or a
// history that cannot be read far enough to tell.
type Rewind struct {
	// From is the revision last applied and pruned, To this run's.
	From, To string
	// Ancestry is AncestryDiverged or AncestryUnknown.
	Ancestry source.Ancestry
	// Cause says why the ancestry is unknown, when an error said so.
	Cause string
	// Allowed is set when the app sets allowRewinds: the prune runs.
	Allowed bool
}

// String says what happened, in one sentence: the drivers report it
// (Events, logs, alerts) and the prune refusal quotes it.
func (rw *Rewind) String() string {
	if rw.Ancestry == source.AncestryUnknown {
		s := fmt.Sprintf("revision %s cannot be shown to descend from %s, the revision last applied and pruned (its history could not be read", ShortSHA(rw.To), ShortSHA(rw.From))
		if rw.Cause != "" {
			s += ": " + rw.Cause
		}
		return s + ")"
	}
	return fmt.Sprintf("revision %s does not descend from %s, the revision last applied and pruned (a force-push that rewound the ref, or a rollback)", ShortSHA(rw.To), ShortSHA(rw.From))
}

// refusal is the prune refusal's message.
func (rw *Rewind) refusal(app string) string {
	return fmt.Sprintf("not pruning: %s; it is applied, but nothing the dropped commits added is deleted: push on top of %s, or set allowRewinds: true on app %s if the rewind is intended", rw.String(), ShortSHA(rw.From), app)
}

// checkRewind compares the revision a run applies with the one the
// inventory records. An app with allowRewinds gets the rewind reported and
// pruned; any other has its prune refused (inventory.ReasonRewound).
func (r *Runner) checkRewind(ctx context.Context, app config.App, run *inventory.Run, rev source.Revision) *Rewind {
	run.SetRevision(rev.SHA)
	last := run.Revision()
	src := r.sources[app.Source]
	if last == "" || last == rev.SHA || src == nil {
		return nil
	}
	a, err := src.Descends(ctx, rev.SHA, last)
	if a == source.AncestryDescends {
		return nil
	}
	rw := &Rewind{From: last, To: rev.SHA, Ancestry: a, Allowed: app.AllowRewinds}
	if err != nil {
		rw.Ancestry, rw.Cause = source.AncestryUnknown, redact.Error(err)
	}
	if !rw.Allowed {
		run.Rewound(rw.refusal(app.Name))
	}
	return rw
}
