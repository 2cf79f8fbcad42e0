package apptree

import (
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Action is the object's last outcome in words, as `syncd tree` and the
// UI show it: "applied", "applied, fields yielded to operator", "apply
// pending", or "left Git, prune refused (reason)".
func (o Object) Action() string {
	switch {
	case o.Outcome == PruneRefused:
		return "left Git, prune refused (" + o.Reason + ")"
	case o.Outcome == Pending:
		return "apply pending"
	case o.Outcome == Applied && len(o.YieldedTo) > 0:
		return "applied, fields yielded to " + strings.Join(o.YieldedTo, ", ")
	}
	return string(o.Outcome)
}

// ManagersText lists the managers: name, with the operation when it is
// not Apply and the subresource when there is one.
func ManagersText(ms []Manager) string {
	var parts []string
	for _, m := range ms {
		s := m.Name
		var notes []string
		if m.Operation != string(metav1.ManagedFieldsOperationApply) {
			notes = append(notes, m.Operation)
		}
		if m.Subresource != "" {
			notes = append(notes, m.Subresource)
		}
		if len(notes) > 0 {
			s += " (" + strings.Join(notes, ", ") + ")"
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, ", ")
}
