package appconvert

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"syncd.dev/syncd/internal/config"
)

// The kubectl command that creates a source's Secret gives its user
// name as it is (a user name is not secret; the files are still never
// read), quoted for the shell when it needs to be.
func TestSecretCommandPrintsTheUserName(t *testing.T) {
	interval := &metav1.Duration{Duration: 300e9}
	for name, tc := range map[string]struct {
		source config.Source
		want   string
	}{
		"git": {source: config.Source{Name: "repo", Git: config.GitSource{URL: "https://git.example.com/r.git", GitRef: config.GitRef{Branch: "main", Interval: interval},
			Auth: &config.GitAuth{Username: "bot", TokenFile: "/etc/syncd/token"}}},
			want: "kubectl -n team-a create secret generic repo-git-auth --from-file=token=/etc/syncd/token --from-literal=username=bot"},
		"helm": {source: config.Source{Name: "charts", Helm: &config.HelmSource{URL: "https://charts.example.com", Interval: interval,
			Auth: &config.HelmAuth{Username: "robot", PasswordFile: "/etc/syncd/password"}}},
			want: "kubectl -n team-a create secret generic charts-helm-auth --from-file=password=/etc/syncd/password --from-literal=username=robot"},
		"oci, a name the shell would split": {source: config.Source{Name: "bundle", OCI: &config.OCISource{URL: "oci://registry.example.com/b", OCIRef: config.OCIRef{Tag: "v1", Interval: interval},
			Auth: &config.OCIAuth{Username: "robot's $acct", PasswordFile: "/etc/syncd/password"}}},
			want: `kubectl -n team-a create secret generic bundle-oci-auth --from-file=password=/etc/syncd/password --from-literal=username='robot'\''s $acct'`},
	} {
		t.Run(name, func(t *testing.T) {
			cfg := &config.Config{APIVersion: config.APIVersion, Kind: config.Kind, File: "syncd.yaml", Sources: []config.Source{tc.source},
				Apps: []config.App{{Name: "web", Source: tc.source.Name, Namespace: "team-a", AppSpec: config.AppSpec{Helm: helmOf(tc.source)}}}}
			c, err := Convert(cfg, "team-a")
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, w := range c.Warnings {
				if i := len(w) - len(tc.want); i >= 0 && w[i:] == tc.want {
					got = append(got, tc.want)
				}
			}
			if diff := cmp.Diff([]string{tc.want}, got); diff != "" {
				t.Errorf("warnings ending in the command (-want +got):\n%s\nwarnings: %q", diff, c.Warnings)
			}
		})
	}
}

// helmOf is the helm section an app of s needs: a chart for a
// HelmSource, none otherwise.
func helmOf(s config.Source) *config.HelmSpec {
	if s.Helm != nil {
		return &config.HelmSpec{Chart: "web"}
	}
	return nil
}
