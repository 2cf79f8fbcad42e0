package reconcile

import (
	"errors"
	"strings"
	"testing"
)

// TestSecretKubeconfigDestination: a kubeconfig from a Secret names an
// https API server's root, reached directly over verified TLS; anything
// else is refused, naming what to change, before a client exists. A
// file kubeconfig (the operator's) may do all of it.
func TestSecretKubeconfigDestination(t *testing.T) {
	tests := map[string]struct {
		cluster    string
		allowProxy bool
		fromFile   bool
		// errs: the refusal says these; none: accepted.
		errs []string
	}{
		"https root":             {cluster: "server: https://api.example:6443"},
		"https root with slash":  {cluster: "server: https://api.example:6443/"},
		"plain http":             {cluster: "server: http://api.example:8080", errs: []string{"server http://api.example:8080 is not https"}},
		"no scheme":              {cluster: "server: api.example:6443", errs: []string{"server is not an address https://HOST[:PORT]"}},
		"path prefix":            {cluster: "server: https://api.example/api/v1/namespaces/default/services/x:80/proxy", errs: []string{"has a path", "https://api.example"}},
		"escaped path":           {cluster: "server: https://api.example/%2e%2e", errs: []string{"has a path"}},
		"query":                  {cluster: "server: https://api.example/?x=1", errs: []string{"a query"}},
		"user info":              {cluster: "server: https://user:pw@api.example", errs: []string{"user info"}},
		"proxy-url":              {cluster: "server: https://api.example\n    proxy-url: http://10.0.0.1:3128", errs: []string{"proxy-url", "--allow-kubeconfig-proxy"}},
		"proxy-url allowed":      {cluster: "server: https://api.example\n    proxy-url: http://10.0.0.1:3128", allowProxy: true},
		"insecure-skip-tls":      {cluster: "server: https://api.example\n    insecure-skip-tls-verify: true", errs: []string{"insecure-skip-tls-verify", "certificate-authority-data"}},
		"file may do everything": {cluster: "server: http://api.example/prefix\n    proxy-url: http://10.0.0.1:3128\n    insecure-skip-tls-verify: true", fromFile: true},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			data := []byte("apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    " + tc.cluster +
				"\nusers:\n- name: u\n  user: {token: sekret}\ncontexts:\n- name: c\n  context: {cluster: c, user: u}\ncurrent-context: c\n")
			kc := kubeconfig{data: data, where: "Secret ns/s key value", fromSecret: !tc.fromFile, allowProxy: tc.allowProxy}
			_, err := kc.restConfig("")
			if len(tc.errs) == 0 {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			if !errors.Is(err, errKubeconfigDestination) {
				t.Fatalf("error = %v, want the destination refusal", err)
			}
			for _, w := range append(tc.errs, "Secret ns/s key value, context c") {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error does not say %q:\n%v", w, err)
				}
			}
			if strings.Contains(err.Error(), "pw") || strings.Contains(err.Error(), "sekret") {
				t.Errorf("error quotes a credential:\n%v", err)
			}
		})
	}
}
