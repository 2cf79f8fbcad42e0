package directive

import "strings"

// The keys of the directives, syncd's and Flux's.
const (
	SyncdPrune     = "syncd.dev/prune"
	FluxPrune      = "kustomize.toolkit.fluxcd.io/prune"
	SyncdReconcile = "syncd.dev/reconcile"
	FluxReconcile  = "kustomize.toolkit.fluxcd.io/reconcile"
	SyncdSSA       = "syncd.dev/ssa"
	FluxSSA        = "kustomize.toolkit.fluxcd.io/ssa"
	// HelmResourcePolicy is Helm's: with the value HelmKeep, helm never
	// deletes the object (on uninstall, or when the chart stops
	// rendering it), and neither does syncd's prune.
	HelmResourcePolicy = "helm.sh/resource-policy"
)

// HelmKeep is the value of HelmResourcePolicy that keeps an object.
const HelmKeep = "keep"

// Disabled is the value that turns prune or reconcile off.
const Disabled = "disabled"

// SSAMode is how the applier writes an object (the ssa directive).
type SSAMode string

// SSA modes.
const (
	// SSAMerge is the default: the object is applied on every sync.
	SSAMerge SSAMode = "Merge"
	// SSAIfNotPresent creates the object when it is missing and never
	// updates it.
	SSAIfNotPresent SSAMode = "IfNotPresent"
	// SSAIgnore skips the object entirely.
	SSAIgnore SSAMode = "Ignore"
)

// Metadata is what the directives are read from: an unstructured object
// or a metadata-only one.
type Metadata interface {
	GetAnnotations() map[string]string
	GetLabels() map[string]string
}

// Directive is one directive found on an object: its key as written (for
// messages) and its value.
type Directive struct {
	Key   string
	Value string
}

// String returns "key: value".
func (d Directive) String() string { return d.Key + ": " + d.Value }

// Set are the directives of one object; a zero Directive is one
// the object does not carry (or carries with another value).
type Set struct {
	// PruneDisabled: prune never deletes the object (prune: disabled,
	// or Helm's resource-policy: keep).
	PruneDisabled Directive
	// ReconcileDisabled: the object is neither applied nor corrected.
	ReconcileDisabled Directive
	// SSA is the ssa directive when its value is IfNotPresent or Ignore.
	SSA Directive
}

// Of reads the directives of m; nil has none.
func Of(m Metadata) Set {
	if m == nil {
		return Set{}
	}
	return Set{
		PruneDisabled:     pruneDisabled(m),
		ReconcileDisabled: find(m, Disabled, SyncdReconcile, FluxReconcile),
		SSA:               ssa(m),
	}
}

// pruneDisabled finds prune: disabled (syncd's or Flux's), else Helm's
// resource-policy: keep, which a chart's objects carry for the same
// purpose.
func pruneDisabled(m Metadata) Directive {
	if d := find(m, Disabled, SyncdPrune, FluxPrune); d.Key != "" {
		return d
	}
	return find(m, HelmKeep, HelmResourcePolicy)
}

// Mode returns the ssa mode: SSAMerge unless the object says otherwise.
func (d Set) Mode() SSAMode {
	switch {
	case strings.EqualFold(d.SSA.Value, string(SSAIgnore)):
		return SSAIgnore
	case strings.EqualFold(d.SSA.Value, string(SSAIfNotPresent)):
		return SSAIfNotPresent
	}
	return SSAMerge
}

// ssa finds an ssa directive whose value is IfNotPresent or Ignore.
func ssa(m Metadata) Directive {
	if d := find(m, string(SSAIgnore), SyncdSSA, FluxSSA); d.Key != "" {
		return d
	}
	return find(m, string(SSAIfNotPresent), SyncdSSA, FluxSSA)
}

// find returns the first of keys that m carries, in its annotations then
// its labels, with value (any case).
func find(m Metadata, value string, keys ...string) Directive {
	for _, md := range []map[string]string{m.GetAnnotations(), m.GetLabels()} {
		for _, k := range keys {
			if v, ok := md[k]; ok && strings.EqualFold(v, value) {
				return Directive{Key: k, Value: v}
			}
		}
	}
	return Directive{}
}
