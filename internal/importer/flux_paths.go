package importer

import (
	"slices"
	"strings"

	"syncd.dev/syncd/internal/api/v1alpha1"
)

// pathApp is an App made from a Kustomization, with the document it
// came from: its path is checked against the files read (checkPaths).
type pathApp struct {
	d   Document
	app *v1alpha1.App
}

// checkPaths looks at the files read below each Kustomization's path.
// Files holding Flux objects would be applied by the App as they are
// (the syncd objects printed replace them): the App's warning lists
// them. A path holding nothing but such files is Flux's own (the
// bootstrap Kustomization applying clusters/<env>): its App would apply
// only what the import replaces, so it is left out, with a warning.
// Documents read from a cluster have no files, and are not checked; nor
// is the repository root, which the files read need not be.
func (im *importer) checkPaths(docs []Document) {
	files := fluxFiles(docs)
	for _, pa := range im.pathApps {
		if pa.d.File == ClusterFile || pa.app.Spec.Path == "" {
			continue
		}
		var flux, other []string
		for file, isFlux := range files {
			if !underPath(file, pa.app.Spec.Path) {
				continue
			}
			if isFlux {
				flux = append(flux, file)
			} else {
				other = append(other, file)
			}
		}
		slices.Sort(flux)
		switch {
		case len(flux) > 0 && len(other) == 0:
			im.warn(pa.d, "spec.path", "%s holds only Flux objects (%s), which this import prints as syncd objects: the App would apply nothing else, so it is not imported", pa.app.Spec.Path, strings.Join(flux, ", "))
			im.res.Apps = slices.DeleteFunc(im.res.Apps, func(a *v1alpha1.App) bool { return a == pa.app })
		case len(flux) > 0:
			im.warn(pa.d, "spec.path", "%s holds Flux objects (%s) that the App would apply as they are: remove them from the repository once the syncd objects printed here are applied (they replace them)", pa.app.Spec.Path, strings.Join(flux, ", "))
		}
	}
}

// fluxFiles tells, for every file read, whether it holds a Flux object
// or a Flux CRD (Flux's install, gotk-components.yaml).
func fluxFiles(docs []Document) map[string]bool {
	files := map[string]bool{}
	for _, d := range docs {
		files[d.File] = files[d.File] || isFluxDocument(d)
	}
	return files
}

// isFluxDocument reports whether d is an object of a Flux API group or
// the CRD of one.
func isFluxDocument(d Document) bool {
	if isFlux(d.Object.GroupVersionKind().Group) {
		return true
	}
	group, _ := nested(d.Object.Object, "spec", "group").(string)
	return d.Object.GetKind() == "CustomResourceDefinition" && isFlux(group)
}

// underPath reports whether file is below the repository directory p
// (slash-separated, relative to the repository root): file is taken to
// be relative to the root, or to have the root somewhere above p.
func underPath(file, p string) bool {
	return strings.HasPrefix(file, p+"/") || strings.Contains(file, "/"+p+"/")
}
