// Package ownership decodes an object's managedFields once, with one error
// policy, into structured-merge-diff field sets, and answers the questions
// the stages ask of them: what a manager owns through Apply, who owns a
// field, what everyone but some managers owns. It also names the applier's
// handoff managers (HandoffManager, HandoffOwner).
//
// The error policy: an entry without fields (no FieldsV1) is an entry that
// owns nothing; an entry whose fieldsType is not FieldsV1 or whose FieldsV1
// does not decode is left out of the entries and kept, with its error, in
// Ownership.Invalid. A caller that reports such entries (drift) reads
// Invalid; a caller that must go on without them (the applier) ignores it
// on purpose.
//
// The package does no I/O and does not guarantee that the entries are the
// ones the API server holds now: it reads the object it is given. It does
// not validate that managers, operations or subresources are ones the API
// server would accept.
package ownership
