package importer

import (
	"fmt"
	"io"
	"strings"

	"syncd.dev/syncd/internal/appconvert"
)

// WriteObjects prints the result's objects as YAML documents for
// kubectl apply -f -: GitSources, HelmSources, OCISources, then Apps,
// each sorted by namespace
// and name.
func (r *Result) WriteObjects(w io.Writer) error {
	var docs []string
	for _, src := range r.GitSources {
		doc, err := appconvert.ObjectYAML(src, nil)
		if err != nil {
			return fmt.Errorf("GitSource %s/%s: %w", src.Namespace, src.Name, err)
		}
		docs = append(docs, doc)
	}
	for _, src := range r.HelmSources {
		doc, err := appconvert.ObjectYAML(src, nil)
		if err != nil {
			return fmt.Errorf("HelmSource %s/%s: %w", src.Namespace, src.Name, err)
		}
		docs = append(docs, doc)
	}
	for _, src := range r.OCISources {
		doc, err := appconvert.ObjectYAML(src, nil)
		if err != nil {
			return fmt.Errorf("OCISource %s/%s: %w", src.Namespace, src.Name, err)
		}
		docs = append(docs, doc)
	}
	for _, app := range r.Apps {
		doc, err := appconvert.ObjectYAML(app, nil)
		if err != nil {
			return fmt.Errorf("App %s/%s: %w", app.Namespace, app.Name, err)
		}
		docs = append(docs, doc)
	}
	_, err := io.WriteString(w, strings.Join(docs, "---\n"))
	return err
}
