package importer

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"syncd.dev/syncd/internal/api/v1alpha1"
)

// Tool is the GitOps tool whose objects are imported.
type Tool string

// Tools.
const (
	Flux   Tool = "flux"
	ArgoCD Tool = "argocd"
)

// API groups of the imported kinds.
const (
	fluxKustomizeGroup = "kustomize.toolkit.fluxcd.io"
	fluxSourceGroup    = "source.toolkit.fluxcd.io"
	fluxHelmGroup      = "helm.toolkit.fluxcd.io"
	argoGroup          = "argoproj.io"
)

// ClusterFile is the File of the documents read from a cluster.
const ClusterFile = "cluster"

// Document is one object read from a file (or from a cluster: File is
// then "cluster").
type Document struct {
	File   string
	Object *unstructured.Unstructured
	// duplicates are the keys the document gives twice (Read): the
	// object is not imported.
	duplicates []problem
}

// ref is the object as warnings name it: "Kind namespace/name".
func (d Document) ref() string {
	if ns := d.Object.GetNamespace(); ns != "" {
		return d.Object.GetKind() + " " + ns + "/" + d.Object.GetName()
	}
	return d.Object.GetKind() + " " + d.Object.GetName()
}

// Warning is one thing the import could not carry over, or that the
// user must do before the syncd objects work as the imported ones did.
type Warning struct {
	// File the object came from ("cluster" for --from-cluster).
	File string
	// Object is "Kind namespace/name" of the imported object.
	Object string
	// Field is the field of the imported object, e.g. spec.patches.
	Field string
	// Message says what syncd does instead, or what to do.
	Message string
}

// String is "file: Kind ns/name: field: message".
func (w Warning) String() string {
	parts := []string{w.File}
	if w.Object != "" {
		parts = append(parts, w.Object)
	}
	if w.Field != "" {
		parts = append(parts, w.Field)
	}
	return strings.Join(append(parts, w.Message), ": ")
}

// Result is the syncd objects of an import and its warnings.
type Result struct {
	GitSources  []*v1alpha1.GitSource
	HelmSources []*v1alpha1.HelmSource
	OCISources  []*v1alpha1.OCISource
	Apps        []*v1alpha1.App
	Warnings    []Warning
}

// Options are the per-import settings.
type Options struct {
	// Namespace, when set, is the namespace of every syncd object;
	// default each imported object's own (default "default").
	Namespace string
	// Form is the output the result is printed as (default
	// ObjectsForm); the warnings that say where credentials go speak of
	// its fields.
	Form Form
}

// Form is the output of an import: the syncd objects, or a syncd.yaml.
type Form string

// Forms.
const (
	// ObjectsForm is the syncd objects (Result.WriteObjects).
	ObjectsForm Form = "yaml"
	// ConfigForm is a syncd.yaml (Result.Config).
	ConfigForm Form = "config"
)

// DefaultNamespace is the namespace of objects that name none.
const DefaultNamespace = "default"

// importer holds one import's state: the result being filled and the
// names already taken, by "Kind/namespace/name".
type importer struct {
	tool  Tool
	opts  Options
	res   Result
	taken map[string]string
	// argoMade finds the source an Argo CD source becomes, by
	// "namespace url@revision" (a GitSource) or "namespace helm url".
	argoMade map[string]argoMade
	// pathApps are the Apps made from Kustomizations (checkPaths).
	pathApps []pathApp
	// appDocs are the documents the Apps were made from.
	appDocs map[*v1alpha1.App]Document
	// noNamespace are the documents without a namespace already warned
	// about.
	noNamespace map[*unstructured.Unstructured]bool
	// typeErrors are the fields of the document being mapped whose
	// value has the wrong type (problems).
	typeErrors []problem
	// refused are the objects not imported for their problems, by the
	// "Kind/namespace/name" of the syncd object they would have been.
	refused map[string]bool
}

// newImporter starts an import.
func newImporter(tool Tool, opts Options) *importer {
	return &importer{tool: tool, opts: opts, taken: map[string]string{}, argoMade: map[string]argoMade{}, noNamespace: map[*unstructured.Unstructured]bool{}, appDocs: map[*v1alpha1.App]Document{}, refused: map[string]bool{}}
}

// Import maps the documents of tool onto syncd objects. Documents of
// other kinds are skipped; those of the other tool get a warning naming
// the command that imports them.
func Import(tool Tool, docs []Document, opts Options) *Result {
	im := newImporter(tool, opts)
	for _, d := range docs {
		im.document(d)
	}
	im.checkPaths(docs)
	im.checkRefs()
	im.sort()
	return &im.res
}

// document maps one document when it is a kind of the import's tool;
// one with problems (a field of the wrong type, a key given twice) is
// not imported, with a warning for each.
func (im *importer) document(d Document) {
	mapping := im.mapping(d)
	if mapping == nil {
		im.other(d)
		return
	}
	if problems := im.problems(d, mapping); len(problems) > 0 {
		im.refuse(d, problems)
		return
	}
	mapping(im, d)
	// The scratch mapping found no problem; one found now depends on
	// what was imported before (it should not happen): it is warned
	// about, and the object stays imported.
	for _, p := range im.takeTypeErrors() {
		im.warn(d, p.field, "%s; not imported", p.what)
	}
}

