package drift

import (
	"time"

	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	"syncd.dev/syncd/internal/planner"
)

// Class says what kind of difference a Finding is.
type Class string

// Finding classes. Yielded and HandoffPending are information: HasDrift and
// Class.IsDrift ignore them.
const (
	// TakenOver: no syncd manager owns the field any more; Owners are
	// the managers that do (none when the field was removed).
	TakenOver Class = "taken-over"
	// Shared: a syncd manager owns the field together with another
	// manager, so neither side can change or drop it freely.
	Shared Class = "shared"
	// ValueDrift: only syncd owns the field but its live value differs
	// from Git (a mutating webhook, a controller writing without
	// managedFields, a defaulting change).
	ValueDrift Class = "value-drift"
	// Flapping: the field's owner flipped between syncd and another
	// manager often enough within the FlapDetector's window that both
	// sides must be forcing.
	Flapping Class = "flapping"
	// Deleted: the object was deleted out of band.
	Deleted Class = "deleted"
	// Unmanaged: none of syncd's managers appears in the object's
	// managedFields any more although Git declares fields for it.
	Unmanaged Class = "unmanaged"
	// Yielded: the applier yielded the field to another manager on
	// purpose (conflict policy "yield"). Information, not drift.
	Yielded Class = "yielded"
	// HandoffPending: the field left Git and is held by a
	// "<manager>-handoff" manager until another writer takes it.
	// Information, not drift.
	HandoffPending Class = "handoff-pending"
	// Overlap: another syncd app (Finding.OtherApp, named by its managers
	// annotation on the object) declares the field too, with the value
	// Git declares here, and both apps own it by Apply. Information, not
	// drift: nothing differs from either app's Git. A differing value is
	// a conflict at apply, never an overlap.
	Overlap Class = "overlap"
)

// IsDrift reports whether the class is drift (as opposed to information).
func (c Class) IsDrift() bool {
	return c != Yielded && c != HandoffPending && c != Overlap
}

// rank orders classes in reports: object-level first, then the worst.
func (c Class) rank() int {
	switch c {
	case Deleted:
		return 0
	case Unmanaged:
		return 1
	case Flapping:
		return 2
	case TakenOver:
		return 3
	case ValueDrift:
		return 4
	case Shared:
		return 5
	case Yielded:
		return 6
	case HandoffPending:
		return 7
	case Overlap:
		return 8
	}
	return 9
}

// Object identifies the object of a finding the way Kubernetes does.
type Object struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Namespace  string `json:"namespace"`
	Name       string `json:"name"`
}

// objectOf returns the Object of a plan ref.
func objectOf(r planner.ObjectRef) Object {
	return Object{APIVersion: r.GVK().GroupVersion().String(), Kind: r.Kind, Namespace: r.Namespace, Name: r.Name}
}

// String returns "Kind namespace/name" ("Kind name" when cluster-scoped).
func (o Object) String() string { return planner.KindName(o.Kind, o.Namespace, o.Name) }

// Owner is one managedFields entry that owns a field.
type Owner struct {
	Manager string `json:"manager"`
	// Operation is "Apply" or "Update".
	Operation string `json:"operation"`
	// Subresource is the subresource the manager wrote through ("scale",
	// "status"), empty for the main resource.
	Subresource string `json:"subresource"`
	// Time is when the manager last changed its fields, as the API server
	// records it (second precision); nil when the entry has none.
	Time *time.Time `json:"time"`
}

// Finding is one difference between what Git declares and the cluster.
type Finding struct {
	App    string `json:"app"`
	Object Object `json:"object"`
	// Path is the field in the API server's notation
	// (fieldpath.Path.String(): ".data.color",
	// `.spec.template.spec.containers[name="app"].image`); empty for the
	// object-level classes Deleted and Unmanaged.
	Path  string `json:"path"`
	Class Class  `json:"class"`
	// DeclaredBy is the syncd manager whose slice declares the field
	// (the object's default manager for object-level findings).
	DeclaredBy string `json:"declaredBy"`
	// Desired is the value Git declares, Live the value in the cluster
	// (nil when absent). For hidden fields (package redact) both are
	// redact.Marker.
	Desired any `json:"desired"`
	Live    any `json:"live"`
	// Owners are the managedFields entries that own the field now
	// (every entry of the object for Unmanaged), sorted by manager.
	Owners []Owner `json:"owners"`
	// Culprit is the first owner (by manager name) that is not one of
	// syncd's managers; empty when there is none.
	Culprit string `json:"-"`
	// Differs reports whether Desired and Live differ after
	// normalisation; it is computed before redaction, so a report can say
	// that a redacted value differs without showing it.
	Differs bool `json:"-"`
	// Redacted is true when Desired and Live were hidden because the
	// field may hold secret data.
	Redacted bool `json:"-"`
	// FieldPath is Path as a structured path (nil for object-level
	// findings), for outputs that apply redact's rules again.
	FieldPath fieldpath.Path `json:"-"`
	// Ref is the plan's ref of the object.
	Ref planner.ObjectRef `json:"-"`
	// Ignored is set on the findings of Report.Ignored: an ignore rule
	// of the app matches the field, so it is no drift.
	Ignored bool `json:"ignored,omitempty"`
	// OtherApp is the other syncd app of an Overlap finding.
	OtherApp string `json:"otherApp,omitempty"`
}

// Key identifies a finding for deduplication across runs: the app, the
// object, the path, the class and the culprit (the first owner that is not
// a syncd manager).
type Key struct {
	App     string
	Object  Object
	Path    string
	Class   Class
	Culprit string
}

// Key returns the finding's deduplication key. Values and times are not
// part of it, so a finding whose live value changes again is the same
// finding.
func (f Finding) Key() Key {
	k := Key{App: f.App, Object: f.Object, Path: f.Path, Class: f.Class, Culprit: f.Culprit}
	k.Object.APIVersion = groupOf(k.Object.APIVersion)
	return k
}

// groupOf drops the version from an apiVersion: an object served at two
// versions is one object.
func groupOf(apiVersion string) string {
	for i := len(apiVersion) - 1; i >= 0; i-- {
		if apiVersion[i] == '/' {
			return apiVersion[:i]
		}
	}
	return ""
}
