package appconvert

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"syncd.dev/syncd/internal/api/v1alpha1"
)

// Write prints the objects as YAML documents for kubectl apply -f -,
// the sources first (GitSources, HelmSources, OCISources), then the
// Apps, then the AlertProviders and Alerts, each after its comments.
func (c *Conversion) Write(w io.Writer) error {
	var objs []object
	for _, src := range c.Sources {
		objs = append(objs, object{v1alpha1.KindGitSource, src.ObjectMeta, src})
	}
	for _, src := range c.HelmSources {
		objs = append(objs, object{v1alpha1.KindHelmSource, src.ObjectMeta, src})
	}
	for _, src := range c.OCISources {
		objs = append(objs, object{v1alpha1.KindOCISource, src.ObjectMeta, src})
	}
	for _, app := range c.Apps {
		objs = append(objs, object{v1alpha1.KindApp, app.ObjectMeta, app})
	}
	for _, p := range c.AlertProviders {
		objs = append(objs, object{v1alpha1.KindAlertProvider, p.ObjectMeta, p})
	}
	for _, a := range c.Alerts {
		objs = append(objs, object{v1alpha1.KindAlert, a.ObjectMeta, a})
	}
	docs := make([]string, 0, len(objs))
	for _, o := range objs {
		doc, err := ObjectYAML(o.obj, c.Comments[o.kind+"/"+o.meta.Name])
		if err != nil {
			return fmt.Errorf("%s %s/%s: %w", o.kind, o.meta.Namespace, o.meta.Name, err)
		}
		docs = append(docs, doc)
	}
	_, err := io.WriteString(w, strings.Join(docs, "---\n"))
	return err
}

// object is one object to print, with its kind and metadata.
type object struct {
	kind string
	meta metav1.ObjectMeta
	obj  any
}

// ObjectYAML is one object's document without status and the
// bookkeeping a new object does not have, after its comments (syncd
// convert's and syncd import's output).
func ObjectYAML(obj any, comments []string) (string, error) {
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
