package controller

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"syncd.dev/syncd/internal/api/v1alpha1"
	"syncd.dev/syncd/internal/config"
)

var tenMinutes = &metav1.Duration{Duration: 600e9}

func testHelmSource(mutate func(*v1alpha1.HelmSourceSpec)) Source {
	src := &v1alpha1.HelmSource{
		ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "charts"},
		Spec:       v1alpha1.HelmSourceSpec{URL: "https://charts.example.com/stable", Interval: tenMinutes, SecretRef: &v1alpha1.LocalObjectReference{Name: "auth"}},
	}
	if mutate != nil {
		mutate(&src.Spec)
	}
	return Source{Helm: src}
}

func testOCISource(mutate func(*v1alpha1.OCISourceSpec)) Source {
	src := &v1alpha1.OCISource{
		ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "bundle"},
		Spec: v1alpha1.OCISourceSpec{URL: "oci://registry.example.com/team/bundle", OCIRef: config.OCIRef{Tag: "v1", Interval: tenMinutes},
			SecretRef: &v1alpha1.LocalObjectReference{Name: "auth"}},
	}
	if mutate != nil {
		mutate(&src.Spec)
	}
	return Source{OCI: src}
}

// chartApp is an App of the HelmSource charts rendering chart web.
func chartApp() *v1alpha1.App {
	return testApp(func(s *v1alpha1.AppSpec) {
		s.SourceRef = v1alpha1.SourceReference{Kind: v1alpha1.KindHelmSource, Name: "charts"}
		s.Path, s.Helm = "", &config.HelmSpec{Chart: "web", Version: "1.x"}
	})
}

// bundleApp is an App of the OCISource bundle rendering deploy.
func bundleApp() *v1alpha1.App {
	return testApp(func(s *v1alpha1.AppSpec) {
		s.SourceRef = v1alpha1.SourceReference{Kind: v1alpha1.KindOCISource, Name: "bundle"}
	})
}

// TestTranslateArtifactSources checks the sources[] entry a HelmSource
// and an OCISource become: the spec's fields as they are, the Secret's
// keys as the auth files.
func TestTranslateArtifactSources(t *testing.T) {
	tests := map[string]struct {
		app   *v1alpha1.App
		src   Source
		creds Credentials
		want  config.Source
	}{
		"HelmSource, basic auth and CA": {
			app: chartApp(), src: testHelmSource(nil),
			creds: Credentials{Username: "robot", PasswordFile: "/c/auth.password", CAFile: "/c/auth.ca.crt"},
			want: config.Source{Name: "charts", Helm: &config.HelmSource{URL: "https://charts.example.com/stable", Interval: tenMinutes,
				Auth: &config.HelmAuth{Username: "robot", PasswordFile: "/c/auth.password", CAFile: "/c/auth.ca.crt"}}},
		},
		"HelmSource of a registry, docker config": {
			app:   chartApp(),
			src:   testHelmSource(func(s *v1alpha1.HelmSourceSpec) { s.URL = "oci://registry.example.com/charts" }),
			creds: Credentials{DockerConfigFile: "/c/auth..dockerconfigjson"},
			want: config.Source{Name: "charts", Helm: &config.HelmSource{URL: "oci://registry.example.com/charts", Interval: tenMinutes,
				Auth: &config.HelmAuth{DockerConfigFile: "/c/auth..dockerconfigjson"}}},
		},
		"HelmSource without Secret": {
			app: chartApp(), src: testHelmSource(func(s *v1alpha1.HelmSourceSpec) { s.SecretRef = nil }),
			creds: Credentials{TokenFile: "/stale"},
			want:  config.Source{Name: "charts", Helm: &config.HelmSource{URL: "https://charts.example.com/stable", Interval: tenMinutes}},
		},
		"OCISource, token and CA": {
			app: bundleApp(), src: testOCISource(nil),
			creds: Credentials{TokenFile: "/c/auth.token", CAFile: "/c/auth.ca.crt"},
			want: config.Source{Name: "bundle", OCI: &config.OCISource{URL: "oci://registry.example.com/team/bundle", OCIRef: config.OCIRef{Tag: "v1", Interval: tenMinutes},
				Auth: &config.OCIAuth{TokenFile: "/c/auth.token"}, CAFile: "/c/auth.ca.crt"}},
		},
		"OCISource, CA alone, insecure": {
			app: bundleApp(), src: testOCISource(func(s *v1alpha1.OCISourceSpec) { s.Insecure = true }),
			creds: Credentials{CAFile: "/c/auth.ca.crt"},
			want: config.Source{Name: "bundle", OCI: &config.OCISource{URL: "oci://registry.example.com/team/bundle", OCIRef: config.OCIRef{Tag: "v1", Interval: tenMinutes},
				CAFile: "/c/auth.ca.crt", Insecure: true}},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			cfg, err := TranslateSource(tc.app, tc.src, tc.creds)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff([]config.Source{tc.want}, cfg.Sources); diff != "" {
				t.Errorf("sources (-want +got):\n%s", diff)
			}
			if got := cfg.Apps[0].Source; got != tc.want.Name {
				t.Errorf("app's source = %q, want %q", got, tc.want.Name)
			}
		})
	}
}

