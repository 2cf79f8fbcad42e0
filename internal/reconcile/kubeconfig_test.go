package reconcile

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const twoContexts = `apiVersion: v1
kind: Config
clusters:
- name: a
  cluster: {server: "https://a.example:6443", certificate-authority-data: ""}
- name: b
  cluster: {server: "https://b.example:6443", certificate-authority: ca.crt}
users:
- name: token
  user: {token: sekret-token}
- name: plugin
  user:
    exec: {apiVersion: client.authentication.k8s.io/v1, command: /bin/steal, interactiveMode: Never}
contexts:
- name: good
  context: {cluster: a, user: token}
- name: files
  context: {cluster: b, user: token}
- name: exec
  context: {cluster: a, user: plugin}
current-context: good
`

func TestKubeconfigRestConfig(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "edge.kubeconfig")
	if err := os.WriteFile(filepath.Join(dir, "ca.crt"), []byte("not a real CA"), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := map[string]struct {
		kc      kubeconfig
		context string
		host    string   // want this server
		caFile  string   // and this CA file
		errs    []string // or an error saying these
		is      error
	}{
		"current context":   {kc: kubeconfig{data: []byte(twoContexts), where: "w"}, host: "https://a.example:6443"},
		"named context":     {kc: kubeconfig{data: []byte(twoContexts), path: path, where: "w"}, context: "files", host: "https://b.example:6443", caFile: filepath.Join(dir, "ca.crt")},
		"file may exec":     {kc: kubeconfig{data: []byte(twoContexts), path: path, where: "w"}, context: "exec", host: "https://a.example:6443"},
		"missing context":   {kc: kubeconfig{data: []byte(twoContexts), where: "kubeconfigFile /k"}, context: "prod", errs: []string{`kubeconfigFile /k has no context "prod"`, "set cluster.context to one of its contexts (exec, files, good)"}},
		"no current":        {kc: kubeconfig{data: []byte(strings.Replace(twoContexts, "current-context: good", "", 1)), where: "w"}, errs: []string{"w has no current-context"}},
		"not a kubeconfig":  {kc: kubeconfig{data: []byte("token: sekret-value: ["), where: "Secret ns/s key value"}, errs: []string{"Secret ns/s key value is not a kubeconfig clientcmd can load"}},
		"empty":             {kc: kubeconfig{data: nil, where: "w"}, errs: []string{"w has no current-context", "it has none"}},
		"secret exec":       {kc: kubeconfig{data: []byte(twoContexts), where: "Secret ns/s key value", fromSecret: true}, context: "exec", errs: []string{"context exec", "may not run programs", "exec (put a token"}, is: errSecretKubeconfig},
		"secret file names": {kc: kubeconfig{data: []byte(twoContexts), where: "Secret ns/s key value", fromSecret: true}, context: "files", errs: []string{"certificate-authority (use certificate-authority-data)"}, is: errSecretKubeconfig},
		"secret token":      {kc: kubeconfig{data: []byte(twoContexts), where: "Secret ns/s key value", fromSecret: true}, host: "https://a.example:6443"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			cfg, err := tc.kc.restConfig(tc.context)
			if len(tc.errs) > 0 {
				if err == nil {
					t.Fatalf("restConfig succeeded (server %s), want an error", cfg.Host)
				}
				for _, w := range tc.errs {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("error does not say %q:\n%v", w, err)
					}
				}
				if strings.Contains(err.Error(), "sekret") {
					t.Errorf("error quotes the kubeconfig's content:\n%v", err)
				}
				if tc.is != nil && !errors.Is(err, tc.is) {
					t.Errorf("error is not %v: %v", tc.is, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if cfg.Host != tc.host || cfg.CAFile != tc.caFile {
				t.Errorf("server %s, CA file %q; want %s, %q", cfg.Host, cfg.CAFile, tc.host, tc.caFile)
			}
		})
	}
}
