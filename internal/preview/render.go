package preview

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
)

// MarkdownLimit is the largest comment body GitHub accepts, in
// characters.
const MarkdownLimit = 65536

// MarkdownBudget is the most WriteMarkdown writes, in bytes (never fewer
// than characters): below MarkdownLimit with room for a CI wrapper's own
// heading, status line and a short stderr excerpt.
const MarkdownBudget = 60000

// WriteJSON writes the report as one indented JSON document.
func (r *Report) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// WriteText writes the report for a terminal: one line per object that
// changes, its conflicts, handoffs and ownership moves, its diff indented,
// then a summary line.
func (r *Report) WriteText(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "app %s: revision %s\n", r.App, r.Revision)
	for _, n := range r.Notes {
		fmt.Fprintf(&b, "note: %s\n", n)
	}
	for _, o := range r.Objects {
		if o.Action == Unchanged {
			continue
		}
		fmt.Fprintf(&b, "%s: %s\n", o.Object, o.Action)
		if o.Guard != nil {
			fmt.Fprintf(&b, "  prune guard %s: %s\n", o.Guard.Reason, o.Guard.Message)
		}
		if o.Action == Orphan {
			b.WriteString("  adopted: it stays in the cluster without the app's label and managers\n")
		}
		switch o.Action {
		case Skip:
			fmt.Fprintf(&b, "  skipped: %s\n", o.Skipped)
		case Keep:
			fmt.Fprintf(&b, "  left Git; prune disabled (%s): dropped from the inventory, kept in the cluster as it is\n", o.Skipped)
		}
		if o.Error != "" {
			fmt.Fprintf(&b, "  error: %s\n", o.Error)
		}
		for _, c := range o.Conflicts {
			fmt.Fprintf(&b, "  conflict: %s is owned by %q: %s\n", c.Path, c.Manager, c.Outcome)
		}
		for _, h := range o.Handoffs {
			fmt.Fprintf(&b, "  handoff: %s is no longer set from Git; syncd holds it at its live value until another manager owns it\n", h.Path)
		}
		for _, m := range o.Ownership {
			fmt.Fprintf(&b, "  ownership: %s moves from %s to %s\n", m.Path, m.From, m.To)
		}
		for _, p := range o.Ignored {
			fmt.Fprintf(&b, "  ignored: %s differs from Git; an ignore rule of the app matches it, so the apply keeps the live value\n", p)
		}
		for _, line := range strings.SplitAfter(strings.TrimSuffix(o.Diff, "\n"), "\n") {
			if line != "" {
				b.WriteString("    " + strings.TrimSuffix(line, "\n") + "\n")
			}
		}
	}
	if r.Prune != nil && r.Prune.Refused != nil {
		fmt.Fprintf(&b, "prune refused (%s): %s\n", r.Prune.Refused.Reason, r.Prune.Refused.Message)
	}
	b.WriteString(r.summaryLine() + "\n")
	_, err := io.WriteString(w, b.String())
	return err
}

func (r *Report) summaryLine() string {
	s := r.Summary
	line := fmt.Sprintf("%d to create, %d to update, %d unchanged", s.Create, s.Update, s.Unchanged)
	if s.Recreate > 0 {
		line += fmt.Sprintf(", %d to recreate", s.Recreate)
	}
	if s.Errors > 0 {
		line += fmt.Sprintf(", %d refused", s.Errors)
	}
	if s.Skip > 0 {
		line += fmt.Sprintf(", %d skipped on request", s.Skip)
	}
	if s.Keep > 0 {
		line += fmt.Sprintf(", %d kept on request (prune disabled)", s.Keep)
	}
	if s.OnlyIgnored > 0 {
		line += fmt.Sprintf(", %d of the updates only in ignored fields (the apply keeps their live values)", s.OnlyIgnored)
	}
	if s.Prune+s.Orphan+s.Spared > 0 {
		line += fmt.Sprintf(", %d to prune, %d to orphan, %d spared by prune guards", s.Prune, s.Orphan, s.Spared)
	}
	line += fmt.Sprintf(", %d conflict(s), %d handoff(s)", s.Conflicts, s.Handoffs)
	if s.NotDryRun > 0 {
		line += fmt.Sprintf(" (%s)", notDryRunNote(s.NotDryRun))
	}
	return line
}

