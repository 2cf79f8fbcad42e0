package planner

import (
	"path"

	"sigs.k8s.io/kustomize/api/resource"
	"sigs.k8s.io/kustomize/api/types"
	kyaml "sigs.k8s.io/kustomize/kyaml/yaml"
)

// Origin tracking. kustomize records the file each object came from (its
// config.kubernetes.io/origin annotation) only when the top
// kustomization lists originAnnotations under buildMetadata; kustomize
// copies the top's buildMetadata to every kustomization below it, and
// neither krusty.Options nor any exported API turns it on otherwise. A
// build therefore reads the top kustomization with originAnnotations
// added (originTracking; the file in the repository is not changed), so
// that errors and origins name the source file (base/b.yaml) rather than
// the top kustomization. The annotation is taken off every object after
// the build unless the kustomization asked for it itself: nothing is
// applied that `kustomize build` would not output.

// originTracking is the top kustomization's content as a build reads it.
type originTracking struct {
	// content is the kustomization with originAnnotations in
	// buildMetadata; nil when it could not be added (the build then
	// reads the file as it is, and objects are named after the top
	// kustomization).
	content []byte
	// keep is true when the kustomization asked for origin annotations
	// itself: they stay on the objects.
	keep bool
}

// trackOrigins returns the kustomization data with originAnnotations
// added to its buildMetadata. A kustomization kyaml cannot edit is left
// as it is (content nil): kustomize reports what is wrong with it.
func trackOrigins(data []byte) originTracking {
	node, err := kyaml.Parse(string(data))
	if err != nil || node.YNode().Kind != kyaml.MappingNode {
		return originTracking{}
	}
	list, err := node.Pipe(kyaml.LookupCreate(kyaml.SequenceNode, "buildMetadata"))
	if err != nil || list == nil || list.YNode().Kind != kyaml.SequenceNode {
		return originTracking{}
	}
	for _, item := range list.YNode().Content {
		if item.Value == types.OriginAnnotations {
			return originTracking{keep: true}
		}
	}
	list.YNode().Content = append(list.YNode().Content, kyaml.NewStringRNode(types.OriginAnnotations).YNode())
	out, err := node.String()
	if err != nil {
		return originTracking{}
	}
	return originTracking{content: []byte(out)}
}

// sourceOf returns the file of the build an object came from, relative
// to the repository root, from its origin: the file that holds it, or
// the kustomization whose generator made it. It returns "" when the
// origin is unknown (origin tracking could not be turned on) or remote.
func sourceOf(r *resource.Resource, dir string) string {
	o, err := r.GetOrigin()
	if err != nil || o == nil || o.Repo != "" {
		return ""
	}
	p := o.Path
	if p == "" {
		p = o.ConfiguredIn
	}
	if p == "" {
		return ""
	}
	return repoRel(path.Join(dir, p))
}

// resourceName names an object of kustomize's output the way describe
// does ("example.com/v1 ClusterWidget team-a w1"), read from the node,
// so that it works for an object that does not decode.
func resourceName(r *resource.Resource) string {
	s := ""
	for _, p := range []string{r.GetApiVersion(), r.GetKind(), r.GetNamespace(), r.GetName()} {
		if p != "" {
			s += " " + p
		}
	}
	if s == "" {
		return ""
	}
	return s[1:]
}
