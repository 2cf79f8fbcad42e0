package ui

import (
	"context"
	"net/http"
	"strings"

	"syncd.dev/syncd/internal/redact"
)

// planPage is an app's preview of its source as it is now: what the
// next reconcile would create, change, prune, and the conflicts that
// would hold it back.
type planPage struct {
	App AppRef
	// Text is the report as syncd plan prints it (values of Secrets and
	// sensitive fields masked, as in every output).
	Text string
	// Changed, Blocked and PruneBlocked say what the plan's exit code
	// says: changes to apply, conflicts or refused objects that hold the
	// apply back, a prune a guard refuses.
	Changed, Blocked, PruneBlocked bool
}

// plan previews one app through the PlanSource.
func (s *Server) plan(ctx context.Context, ref AppRef) (*planPage, error) {
	rep, err := s.opts.Plans.Plan(ctx, ref)
	if err != nil {
		return nil, err
	}
	if rep == nil {
		return nil, errNotFound
	}
	var b strings.Builder
	if err := rep.WriteText(&b); err != nil {
		return nil, err
	}
	return &planPage{
		App: ref, Text: redact.Text(b.String()),
		Changed: rep.Changed(), Blocked: rep.Blocked() || rep.Summary.Errors > 0, PruneBlocked: rep.PruneBlocked(),
	}, nil
}

func (s *Server) servePlan(w http.ResponseWriter, r *http.Request) {
	ref := appRefOf(r.URL.Query())
	page, err := s.plan(r.Context(), ref)
	if err != nil {
		s.fail(w, err)
		return
	}
	s.render(w, "plan", map[string]any{"Title": "Plan of " + ref.String(), "Page": page})
}
