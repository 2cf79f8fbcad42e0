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
		Spec:       v1alpha1.AppSpec{SourceRef: v1alpha1.SourceReference{Kind: v1alpha1.KindGitSource, Name: "repo"}, AppSpec: config.AppSpec{Path: "deploy"}},
	}
	if mutate != nil {
		mutate(&app.Spec)
	}
	return app
}

func testSource(mutate func(*v1alpha1.GitSourceSpec)) *v1alpha1.GitSource {
	src := &v1alpha1.GitSource{
		ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "repo"},
		Spec:       v1alpha1.GitSourceSpec{URL: "https://git.example.com/team-a/repo.git", GitRef: config.GitRef{Branch: "main", Interval: &metav1.Duration{Duration: 60e9}}},
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
	want := config.App{Name: "team-a-web", Source: "repo", Namespace: "team-a", AppSpec: config.AppSpec{Path: "deploy", Prune: &no}}
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
		"another GitSource than the one referenced": {
			app:  testApp(func(s *v1alpha1.AppSpec) { s.SourceRef.Namespace = "team-b" }),
			src:  testSource(nil),
			want: "App team-a/web: spec.sourceRef: got GitSource team-a/repo, want GitSource team-b/repo",
		},
		"service account in another namespace": {
			app:  testApp(func(s *v1alpha1.AppSpec) { s.ServiceAccountName, s.TargetNamespace = "deployer", "team-b" }),
			src:  testSource(nil),
			want: `spec.serviceAccountName: the service account would be looked up in targetNamespace "team-b"`,
		},
		"cluster named local": {
			app: testApp(func(s *v1alpha1.AppSpec) {
				s.Cluster = &v1alpha1.ClusterReference{Name: "local", KubeConfig: v1alpha1.KubeConfigSource{SecretRef: v1alpha1.SecretKeyReference{Name: "prod"}}}
			}),
			src:  testSource(nil),
			want: `App team-a/web: spec.cluster.name: app team-a-web: the cluster name "local" stands for syncd's own cluster`,
		},
		"cluster secret key invalid": {
			app: testApp(func(s *v1alpha1.AppSpec) {
				s.Cluster = &v1alpha1.ClusterReference{KubeConfig: v1alpha1.KubeConfigSource{SecretRef: v1alpha1.SecretKeyReference{Name: "prod", Key: "a b"}}}
			}),
			src:  testSource(nil),
			want: `App team-a/web: spec.cluster.kubeConfig.secretRef.key: app team-a-web: "a b" is not a valid Secret key`,
		},
		"split manager equals default": {
			app: testApp(func(s *v1alpha1.AppSpec) {
				s.Split = []config.SplitRule{{Manager: "syncd-team-a-web", Paths: []string{".spec.replicas"}}}
			}),
			src:  testSource(nil),
			want: `App team-a/web: spec.split[0].manager: "syncd-team-a-web" is the app's default manager`,
		},
		"manager of syncd's own": {
			app:  testApp(func(s *v1alpha1.AppSpec) { s.Manager = FieldManager }),
			src:  testSource(nil),
			want: `App team-a/web: spec.manager: manager "syncd-controller" is syncd's own (the App controller's status and finalizer writes)`,
		},
		"split manager of syncd's own": {
			app: testApp(func(s *v1alpha1.AppSpec) {
				s.Split = []config.SplitRule{{Manager: "syncd-inventory", Paths: []string{".spec.replicas"}}}
			}),
			src:  testSource(nil),
			want: `App team-a/web: spec.split[0].manager: manager "syncd-inventory" is syncd's own (the inventory Secrets)`,
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

// TestTranslateFields checks that the apps[] fields an App carries reach
// the config unchanged, and the App-only forms are mapped: substituteFrom
// references, decryption's Secret as the keys file, dependsOn left to
// the controller.
func TestTranslateFields(t *testing.T) {
	strict, crds := false, false
	ignore := []config.IgnoreRule{{Kinds: []string{"apps/Deployment"}, Paths: []string{".spec.replicas"}, Managers: []string{"hpa-*"}}}
	tests := map[string]struct {
		spec  func(*v1alpha1.AppSpec)
		creds Credentials
		want  func(*config.App)
	}{
		"ignore": {
			spec: func(s *v1alpha1.AppSpec) { s.Ignore = ignore },
			want: func(a *config.App) { a.Ignore = ignore },
		},
		"substitute": {
			spec: func(s *v1alpha1.AppSpec) {
				s.Substitute = map[string]config.SubstituteValue{"CLUSTER": "prod"}
				s.SubstituteFrom = []v1alpha1.SubstituteReference{{Kind: "ConfigMap", Name: "vars", Optional: true}, {Kind: "Secret", Name: "tokens"}}
				s.SubstituteStrict = &strict
			},
			want: func(a *config.App) {
				a.Substitute = map[string]config.SubstituteValue{"CLUSTER": "prod"}
				a.SubstituteFrom = []config.SubstituteSource{{Kind: "ConfigMap", Name: "vars", Optional: true}, {Kind: "Secret", Name: "tokens"}}
				a.SubstituteStrict = &strict
			},
		},
		"decryption": {
			spec: func(s *v1alpha1.AppSpec) {
				s.Decryption = &v1alpha1.Decryption{Provider: "sops", SecretRef: v1alpha1.LocalObjectReference{Name: "sops-keys"}}
			},
			creds: Credentials{DecryptionKeysFile: "/creds/.decryption/team-a/web/keys"},
			want: func(a *config.App) {
				a.Decryption = &config.Decryption{Provider: "sops", KeysFile: "/creds/.decryption/team-a/web/keys"}
			},
		},
		"helm": {
			spec: func(s *v1alpha1.AppSpec) {
				s.Helm = &config.HelmSpec{ReleaseName: "web", Values: config.HelmValues{"image": "web:1.2"}, ValuesFiles: []string{"deploy/prod.yaml"}, IncludeCRDs: &crds}
			},
			want: func(a *config.App) {
				a.Helm = &config.HelmSpec{ReleaseName: "web", Values: config.HelmValues{"image": "web:1.2"}, ValuesFiles: []string{"deploy/prod.yaml"}, IncludeCRDs: &crds}
			},
		},
		"cluster": {
			spec: func(s *v1alpha1.AppSpec) {
				s.Cluster = &v1alpha1.ClusterReference{
					Name: "prod", Context: "prod-admin", InventoryNamespace: "syncd-inv",
					KubeConfig: v1alpha1.KubeConfigSource{SecretRef: v1alpha1.SecretKeyReference{Name: "prod-kubeconfig"}},
				}
			},
			want: func(a *config.App) {
				a.Cluster = &config.ClusterSpec{Name: "prod", Context: "prod-admin", InventoryNamespace: "syncd-inv", SecretRef: &config.SecretKeyRef{Name: "prod-kubeconfig"}}
			},
		},
		"cluster key": {
			spec: func(s *v1alpha1.AppSpec) {
				s.Cluster = &v1alpha1.ClusterReference{KubeConfig: v1alpha1.KubeConfigSource{SecretRef: v1alpha1.SecretKeyReference{Name: "prod", Key: "kubeconfig"}}}
			},
			want: func(a *config.App) {
				a.Cluster = &config.ClusterSpec{SecretRef: &config.SecretKeyRef{Name: "prod", Key: "kubeconfig"}}
			},
		},
		"dependsOn stays with the controller": {
			spec: func(s *v1alpha1.AppSpec) { s.DependsOn = []string{"db", "queue"} },
			want: func(*config.App) {},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			cfg, err := Translate(testApp(tc.spec), testSource(nil), tc.creds)
			if err != nil {
				t.Fatal(err)
			}
			want := config.App{Name: "team-a-web", Source: "repo", Namespace: "team-a", AppSpec: config.AppSpec{Path: "deploy"}}
			tc.want(&want)
			if diff := cmp.Diff(want, cfg.Apps[0]); diff != "" {
				t.Errorf("app (-want +got):\n%s", diff)
			}
		})
	}
}

// TestTranslateRefusesDependsOn: an App depending on itself or naming an
// App twice is refused with the field named.
func TestTranslateRefusesDependsOn(t *testing.T) {
	tests := map[string]struct {
		deps []string
		want string
	}{
		"itself": {deps: []string{"db", "web"}, want: `App team-a/web: spec.dependsOn[1]: the App depends on itself`},
		"twice":  {deps: []string{"db", "db"}, want: `App team-a/web: spec.dependsOn[1]: "db" is already listed at dependsOn[0]`},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			_, err := Translate(testApp(func(s *v1alpha1.AppSpec) { s.DependsOn = tc.deps }), testSource(nil), Credentials{})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Translate = %v\nwant an error containing %q", err, tc.want)
			}
		})
	}
}

