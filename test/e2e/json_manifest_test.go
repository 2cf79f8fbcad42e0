package e2e

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
)

// TestJourneyJSONManifests: a plain directory of JSON manifests, one
// object per line as jsonnet or kubectl get -o json write them, renders
// through the built binary (in syncd-render) as kubectl reads them: an
// escaped slash and a surrogate pair, which YAML 1.1 refuses, are read,
// and 1.0 is the integer 1 as YAML reads it. A key given twice is still
// refused, naming the file, the document and the line.
func TestJourneyJSONManifests(t *testing.T) {
	w := newWorkspace(t)
	cms := w.file("app/cms.json", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"json-a","namespace":"default"},"data":{"url":"https:\/\/example.org\/x","smile":"\ud83d\ude00"}}`+"\n---\n"+
		`{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"json-b","namespace":"default"},"spec":{"replicas":1.0,"selector":{"matchLabels":{"app":"b"}},"template":{"metadata":{"labels":{"app":"b"}},"spec":{"containers":[{"name":"b","image":"nginx:1.27"}]}}}}`+"\n")
	w.writeConfig(`apiVersion: syncd/v1alpha1
kind: Config
sources:
  - {name: repo, git: {url: "file:///nowhere", branch: main, interval: 1m}}
apps:
  - {name: json, source: repo, path: app, namespace: default}
`)
	args := []string{"render", "--config", w.config, "--app", "json", "--path", filepath.Dir(cms), "-o", "json"}
	r := w.must(exitOK, args...)
	var out struct {
		Slices []struct {
			Object             string         `json:"object"`
			ApplyConfiguration map[string]any `json:"applyConfiguration"`
		} `json:"slices"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &out); err != nil {
		t.Fatalf("render -o json: %v\n%s", err, r)
	}
	var url, smile, replicas string
	for _, s := range out.Slices {
		ac, _ := json.Marshal(s.ApplyConfiguration)
		switch {
		case strings.Contains(s.Object, "json-a"):
			var cm struct{ Data map[string]string }
			_ = json.Unmarshal(ac, &cm)
			url, smile = cm.Data["url"], cm.Data["smile"]
		case strings.Contains(s.Object, "json-b"):
			var d struct {
				Spec struct{ Replicas json.RawMessage }
			}
			_ = json.Unmarshal(ac, &d)
			replicas = string(d.Spec.Replicas)
		}
	}
	if url != "https://example.org/x" || smile != "\U0001F600" || replicas != "1" {
		t.Errorf("rendered url %q, smile %q, replicas %s; want https://example.org/x, 😀, 1\n%s", url, smile, replicas, r)
	}

	w.file("app/cms.json", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"json-a"},"data":{"k":"1","k":"2"}}`+"\n")
	r = w.must(exitError, args...)
	for _, want := range []string{"cms.json", "document 1", `key "k" already set in map`} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("a key given twice: want %q on stderr\n%s", want, r)
		}
	}
}
