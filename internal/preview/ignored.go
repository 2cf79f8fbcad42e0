package preview

import (
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	"syncd.dev/syncd/internal/applier"
	"syncd.dev/syncd/internal/ignore"
	"syncd.dev/syncd/internal/ownership"
	"syncd.dev/syncd/internal/paths"
)

// ignoredPaths returns the declared fields of an existing object that the
// app's ignore rules match and whose live value the dry run would change:
// the diff shows Git's value, but the apply keeps the live one. Sorted by
// path (the slices' leaves, in order).
func ignoredPaths(p applier.ObjectPreview, rules *ignore.Rules) []string {
	var out []string
	for _, fp := range ignoredFields(p, rules) {
		out = append(out, fp.String())
	}
	return out
}

// ignoredFields is ignoredPaths as field paths.
func ignoredFields(p applier.ObjectPreview, rules *ignore.Rules) []fieldpath.Path {
	if rules == nil || p.Live == nil || p.After == nil {
		return nil
	}
	own := ownership.Decode(p.Live)
	ours := map[string]bool{}
	for _, s := range p.Object.Slices {
		ours[string(s.Manager)] = true
		ours[string(ownership.HandoffManager(s.Manager))] = true
	}
	var out []fieldpath.Path
	seen := map[string]bool{}
	for _, s := range p.Object.Slices {
		s.Fields.Leaves().Iterate(func(fp fieldpath.Path) {
			str := fp.String()
			if seen[str] {
				return
			}
			seen[str] = true
			var others []string
			for _, e := range own.Owners(fp) {
				if !ours[e.Manager] {
					others = append(others, e.Manager)
				}
			}
			if !rules.Ignores(p.Object.Ref, fp, others) {
				return
			}
			lv, _ := paths.Lookup(p.Live.Object, fp)
			av, _ := paths.Lookup(p.After.Object, fp)
			if !equality.Semantic.DeepEqual(lv, av) {
				out = append(out, fp.Copy())
			}
		})
	}
	return out
}

// onlyIgnored reports whether an update differs from the live object in
// the ignored fields alone, with no ownership move, handoff or conflict:
// the apply keeps those fields' live values, so it changes nothing, and
// the plan does not count the object as a change (Argo CD's
// ignoreDifferences leaves such an app Synced).
func onlyIgnored(o Object, p applier.ObjectPreview, ignored []fieldpath.Path) bool {
	if o.Action != Update || len(ignored) == 0 || len(o.Ownership)+len(o.Handoffs)+len(o.Conflicts) > 0 {
		return false
	}
	after := p.After.DeepCopy()
	for _, fp := range ignored {
		lv, _ := paths.Lookup(p.Live.Object, fp)
		if !paths.Set(after.Object, fp, runtime.DeepCopyJSONValue(lv)) {
			return false
		}
	}
	return equality.Semantic.DeepEqual(clean(p.Live), clean(after))
}
