package e2e

import (
	"strings"
	"testing"
)

// TestJourneyChartValueInYAMLError: a chart writes a password from its
// values unquoted, and the value is one YAML reads as an alias ("*…") or
// a tag ("!!int …"). syncd render, through the built binary (the chart is
// rendered in syncd-render), refuses the document naming the template
// and the document, and prints no fragment of the password: the YAML
// decoder's quote of it is withheld.
func TestJourneyChartValueInYAMLError(t *testing.T) {
	const password = "Zq81xKw0pLm4Tr7s"
	w := newWorkspace(t)
	chart := w.file("chart/Chart.yaml", "apiVersion: v2\nname: leak\nversion: 1.0.0\n")
	w.file("chart/templates/secret.yaml", "apiVersion: v1\nkind: Secret\nmetadata:\n  name: db\nstringData:\n  password: {{ .Values.password }}\n")
	for name, value := range map[string]string{"an alias": "*" + password, "a tag": "!!int " + password} {
		w.writeConfig(`apiVersion: syncd/v1alpha1
kind: Config
sources:
  - {name: repo, git: {url: "file:///nowhere", branch: main, interval: 1m}}
apps:
  - name: leak
    source: repo
    namespace: default
    helm:
      releaseName: leak
      values: {password: "` + value + `"}
`)
		r := w.must(exitError, "render", "--config", w.config, "--app", "leak", "--path", strings.TrimSuffix(chart, "/Chart.yaml"))
		for _, want := range []string{"templates/secret.yaml: document 1", "invalid YAML", "<redacted>", "quoted text withheld"} {
			if !strings.Contains(r.stderr, want) {
				t.Errorf("value read as %s: want %q on stderr\n%s", name, want, r)
			}
		}
	}
	w.checkNoSecrets(password)
}
