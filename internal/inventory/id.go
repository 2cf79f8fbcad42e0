package inventory

import (
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"strings"
)

// Label and annotation keys of the ApplySet specification (KEP-3659), the
// same keys kubectl's --applyset uses.
const (
	// LabelID marks the parent object of an ApplySet; its value is the
	// ApplySet's ID.
	LabelID = "applyset.kubernetes.io/id"
	// LabelPartOf marks a member of an ApplySet; its value is the ID of the
	// parent.
	LabelPartOf = "applyset.kubernetes.io/part-of"
	// AnnotationTooling names the tool that manages the ApplySet,
	// "<tool>/<version>"; other tools refuse to change it.
	AnnotationTooling = "applyset.kubernetes.io/tooling"
	// AnnotationGroupKinds lists the group-kinds of the members,
	// "<Kind>.<group>" (just "<Kind>" for the core group), sorted and
	// comma-separated. kubectl requires it.
	AnnotationGroupKinds = "applyset.kubernetes.io/contains-group-kinds"
	// AnnotationNamespaces lists the namespaces holding members other than
	// the parent's own.
	AnnotationNamespaces = "applyset.kubernetes.io/additional-namespaces"
	// AnnotationRevision is the commit SHA syncd last applied and pruned
	// for the app; a revision that does not descend from it is a rewind
	// (see Run.Rewound).
	AnnotationRevision = "syncd.dev/revision"
)

// PruneAnnotation, set to PruneAllow on a Namespace, a
// CustomResourceDefinition or a PersistentVolumeClaim, lets syncd delete
// that object when it leaves Git. Without it such objects are never
// deleted.
const (
	PruneAnnotation = "syncd.dev/prune"
	PruneAllow      = "allow"
)

// ToolName is the tool part of the tooling annotation.
const ToolName = "syncd"

// ParentPrefix starts the name of every app's parent Secret:
// "syncd-applyset-<app>".
const ParentPrefix = "syncd-applyset-"

// ParentName returns the name of the parent Secret of an app.
func ParentName(app string) string { return ParentPrefix + app }

// ID returns the ApplySet ID of a parent object as KEP-3659 and kubectl
// compute it: "applyset-" + base64url(sha256("<name>.<namespace>.<kind>.<group>"))
// without padding + "-v1".
func ID(name, namespace, kind, group string) string {
	sum := sha256.Sum256([]byte(strings.Join([]string{name, namespace, kind, group}, ".")))
	return fmt.Sprintf("applyset-%s-v1", base64.RawURLEncoding.EncodeToString(sum[:]))
}

// AppID returns the ApplySet ID of an app whose parent Secret lives in
// namespace.
func AppID(app, namespace string) string {
	return ID(ParentName(app), namespace, "Secret", "")
}
