package controller

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"syncd.dev/syncd/internal/api/v1alpha1"
	"syncd.dev/syncd/internal/config"
)

func testApp(mutate func(*v1alpha1.AppSpec)) *v1alpha1.App {
	app := &v1alpha1.App{
		ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "web"},
		Spec:       v1alpha1.AppSpec{SourceRef: v1alpha1.SourceReference{Kind: v1alpha1.KindGitSource, Name: "repo"}, Path: "deploy"},
	}
	if mutate != nil {
		mutate(&app.Spec)
	}
	return app
}

func testSource(mutate func(*v1alpha1.GitSourceSpec)) *v1alpha1.GitSource {
	src := &v1alpha1.GitSource{
		ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "repo"},
		Spec:       v1alpha1.GitSourceSpec{URL: "https://git.example.com/team-a/repo.git", Branch: "main", Interval: &metav1.Duration{Duration: 60e9}},
	}
	if mutate != nil {
		mutate(&src.Spec)
	}
	return src
}

// TestTranslate checks the config an App and its GitSource become.
func TestTranslate(t *testing.T) {
	no := false
	cfg, err := Translate(testApp(func(s *v1alpha1.AppSpec) { s.Prune = &no }), testSource(func(s *v1alpha1.GitSourceSpec) {
		s.SecretRef = &v1alpha1.LocalObjectReference{Name: "creds"}
	}), Credentials{TokenFile: "/creds/token"})
	if err != nil {
		t.Fatal(err)
	}
	want := config.App{Name: "team-a-web", Source: "repo", Path: "deploy", Namespace: "team-a", Prune: &no}
	if diff := cmp.Diff(want, cfg.Apps[0]); diff != "" {
		t.Errorf("app (-want +got):\n%s", diff)
	}
	if got := cfg.Apps[0].DefaultManager(); got != "syncd-team-a-web" {
		t.Errorf("default manager = %q, want syncd-team-a-web", got)
	}
	if got := cfg.Sources[0].Git.Auth; got == nil || got.TokenFile != "/creds/token" {
		t.Errorf("auth = %+v, want the token file", got)
	}
}

// TestTranslateRefuses checks that what admission cannot check is
// refused with the file validation's message, naming the object's field.
func TestTranslateRefuses(t *testing.T) {
	tests := map[string]struct {
		app   *v1alpha1.App
		src   *v1alpha1.GitSource
		creds Credentials
		want  string
	}{
		"bad semver": {
			app:  testApp(nil),
			src:  testSource(func(s *v1alpha1.GitSourceSpec) { s.Branch, s.Semver = "", "not-a-range" }),
			want: `GitSource team-a/repo: spec.semver: "not-a-range" is not a semver constraint`,
		},
		"token over plain http": {
			app: testApp(nil),
			src: testSource(func(s *v1alpha1.GitSourceSpec) {
				s.URL = "http://git.example.com/repo.git"
				s.SecretRef = &v1alpha1.LocalObjectReference{Name: "creds"}
			}),
			creds: Credentials{TokenFile: "/creds/token"},
			want:  "GitSource team-a/repo: spec.secretRef (key token): the token would be sent unencrypted over http://",
		},
		"ssh without credentials": {
			app:  testApp(nil),
			src:  testSource(func(s *v1alpha1.GitSourceSpec) { s.URL = "ssh://git@git.example.com/repo.git" }),
			want: "GitSource team-a/repo: spec.secretRef: ssh URLs need",
		},
		"name too long together": {
			app: func() *v1alpha1.App {
				a := testApp(nil)
				a.Name = strings.Repeat("x", 60)
				return a
			}(),
			src:  testSource(nil),
			want: "App team-a/" + strings.Repeat("x", 60) + ": metadata.name:",
		},
		"cross-namespace source": {
			app:  testApp(func(s *v1alpha1.AppSpec) { s.SourceRef.Namespace = "team-b" }),
			src:  testSource(nil),
			want: "spec.sourceRef.namespace: GitSource team-b/repo is in another namespace; cross-namespace references are not supported yet",
		},
		"service account in another namespace": {
			app:  testApp(func(s *v1alpha1.AppSpec) { s.ServiceAccountName, s.TargetNamespace = "deployer", "team-b" }),
			src:  testSource(nil),
			want: `spec.serviceAccountName: the service account would be looked up in targetNamespace "team-b"`,
		},
		"split manager equals default": {
			app: testApp(func(s *v1alpha1.AppSpec) {
				s.Split = []config.SplitRule{{Manager: "syncd-team-a-web", Paths: []string{".spec.replicas"}}}
			}),
			src:  testSource(nil),
			want: `App team-a/web: spec.split[0].manager: "syncd-team-a-web" is the app's default manager`,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			_, err := Translate(tc.app, tc.src, tc.creds)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Translate = %v\nwant an error containing %q", err, tc.want)
			}
		})
	}
}
