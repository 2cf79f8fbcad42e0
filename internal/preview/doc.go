// Package preview turns a dry run of an app's plan into a pull-request
// preview: per object whether it would be created, updated, left unchanged
// or recreated, a unified YAML diff of the live object against the dry-run
// result, the field conflicts the app's policy would meet and what it would
// do about each, the fields the handoff manager would hold (handoffs), and
// fields that would move between field managers. It renders the report as
// text, as GitHub-flavoured markdown for a PR comment, or as JSON (see
// docs/preview.md for the JSON shape, which is stable).
//
// Diffs leave out what changes on every write or is not the user's
// (metadata.managedFields, resourceVersion, generation, uid,
// creationTimestamp, status). Values of a core Secret's data and stringData
// (and its last-applied-configuration annotation) are never printed: they
// are shown as "<redacted>", or "<redacted, changed>" when the dry run
// changes them.
//
// It does not guarantee that a later apply does the same: the cluster can
// change between the preview and the apply, and a dry run cannot chain the
// requests of an ownership move (see applier.Preview). It sends nothing to
// the cluster itself; it only reads applier.ObjectPreview values.
package preview