// onRequestLine is the markdown line of an object left alone on request:
// skipped by the apply, or kept in the cluster by the prune.
func onRequestLine(o Object) string {
	if o.Action == Keep {
		return fmt.Sprintf("- `%s` left Git: **kept in the cluster** and dropped from the inventory (`%s`)", o.Object, o.Skipped)
	}
	return fmt.Sprintf("- `%s` %s", o.Object, oneLine(o.Skipped))
}

// notDryRunNote explains the unchanged objects that were not dry-run.
func notDryRunNote(n int) string {
	return fmt.Sprintf("%d unchanged object(s) not dry-run: exactly as syncd last applied them", n)
}

// WriteMarkdown writes the report as a GitHub pull-request comment: a
// summary table, then blocking conflicts, handoff warnings and other
// conflicts, then one collapsed <details> block per changed object with
// its diff. When the comment would exceed MarkdownBudget, the remaining
// objects are left out with a note saying how many.
func (r *Report) WriteMarkdown(w io.Writer) error {
	_, err := io.WriteString(w, r.markdown(MarkdownBudget))
	return err
}

func (r *Report) markdown(limit int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "### syncd plan: app `%s` at `%s`\n\n", r.App, r.Revision)
	s := r.Summary
	if r.Prune == nil {
		b.WriteString("| Create | Update | Unchanged | Recreate | Refused | Conflicts | Handoffs |\n")
		b.WriteString("|---:|---:|---:|---:|---:|---:|---:|\n")
		fmt.Fprintf(&b, "| %d | %d | %d | %d | %d | %d | %d |\n\n", s.Create, s.Update, s.Unchanged, s.Recreate, s.Errors, s.Conflicts, s.Handoffs)
	} else {
		b.WriteString("| Create | Update | Unchanged | Recreate | Prune | Orphan | Spared | Refused | Conflicts | Handoffs |\n")
		b.WriteString("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
		fmt.Fprintf(&b, "| %d | %d | %d | %d | %d | %d | %d | %d | %d | %d |\n\n", s.Create, s.Update, s.Unchanged, s.Recreate, s.Prune, s.Orphan, s.Spared, s.Errors, s.Conflicts, s.Handoffs)
	}
	if s.NotDryRun > 0 {
		b.WriteString("_" + notDryRunNote(s.NotDryRun) + "._\n\n")
	}
	for _, n := range r.Notes {
		b.WriteString("> [!NOTE]\n> " + oneLine(n) + "\n\n")
	}

	var blocking, resolved, handoffs, errs, guarded, removed, skipped []string
	if r.Prune != nil && r.Prune.Refused != nil && pruneBlocking(r.Prune.Refused.Reason) {
		guarded = append(guarded, fmt.Sprintf("- the whole prune is refused (`%s`): %s", r.Prune.Refused.Reason, oneLine(r.Prune.Refused.Message)))
	}
	for _, o := range r.Objects {
		switch {
		case o.Action == Prune:
			removed = append(removed, fmt.Sprintf("- `%s` left Git: **deleted**", o.Object))
		case o.Action == Orphan:
			removed = append(removed, fmt.Sprintf("- `%s` left Git: **orphaned** (adopted: it stays in the cluster without the app's label and managers)", o.Object))
		case o.Action == Keep:
			removed = append(removed, onRequestLine(o))
		case o.Action == Skip:
			skipped = append(skipped, onRequestLine(o))
		case o.Action == Spared && o.Guard != nil && (r.Prune == nil || r.Prune.Refused == nil || r.Prune.Refused.Reason != o.Guard.Reason):
			guarded = append(guarded, fmt.Sprintf("- `%s` left Git but stays (`%s`): %s", o.Object, o.Guard.Reason, oneLine(o.Guard.Message)))
		case o.Action == Spared:
			removed = append(removed, fmt.Sprintf("- `%s` left Git: **kept** (`%s`)", o.Object, o.Guard.Reason))
		}
		for _, c := range o.Conflicts {
			line := fmt.Sprintf("- `%s` `%s` is owned by `%s`", o.Object, c.Path, c.Manager)
			switch c.Outcome {
			case OutcomeFail:
				blocking = append(blocking, line+": **fail**, the object is not applied")
			case OutcomeForce:
				resolved = append(resolved, line+": **force**, syncd takes the field")
			default:
				resolved = append(resolved, line+": **yield**, the field stays with `"+c.Manager+"`")
			}
		}
		for _, h := range o.Handoffs {
			handoffs = append(handoffs, fmt.Sprintf("- `%s` `%s` is no longer set from Git; the API server would reset it to its default, so syncd holds its live value until another manager (an HPA, a controller) owns it", o.Object, h.Path))
		}
		if o.Error != "" {
			errs = append(errs, fmt.Sprintf("- `%s`: %s", o.Object, oneLine(o.Error)))
		}
	}
	// The lists at the top may take half the budget; the rest is for
	// the objects' details.
	section := func(title string, lines []string) {
		if len(lines) == 0 {
			return
		}
		b.WriteString(title + "\n\n")
		for i, line := range lines {
			if b.Len()+len(line) > limit/2 {
				fmt.Fprintf(&b, "- ... and %d more (see `syncd plan -o json`)\n", len(lines)-i)
				break
			}
			b.WriteString(line + "\n")
		}
		b.WriteString("\n")
	}
	section("#### :no_entry: Blocked by field conflicts", blocking)
	section("#### :x: Refused by the API server", errs)
	section("#### :no_entry: Stopped by prune guards", guarded)
	section("#### :warning: Handoff warnings", handoffs)
	section("#### Conflicts resolved by policy", resolved)
	section("#### Removed from Git", removed)
	section("#### Skipped on request", skipped)

	var blocks []string
	for _, o := range r.Objects {
		if o.Action == Unchanged || o.Action == Prune || o.Action == Orphan || o.Action == Spared || o.Action == Skip || o.Action == Keep {
			continue
		}
		blocks = append(blocks, objectBlock(o))
	}
	const noteRoom = 300
	for i, blk := range blocks {
		if b.Len()+len(blk) > limit-noteRoom {
			fmt.Fprintf(&b, "> [!NOTE]\n> %d more changed object(s) not shown: the comment would exceed GitHub's %d-character limit. Run `syncd plan -o text` or `-o json` for the full preview.\n", len(blocks)-i, MarkdownLimit)
			break
		}
		b.WriteString(blk)
	}
	return b.String()
}

