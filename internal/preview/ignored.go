package preview

import (
	"k8s.io/apimachinery/pkg/api/equality"
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
	if rules == nil || p.Live == nil || p.After == nil {
		return nil
	}
	own := ownership.Decode(p.Live)
	ours := map[string]bool{}
	for _, s := range p.Object.Slices {
		ours[string(s.Manager)] = true
		ours[string(ownership.HandoffManager(s.Manager))] = true
	}
	var out []string
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
				out = append(out, str)
			}
		})
	}
	return out
}
