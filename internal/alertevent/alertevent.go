package alertevent

// Event types.
const (
	Drift    = "drift"
	Overlap  = "overlap"
	Conflict = "conflict"
	Handoff  = "handoff"
	Prune    = "prune"
	Error    = "error"
	Sync     = "sync"
)

// All returns every event type, in the order errors and docs list them.
func All() []string { return []string{Drift, Overlap, Conflict, Handoff, Prune, Error, Sync} }
