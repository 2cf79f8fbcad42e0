package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestClusterSection(t *testing.T) {
	tests := map[string]struct {
		cluster string
		want    string // ClusterName
	}{
		"named":              {`{name: edge, kubeconfigFile: k.yaml, context: ctx}`, "edge"},
		"context names":      {`{kubeconfigFile: k.yaml, context: prod-eu}`, "prod-eu"},
		"file names":         {`{kubeconfigFile: clusters/edge-us.kubeconfig}`, "edge-us"},
		"secret names":       {`{secretRef: {name: edge-kubeconfig}}`, "edge-kubeconfig"},
		"secret with key":    {`{secretRef: {name: edge, key: kubeconfig.yaml}, context: c1}`, "c1"},
		"inventory in syncd": {`{kubeconfigFile: k.yaml, inventoryNamespace: syncd}`, "k"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			c, err := Parse([]byte(header+"apps:\n  - name: web\n    source: repo\n    cluster: "+tc.cluster+"\n"), "syncd.yaml")
			if err != nil {
				t.Fatal(err)
			}
			if got := c.Apps[0].ClusterName(); got != tc.want {
				t.Errorf("ClusterName() = %q, want %q", got, tc.want)
			}
			if !c.Apps[0].IsRemote() {
				t.Error("IsRemote() = false for an app with a cluster section")
			}
		})
	}
	c, err := Parse([]byte(header+"apps:\n  - name: web\n    source: repo\n"), "syncd.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if got := c.Apps[0].ClusterName(); got != LocalCluster || c.Apps[0].IsRemote() {
		t.Errorf("an app without cluster: ClusterName() = %q, IsRemote() = %v; want %q, false", got, c.Apps[0].IsRemote(), LocalCluster)
	}
}

func TestClusterSecretKeyDefault(t *testing.T) {
	got := []string{SecretKeyRef{Name: "a"}.KeyOrDefault(), SecretKeyRef{Name: "a", Key: "cfg"}.KeyOrDefault()}
	if diff := cmp.Diff([]string{"value", "cfg"}, got); diff != "" {
		t.Errorf("KeyOrDefault (-want +got):\n%s", diff)
	}
}

func TestClusterSectionRejects(t *testing.T) {
	tests := map[string]struct {
		apps string
		want []string
	}{
		"no kubeconfig": {`  - {name: web, source: repo, cluster: {context: prod}}`,
			[]string{"apps[0].cluster:", "app web: cluster needs kubeconfigFile or secretRef"}},
		"both": {`  - {name: web, source: repo, cluster: {kubeconfigFile: k, secretRef: {name: s}}}`,
			[]string{"apps[0].cluster:", "app web: cluster sets both kubeconfigFile and secretRef"}},
		"secret without name": {`  - {name: web, source: repo, cluster: {name: edge, secretRef: {key: k}}}`,
			[]string{"apps[0].cluster.secretRef.name", "app web: secretRef.name is required"}},
		"bad secret name": {`  - {name: web, source: repo, cluster: {secretRef: {name: Edge_1}}}`,
			[]string{"apps[0].cluster.secretRef.name", `"Edge_1" is not a valid Secret name`}},
		"bad secret key": {`  - {name: web, source: repo, cluster: {secretRef: {name: e, key: "a/b"}}}`,
			[]string{"apps[0].cluster.secretRef.key", `"a/b" is not a valid Secret key`}},
		"named local": {`  - {name: web, source: repo, cluster: {name: local, kubeconfigFile: k}}`,
			[]string{"apps[0].cluster.name", `app web: the cluster name "local" stands for syncd's own cluster`}},
		"context local": {`  - {name: web, source: repo, cluster: {kubeconfigFile: k, context: local}}`,
			[]string{"apps[0].cluster.name", "set cluster.name to another name"}},
		"name not a label": {`  - {name: web, source: repo, cluster: {kubeconfigFile: k, context: "arn:aws:eks:eu-west-1:1:cluster/prod"}}`,
			[]string{"apps[0].cluster.name", "cannot be a metrics label value", "set cluster.name"}},
		"bad inventory namespace": {`  - {name: web, source: repo, cluster: {kubeconfigFile: k, inventoryNamespace: Syncd}}`,
			[]string{"apps[0].cluster.inventoryNamespace", `"Syncd" is not a valid namespace`}},
		"installs syncd": {`  - {name: web, source: repo, installsSyncd: true, cluster: {kubeconfigFile: k}}`,
			[]string{"apps[0].installsSyncd", "app web: installsSyncd is for the app that installs syncd on its own cluster"}},
		"one name, two clusters": {"  - {name: web, source: repo, cluster: {name: edge, kubeconfigFile: a}}\n  - {name: api, source: repo, cluster: {name: edge, kubeconfigFile: b}}",
			[]string{"apps[1].cluster:", `app api: cluster "edge" is also the name of app web's cluster (apps[0])`}},
		"unknown field": {`  - {name: web, source: repo, cluster: {kubeconfig: k}}`,
			[]string{"apps[0].cluster", "kubeconfig"}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			_, err := Parse([]byte(header+"apps:\n"+tc.apps+"\n"), "syncd.yaml")
			if err == nil {
				t.Fatal("Parse succeeded")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error does not mention %q:\n%v", w, err)
				}
			}
		})
	}
}

// TestClusterSameNameSameCluster: apps sharing one cluster may both name
// it.
func TestClusterSameNameSameCluster(t *testing.T) {
	_, err := Parse([]byte(header+"apps:\n  - {name: web, source: repo, cluster: {kubeconfigFile: k, context: edge}}\n  - {name: api, source: repo, cluster: {kubeconfigFile: k, context: edge}}\n"), "syncd.yaml")
	if err != nil {
		t.Fatal(err)
	}
}

// TestClusterKubeconfigRelative: kubeconfigFile is taken from the config
// file's directory, like the config's other files.
func TestClusterKubeconfigRelative(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "syncd.yaml")
	writeFile(t, path, header+"apps:\n  - {name: web, source: repo, cluster: {kubeconfigFile: clusters/edge.yaml}}\n")
	c, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := c.Apps[0].Cluster.KubeconfigFile, filepath.Join(dir, "clusters/edge.yaml"); got != want {
		t.Errorf("kubeconfigFile = %q, want %q", got, want)
	}
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}
