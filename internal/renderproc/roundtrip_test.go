package renderproc

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	"syncd.dev/syncd/internal/decrypt"
	"syncd.dev/syncd/internal/decrypt/sopstest"
	"syncd.dev/syncd/internal/planner"
)

// TestRenderInChildEqualsInProcess renders trees of every kind both in
// process (planner.Render) and through a child: the manifests (numbers'
// types, hooks, decrypted fields included) and the errors (their
// messages and ManifestErrors' problems) are the same.
func TestRenderInChildEqualsInProcess(t *testing.T) {
	id := sopstest.NewIdentity(t)
	secret := sopstest.Encrypt(t, []byte("apiVersion: v1\nkind: Secret\nmetadata:\n  name: s\n  namespace: ns\nstringData:\n  password: hunter2-correct-horse\n"),
		sopstest.Options{Age: []string{id.Recipient}, EncryptedRegex: "^(data|stringData)$"})
	keys, err := decrypt.ParseKeys(id.KeysFile)
	if err != nil {
		t.Fatal(err)
	}
	tests := map[string]struct {
		files map[string]string
		helm  planner.HelmOptions
		keys  *decrypt.Keys
	}{
		"plain directory": {files: map[string]string{
			"a.yaml":    "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n  namespace: ns\ndata:\n  k: v\n---\napiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: d\n  namespace: ns\nspec:\n  replicas: 3\n  template:\n    spec:\n      terminationGracePeriodSeconds: 1.5\n",
			"list.json": `{"apiVersion":"v1","kind":"List","items":[{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"b","namespace":"ns"}}]}`,
		}},
		"kustomization": {files: map[string]string{
			"base/kustomization.yaml": "resources: [cm.yaml]\n",
			"base/cm.yaml":            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm\ndata:\n  n: \"1\"\n",
			"app/kustomization.yaml":  "namespace: ns\nnamePrefix: p-\nresources: [../base]\nconfigMapGenerator:\n- name: gen\n  literals: [a=b]\n",
		}},
		"chart with a hook and values": {
			files: map[string]string{
				"app/Chart.yaml":            "apiVersion: v2\nname: web\nversion: 0.1.0\n",
				"app/values.yaml":           "replicas: 2\n",
				"app/templates/deploy.yaml": "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: {{ .Release.Name }}\nspec:\n  replicas: {{ .Values.replicas }}\n  size: {{ .Values.size }}\n  big: {{ .Values.big }}\n",
				"app/templates/hook.yaml":   "apiVersion: batch/v1\nkind: Job\nmetadata:\n  name: migrate\n  annotations:\n    helm.sh/hook: pre-install\n",
			},
			helm: planner.HelmOptions{ReleaseName: "rel", Namespace: "ns", Values: map[string]any{"size": int64(1000000), "big": 1e6}},
		},
		"sops secret":              {files: map[string]string{"app/secret.yaml": string(secret)}, keys: keys},
		"sops secret without keys": {files: map[string]string{"app/secret.yaml": string(secret)}},
		"bad documents": {files: map[string]string{
			"app/a.yaml": "apiVersion: v1\nkind: ConfigMap\n---\n: : :\n",
			"app/b.yaml": "kind: Secret\nmetadata:\n  name: x\n",
		}},
		"kustomization error": {files: map[string]string{
			"app/kustomization.yaml": "resources: [https://example.com/x.yaml, ../../outside]\n",
		}},
		"chart error": {files: map[string]string{
			"app/Chart.yaml":        "apiVersion: v2\nname: web\nversion: 0.1.0\n",
			"app/templates/cm.yaml": "{{ required \"set .Values.name\" .Values.name }}\n",
		}, helm: planner.HelmOptions{ReleaseName: "rel"}},
	}
	r := newRenderer(t, Limits{})
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			root := writeTree(t, tc.files)
			dir := root
			if _, err := os.Stat(filepath.Join(root, "app")); err == nil {
				dir = filepath.Join(root, "app")
			}
			tree := planner.Tree{Root: root, Dir: dir, Helm: tc.helm, Decryption: tc.keys}
			wantMs, wantErr := planner.Render(context.Background(), tree)
			gotMs, gotErr := r.Render(context.Background(), tree)
			if diff := cmp.Diff(wantMs, gotMs, cmp.Comparer(func(a, b fieldpath.Path) bool { return a.Equals(b) })); diff != "" {
				t.Errorf("manifests (-in process +child):\n%s", diff)
			}
			if diff := cmp.Diff(errText(wantErr), errText(gotErr)); diff != "" {
				t.Errorf("error (-in process +child):\n%s", diff)
			}
			var wantList, gotList planner.ManifestErrors
			if errors.As(wantErr, &wantList) != errors.As(gotErr, &gotList) || len(wantList) != len(gotList) {
				t.Errorf("ManifestErrors: in process %d problems, child %d (%T)", len(wantList), len(gotList), gotErr)
			}
			if wantErr == nil && len(wantMs) == 0 {
				t.Error("the fixture renders nothing")
			}
			if strings.Contains(name, "sops secret") && wantErr == nil && len(gotMs[0].Decrypted) == 0 {
				t.Error("no decrypted field marked")
			}
		})
	}
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// TestRenderOutputCap: a render whose output is over the output limit
// fails with that limit named, and one under it passes.
func TestRenderOutputCap(t *testing.T) {
	big := map[string]string{"cm.yaml": "{{ range until 300 }}\n---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm-{{ . }}\ndata:\n  k: {{ repeat 4000 \"x\" }}\n{{ end }}"}
	tests := map[string]struct {
		output int64
		want   Limit
	}{
		"over":  {output: 1 << 20, want: LimitOutput},
		"under": {output: 2 << 20},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			r := newRenderer(t, Limits{Output: tc.output})
			ms, err := r.Render(context.Background(), chartTree(t, "", big))
			var le *LimitError
			errors.As(err, &le)
			got := Limit("")
			if le != nil {
				got = le.Limit
			} else if err != nil {
				t.Fatalf("Render: %v", err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("limit (-want +got):\n%s\nerror: %v", diff, err)
			}
			if tc.want == "" && len(ms) != 300 {
				t.Errorf("%d manifests, want 300", len(ms))
			}
		})
	}
}