func objectBlock(o Object) string {
	var b strings.Builder
	fmt.Fprintf(&b, "<details><summary><b>%s</b> <code>%s</code></summary>\n\n", o.Action, o.Object)
	var notes []string
	if o.Error != "" {
		notes = append(notes, "- refused: "+oneLine(o.Error))
	}
	for _, c := range o.Conflicts {
		notes = append(notes, fmt.Sprintf("- conflict: `%s` is owned by `%s`: **%s**", c.Path, c.Manager, c.Outcome))
	}
	for _, h := range o.Handoffs {
		notes = append(notes, fmt.Sprintf("- handoff: `%s` is held at its live value", h.Path))
	}
	for _, m := range o.Ownership {
		notes = append(notes, fmt.Sprintf("- ownership: `%s` moves from `%s` to `%s`", m.Path, m.From, m.To))
	}
	for _, p := range o.Ignored {
		notes = append(notes, fmt.Sprintf("- ignored: `%s` differs from Git; an ignore rule of the app matches it, so the apply keeps the live value", p))
	}
	if len(notes) > 0 {
		b.WriteString(strings.Join(notes, "\n") + "\n")
	}
	if o.Diff != "" {
		if len(notes) > 0 {
			b.WriteString("\n")
		}
		fence := "```"
		for strings.Contains(o.Diff, fence) {
			fence += "`"
		}
		fmt.Fprintf(&b, "%sdiff\n%s", fence, o.Diff)
		if !strings.HasSuffix(o.Diff, "\n") {
			b.WriteString("\n")
		}
		b.WriteString(fence + "\n")
	}
	b.WriteString("\n</details>\n\n")
	return b.String()
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }
