package appconvert

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"sigs.k8s.io/yaml"

	"syncd.dev/syncd/internal/api/v1alpha1"
)

// Write prints the objects as YAML documents for kubectl apply -f -,
// GitSources first, each after its comments.
func (c *Conversion) Write(w io.Writer) error {
	var docs []string
	for _, src := range c.Sources {
		doc, err := objectYAML(src, c.Comments[v1alpha1.KindGitSource+"/"+src.Name])
		if err != nil {
			return fmt.Errorf("GitSource %s/%s: %w", src.Namespace, src.Name, err)
		}
		docs = append(docs, doc)
	}
	for _, app := range c.Apps {
		doc, err := objectYAML(app, c.Comments[v1alpha1.KindApp+"/"+app.Name])
		if err != nil {
			return fmt.Errorf("App %s/%s: %w", app.Namespace, app.Name, err)
		}
		docs = append(docs, doc)
	}
	_, err := io.WriteString(w, strings.Join(docs, "---\n"))
	return err
}

// objectYAML is one object's document without status and the
// bookkeeping a new object does not have, after its comments.
func objectYAML(obj any, comments []string) (string, error) {
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
	if err != nil {
		return "", err
	}
	var b strings.Builder
	for _, c := range comments {
		b.WriteString("# " + c + "\n")
	}
	b.Write(out)
	return b.String(), nil
}
