package importer

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"sigs.k8s.io/yaml"
)

// WriteObjects prints the result's objects as YAML documents for
// kubectl apply -f -: GitSources, HelmSources, OCISources, then Apps,
// each sorted by namespace
// and name.
func (r *Result) WriteObjects(w io.Writer) error {
	var docs []string
	for _, src := range r.GitSources {
		doc, err := objectYAML(src)
		if err != nil {
			return fmt.Errorf("GitSource %s/%s: %w", src.Namespace, src.Name, err)
		}
		docs = append(docs, doc)
	}
	for _, src := range r.HelmSources {
		doc, err := objectYAML(src)
		if err != nil {
			return fmt.Errorf("HelmSource %s/%s: %w", src.Namespace, src.Name, err)
		}
		docs = append(docs, doc)
	}
	for _, src := range r.OCISources {
		doc, err := objectYAML(src)
		if err != nil {
			return fmt.Errorf("OCISource %s/%s: %w", src.Namespace, src.Name, err)
		}
		docs = append(docs, doc)
	}
	for _, app := range r.Apps {
		doc, err := objectYAML(app)
		if err != nil {
			return fmt.Errorf("App %s/%s: %w", app.Namespace, app.Name, err)
		}
		docs = append(docs, doc)
	}
	_, err := io.WriteString(w, strings.Join(docs, "---\n"))
	return err
}

// objectYAML is one object's document without status and the
// bookkeeping a new object does not have.
func objectYAML(obj any) (string, error) {
	data, err := json.Marshal(obj)
	if err != nil {
		return "", err
	}
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		return "", err
	}
	delete(m, "status")
	if md, ok := m["metadata"].(map[string]any); ok {
		delete(md, "creationTimestamp")
	}
	out, err := yaml.Marshal(m)
	return string(out), err
}
