package importer

import (
	"path"
	"strings"

	"sigs.k8s.io/yaml"

	"syncd.dev/syncd/internal/config"
)

// argoHelm maps a Git source's helm section (a chart directory in Git):
// values, valuesObject and parameters become inline values, valueFiles
// (relative to the chart in Argo CD) paths from the repository root, as
// syncd reads them.
func argoHelm(s argoSource, refs map[string]argoSource) *config.HelmSpec {
	h := s.f.sub("helm")
	if h.m == nil {
		return nil
	}
	spec := &config.HelmSpec{ReleaseName: h.str("releaseName")}
	spec.Values = argoValues(h)
	spec.ValuesFiles = argoValueFiles(h, s, refs)
	if skip, _ := h.boolean("skipCrds"); skip {
		spec.IncludeCRDs = boolPtr(false)
	}
	h.none("kubeVersion", "not needed: taken from the cluster's discovery")
	h.none("apiVersions", "not needed: taken from the cluster's discovery")
	h.none("version", "syncd renders with its own Helm 3 library")
	h.none("passCredentials", "credentials go to the repository's own host only")
	h.none("ignoreMissingValueFiles", "a values file that does not exist fails the App")
	h.none("skipSchemaValidation", "the chart's values schema is always checked")
	h.none("skipTests", "test hooks are never applied")
	h.none("fileParameters", "put the file's content in a values file in Git")
	h.none("namespace", "the release namespace is the App's target namespace (spec.targetNamespace)")
	h.done()
	return spec
}

// argoValues merges values (a YAML string), valuesObject and
// parameters, later ones winning, as Argo CD does.
func argoValues(h *fields) config.HelmValues {
	values := config.HelmValues{}
	if s := h.str("values"); s != "" {
		var m map[string]any
		if err := yaml.Unmarshal([]byte(s), &m); err != nil {
			h.warn("values", "is not a YAML mapping (%v); not imported", err)
		}
		for k, v := range m {
			values[k] = v
		}
	}
	for k, v := range h.mapAt("valuesObject") {
		values[k] = v
	}
	for i, v := range h.list("parameters") {
		p := h.item("parameters", i, v)
		setParameter(p, values, p.str("name"), p.str("value"))
		p.none("forceString", "values are typed as written in YAML; quote the value in the App's helm.values if it must stay a string")
		p.done()
	}
	if len(values) == 0 {
		return nil
	}
	return values
}

// setParameter sets a --set style name (a.b.c) in values; names with
// list indexes or escaped dots are warned about.
func setParameter(p *fields, values map[string]any, name, value string) {
	if strings.ContainsAny(name, `[]\`) || name == "" {
		p.warn("name", "%q uses list indexes or escapes, which the importer does not translate; write it in the App's helm.values", name)
		return
	}
	keys := strings.Split(name, ".")
	m := values
	for _, k := range keys[:len(keys)-1] {
		next, ok := m[k].(map[string]any)
		if !ok {
			next = map[string]any{}
			m[k] = next
		}
		m = next
	}
	m[keys[len(keys)-1]] = value
}

// argoValueFiles maps valueFiles: a path is relative to the chart in
// Argo CD and to the repository root in syncd; "$ref/file" reads a ref
// source, which an App can only do when it is the same repository.
func argoValueFiles(h *fields, s argoSource, refs map[string]argoSource) []string {
	var out []string
	for _, f := range h.strings("valueFiles") {
		if !strings.HasPrefix(f, "$") {
			out = append(out, treePath(path.Join(s.path, f)))
			continue
		}
		name, rest, _ := strings.Cut(strings.TrimPrefix(f, "$"), "/")
		ref, ok := refs[name]
		switch {
		case !ok:
			h.warn("valueFiles", "%q names no ref source of the Application; not imported", f)
		case ref.repoURL != s.repoURL || ref.revision != s.revision:
			h.warn("valueFiles", "%q is in another repository (%s): an App reads values files of its own GitSource only; copy the file into this repository, or keep the app in syncd.yaml (helm.valuesSource)", f, ref.repoURL)
		default:
			out = append(out, treePath(rest))
		}
	}
	return out
}
