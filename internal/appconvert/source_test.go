package appconvert

import (
	"os/exec"
	"strings"
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

// The command that creates a Secret from files quotes each path for a
// POSIX shell, so that a pasted line reads the files the config names
// even when a path holds a space, a quote or a $. Each case's line is
// also run through sh, which must see the arguments intended.
func TestSecretCommandQuotesFilePaths(t *testing.T) {
	for name, tc := range map[string]struct {
		keys []secretKey
		want string
		args []string // what the shell passes to kubectl
	}{
		"plain path": {keys: []secretKey{{key: "token", file: "/etc/syncd/token"}},
			want: "kubectl -n team-a create secret generic s --from-file=token=/etc/syncd/token",
			args: []string{"--from-file=token=/etc/syncd/token"}},
		"space": {keys: []secretKey{{key: "token", file: "/home/ann/my secrets/token"}},
			want: "kubectl -n team-a create secret generic s --from-file=token='/home/ann/my secrets/token'",
			args: []string{"--from-file=token=/home/ann/my secrets/token"}},
		"quote": {keys: []secretKey{{key: "token", file: "/home/ann/team's/token"}},
			want: `kubectl -n team-a create secret generic s --from-file=token='/home/ann/team'\''s/token'`,
			args: []string{"--from-file=token=/home/ann/team's/token"}},
		"dollar and backquote": {keys: []secretKey{{key: "token", file: "/srv/$HOME/`id`/token"}},
			want: "kubectl -n team-a create secret generic s --from-file=token='/srv/$HOME/`id`/token'",
			args: []string{"--from-file=token=/srv/$HOME/`id`/token"}},
		"every one, two keys and a literal": {keys: []secretKey{{key: "identity", file: "/a b/it's $x"}, {key: "known_hosts", file: "./known hosts"}, {key: "username", value: "robot's $acct"}},
			want: `kubectl -n team-a create secret generic s --from-file=identity='/a b/it'\''s $x' --from-file=known_hosts='./known hosts' --from-literal=username='robot'\''s $acct'`,
			args: []string{"--from-file=identity=/a b/it's $x", "--from-file=known_hosts=./known hosts", "--from-literal=username=robot's $acct"}},
	} {
		t.Run(name, func(t *testing.T) {
			got := createSecretCommand("team-a", "s", tc.keys)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("createSecretCommand (-want +got):\n%s", diff)
			}
			want := append([]string{"-n", "team-a", "create", "secret", "generic", "s"}, tc.args...)
			if diff := cmp.Diff(want, shellArgs(t, got)); diff != "" {
				t.Errorf("the arguments sh passes to kubectl (-want +got):\n%s", diff)
			}
		})
	}
}

// shellArgs is the arguments sh passes to the command of line, one per
// line of printf's output (none of the cases holds a newline).
func shellArgs(t *testing.T, line string) []string {
	t.Helper()
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Skip("no sh to run the command line:", err)
	}
	cmd, args, _ := strings.Cut(line, " ")
	if cmd != "kubectl" {
		t.Fatalf("the line does not start with kubectl: %s", line)
	}
	out, err := exec.Command(sh, "-c", `printf '%s\n' `+args).Output()
	if err != nil {
		t.Fatalf("sh -c %q: %v", line, err)
	}
	return strings.Split(strings.TrimSuffix(string(out), "\n"), "\n")
}
