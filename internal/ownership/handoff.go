package ownership

import (
	"strings"

	"syncd.dev/syncd/internal/config"
)

// HandoffManager returns the handoff manager of m, the manager that holds
// fields m dropped until someone else owns them: m with
// config.HandoffSuffix ("<manager>-handoff"), a suffix config reserves so
// no user manager ends in it. M is any string type (planner.FieldManager).
func HandoffManager[M ~string](m M) M {
	return m + config.HandoffSuffix
}

// HandoffOwner returns the manager whose handoff manager m is and true,
// or m itself and false when m is no handoff manager.
func HandoffOwner(m string) (string, bool) {
	return strings.CutSuffix(m, config.HandoffSuffix)
}

// IsHandoff reports whether m is a handoff manager.
func IsHandoff(m string) bool {
	return strings.HasSuffix(m, config.HandoffSuffix)
}