// mapping is the function that maps d, nil when d is not a kind of the
// import's tool.
func (im *importer) mapping(d Document) func(*importer, Document) {
	group := d.Object.GroupVersionKind().Group
	kind := d.Object.GetKind()
	switch {
	case im.tool == Flux && group == fluxSourceGroup && kind == "GitRepository":
		return (*importer).gitRepository
	case im.tool == Flux && group == fluxKustomizeGroup && kind == "Kustomization":
		return (*importer).kustomization
	case im.tool == ArgoCD && group == argoGroup && kind == "Application":
		return (*importer).application
	case im.tool == Flux && (group == fluxSourceGroup || group == fluxHelmGroup):
		return (*importer).fluxHelmOrOCI
	}
	return nil
}

// other warns about a document of another kind than the import maps
// when it is one of the other tool's, or an Argo CD object that is not
// an Application.
func (im *importer) other(d Document) {
	tool := im.tool
	group := d.Object.GroupVersionKind().Group
	kind := d.Object.GetKind()
	switch {
	case tool == ArgoCD && isFlux(group):
		im.warn(d, "", "a Flux object: import it with syncd import flux")
	case tool == Flux && group == argoGroup && kind == "Application":
		im.warn(d, "", "an Argo CD object: import it with syncd import argocd")
	case tool == ArgoCD && group == argoGroup:
		im.warn(d, "", "has no syncd equivalent (syncd import argocd imports Applications); not imported")
	}
}

// isFlux reports whether group is one of Flux's.
func isFlux(group string) bool {
	return strings.HasSuffix(group, ".toolkit.fluxcd.io")
}

// warn records a warning about d's field.
func (im *importer) warn(d Document, field, format string, args ...any) {
	im.res.Warnings = append(im.res.Warnings, Warning{File: d.File, Object: d.ref(), Field: field, Message: fmt.Sprintf(format, args...)})
}

// namespace is the namespace of the syncd object made from d: -n,
// else d's own, else DefaultNamespace, with a warning (once per
// document).
func (im *importer) namespace(d Document) string {
	if im.opts.Namespace == "" && d.Object.GetNamespace() == "" {
		im.warnNoNamespace(d)
	}
	return im.targetNamespace(d)
}

// targetNamespace is the namespace of the syncd object made from d: -n,
// else d's own, else DefaultNamespace.
func (im *importer) targetNamespace(d Document) string {
	return cmp.Or(im.opts.Namespace, d.Object.GetNamespace(), DefaultNamespace)
}

// warnNoNamespace warns, once per document, that d names no namespace
// and what its syncd objects are imported into. A repository often
// leaves it to the directory's kustomization.yaml (namespace:), which
// the importer does not build.
func (im *importer) warnNoNamespace(d Document) {
	if im.noNamespace[d.Object] {
		return
	}
	im.noNamespace[d.Object] = true
	im.warn(d, "metadata.namespace", "not set: the syncd objects made from it are imported into namespace %s; if a kustomization.yaml sets the namespace (namespace:), pipe its build into the import (kustomize build DIR | syncd import %s -), or give the namespace with -n", DefaultNamespace, im.tool)
}

// claim takes the name of a syncd object; false (with a warning) when
// another imported object already took it.
func (im *importer) claim(d Document, kind string, meta metav1.ObjectMeta) bool {
	key := kind + "/" + meta.Namespace + "/" + meta.Name
	if first, ok := im.taken[key]; ok {
		im.warn(d, "metadata.name", "%s %s/%s was already imported from %s; this one is not imported (import one cluster's objects at a time, or rename one)", kind, meta.Namespace, meta.Name, first)
		return false
	}
	im.taken[key] = d.File
	return true
}

// objectMeta is the metadata of a syncd object named name made from d.
func (im *importer) objectMeta(d Document, name string) metav1.ObjectMeta {
	return metav1.ObjectMeta{Name: name, Namespace: im.namespace(d)}
}

// typeMeta is the apiVersion and kind of a syncd object.
func typeMeta(kind string) metav1.TypeMeta {
	return metav1.TypeMeta{APIVersion: v1alpha1.GroupVersion.String(), Kind: kind}
}

// sort orders the objects by namespace and name, and the warnings by
// file and object (stable: a file's warnings stay in field order).
func (im *importer) sort() {
	byMeta := func(a, b metav1.ObjectMeta) int {
		return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name))
	}
	slices.SortStableFunc(im.res.GitSources, func(a, b *v1alpha1.GitSource) int { return byMeta(a.ObjectMeta, b.ObjectMeta) })
	slices.SortStableFunc(im.res.HelmSources, func(a, b *v1alpha1.HelmSource) int { return byMeta(a.ObjectMeta, b.ObjectMeta) })
	slices.SortStableFunc(im.res.OCISources, func(a, b *v1alpha1.OCISource) int { return byMeta(a.ObjectMeta, b.ObjectMeta) })
	slices.SortStableFunc(im.res.Apps, func(a, b *v1alpha1.App) int { return byMeta(a.ObjectMeta, b.ObjectMeta) })
	slices.SortStableFunc(im.res.Warnings, func(a, b Warning) int {
		return cmp.Or(cmp.Compare(a.File, b.File), cmp.Compare(a.Object, b.Object))
	})
}
