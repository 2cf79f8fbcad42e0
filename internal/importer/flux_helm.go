package importer

// fluxHelmOrOCI warns about Flux's other kinds: Helm repositories, OCI
// repositories and HelmReleases need source kinds this syncd does not
// have yet.
func (im *importer) fluxHelmOrOCI(d Document) {
	switch d.Object.GetKind() {
	case "HelmRepository", "OCIRepository", "HelmRelease":
		im.warn(d, "", "needs a HelmSource or OCISource, which this syncd does not have yet; not imported")
	default:
		im.warn(d, "", "has no syncd equivalent; not imported")
	}
}