// TestAppName checks the length rule: a join of at most 63 characters is
// the name; a longer one is cut and ends in a stable hash, stays a DNS
// label, and its default manager passes the file validation.
func TestAppName(t *testing.T) {
	long := strings.Repeat("x", 60)
	tests := map[string]struct {
		namespace, name string
		want            string
	}{
		"short":       {namespace: "team-a", name: "web", want: "team-a-web"},
		"exactly 63":  {namespace: "team-a", name: strings.Repeat("w", 56), want: "team-a-" + strings.Repeat("w", 56)},
		"too long":    {namespace: "team-a", name: long, want: "team-a-" + strings.Repeat("x", 47) + "-" + appNameHash("team-a", long)},
		"cut at a -":  {namespace: strings.Repeat("n", 53), name: "web-server", want: strings.Repeat("n", 53) + "-" + appNameHash(strings.Repeat("n", 53), "web-server")},
		"other split": {namespace: "team-a-" + strings.Repeat("x", 30), name: strings.Repeat("x", 30), want: "team-a-" + strings.Repeat("x", 30) + "-" + strings.Repeat("x", 16) + "-" + appNameHash("team-a-"+strings.Repeat("x", 30), strings.Repeat("x", 30))},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got := AppName(tc.namespace, tc.name)
			if got != tc.want {
				t.Errorf("AppName(%q, %q) = %q, want %q", tc.namespace, tc.name, got, tc.want)
			}
			if len(got) > MaxAppName {
				t.Errorf("AppName is %d characters, more than %d", len(got), MaxAppName)
			}
			app := testApp(nil)
			app.Namespace, app.Name = tc.namespace, tc.name
			src := testSource(nil)
			src.Namespace = tc.namespace
			cfg, err := Translate(app, src, Credentials{})
			if err != nil {
				t.Fatalf("Translate: %v", err)
			}
			if m := cfg.Apps[0].DefaultManager(); m != "syncd-"+got {
				t.Errorf("default manager = %q, want syncd-%s", m, got)
			}
		})
	}
	if a, b := appNameHash("team-a-"+strings.Repeat("x", 30), strings.Repeat("x", 30)), appNameHash("team-a", long); a == b {
		t.Errorf("two Apps whose names join alike got the same hash %q", a)
	}
}

// TestAppNameDocumented pins the example of docs/apps.md (Names).
func TestAppNameDocumented(t *testing.T) {
	got := AppName("platform-observability-production-eu-west-1", "web-frontend-canary-v2")
	if want := "platform-observability-production-eu-west-1-web-fronte-tkkjjttj"; got != want {
		t.Errorf("AppName = %q, want %q (docs/apps.md, Names)", got, want)
	}
}
