package e2e

import (
	"testing"

	"sigs.k8s.io/yaml"
)

func yamlToJSON(t *testing.T, doc string) []byte {
	t.Helper()
	js, err := yaml.YAMLToJSON([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	return js
}