// TestTranslateArtifactSourcesRefuses: the file validation's refusals of
// a sources[].helm or sources[].oci entry name the object, its field,
// and the Secret's key for a credential file.
func TestTranslateArtifactSourcesRefuses(t *testing.T) {
	tests := map[string]struct {
		app   *v1alpha1.App
		src   Source
		creds Credentials
		want  string
	}{
		"HelmSource, password and token": {
			app: chartApp(), src: testHelmSource(nil),
			creds: Credentials{Username: "robot", PasswordFile: "/p", TokenFile: "/t"},
			want:  "HelmSource team-a/charts: spec.secretRef: passwordFile and bearerTokenFile are both set",
		},
		"HelmSource, password without username": {
			app: chartApp(), src: testHelmSource(nil),
			creds: Credentials{PasswordFile: "/p"},
			want:  "HelmSource team-a/charts: spec.secretRef (key username): username is required with passwordFile",
		},
		"HelmSource, docker config of an https repository": {
			app: chartApp(), src: testHelmSource(nil),
			creds: Credentials{DockerConfigFile: "/d"},
			want:  "HelmSource team-a/charts: spec.secretRef (key .dockerconfigjson): dockerConfigFile holds registry credentials",
		},
		"OCISource, credentials over plain HTTP": {
			app: bundleApp(), src: testOCISource(func(s *v1alpha1.OCISourceSpec) { s.Insecure = true }),
			creds: Credentials{TokenFile: "/t"},
			want:  "OCISource team-a/bundle: spec.secretRef: credentials would be sent unencrypted",
		},
		"OCISource, bad semver": {
			app: bundleApp(), src: testOCISource(func(s *v1alpha1.OCISourceSpec) { s.Tag, s.Semver = "", "not-a-range" }),
			want: "OCISource team-a/bundle: spec.semver:",
		},
		"kind other than referenced": {
			app: bundleApp(), src: testHelmSource(nil),
			want: "App team-a/web: spec.sourceRef: got HelmSource team-a/charts, want OCISource team-a/bundle",
		},
		"chart of an OCISource": {
			app: testApp(func(s *v1alpha1.AppSpec) {
				s.SourceRef = v1alpha1.SourceReference{Kind: v1alpha1.KindOCISource, Name: "bundle"}
				s.Helm = &config.HelmSpec{Chart: "web"}
			}),
			src:  testOCISource(nil),
			want: "App team-a/web: spec.helm.chart: chart and version pick a chart from a Helm repository source",
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			_, err := TranslateSource(tc.app, tc.src, tc.creds)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("TranslateSource = %v\nwant an error containing %q", err, tc.want)
			}
		})
	}
}
