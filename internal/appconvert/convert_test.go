package appconvert

import (
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"syncd.dev/syncd/internal/api/v1alpha1"
	"syncd.dev/syncd/internal/config"
	"syncd.dev/syncd/internal/controller"
)

// gitConfig is a config with one Git source, repo, and apps.
func gitConfig(apps ...config.App) *config.Config {
	return &config.Config{
		APIVersion: config.APIVersion, Kind: config.Kind, File: "syncd.yaml",
		Sources: []config.Source{{Name: "repo", Git: config.GitSource{URL: "https://git.example.com/r.git", GitRef: config.GitRef{Branch: "main", Interval: &metav1.Duration{Duration: 300e9}}}}},
		Apps:    apps,
	}
}

// TestConvertRoundTrips: what Convert makes of an app translates back
// to it (checkRoundTrip passes), shared fields included; a renamed app
// keeps its manager and says so.
func TestConvertRoundTrips(t *testing.T) {
	cfg := gitConfig(
		config.App{Name: "team-a-web", Source: "repo", Namespace: "team-a", AppSpec: shared},
		config.App{Name: "api", Source: "repo", Namespace: "team-a", AppSpec: config.AppSpec{DependsOn: []string{"team-a-web"}}},
	)
	c, err := Convert(cfg, "team-a")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, app := range c.Apps {
		names = append(names, app.Name)
	}
	if diff := cmp.Diff([]string{"web", "api"}, names); diff != "" {
		t.Errorf("App names (-want +got):\n%s", diff)
	}
	if got := c.Apps[1].Spec.Manager; got != "syncd-api" {
		t.Errorf("App api's manager = %q, want its file default syncd-api", got)
	}
	if len(c.Warnings) != 1 || !strings.Contains(c.Warnings[0], "app api becomes App team-a/api, whose app name is team-a-api") {
		t.Errorf("warnings = %q, want one about app api's new app name", c.Warnings)
	}
}

// TestRoundTripCatchesLoss: a field the App lost on the way is named.
func TestRoundTripCatchesLoss(t *testing.T) {
	a := config.App{Name: "team-a-web", Source: "repo", Namespace: "team-a", AppSpec: config.AppSpec{Path: "deploy", Wait: true}}
	c := &Conversion{Comments: map[string][]string{}}
	app, err := c.app(a, "team-a", v1alpha1.KindGitSource)
	if err != nil {
		t.Fatal(err)
	}
	app.Spec.Path = ""
	src, creds := c.source(gitConfig().Sources[0], "team-a")
	err = checkRoundTrip(a, app, controller.Source{Git: src}, creds)
	if err == nil || !strings.Contains(err.Error(), "fields path differ") {
		t.Errorf("err = %v, want it to name field path", err)
	}
}

// TestWrite: GitSources first, comments above their object, no status
// and no creationTimestamp.
func TestWrite(t *testing.T) {
	c := &Conversion{
		Sources:  []*v1alpha1.GitSource{{TypeMeta: typeMeta(v1alpha1.KindGitSource), ObjectMeta: metav1.ObjectMeta{Name: "repo", Namespace: "ns"}, Spec: v1alpha1.GitSourceSpec{URL: "https://git.example.com/r.git"}}},
		Apps:     []*v1alpha1.App{{TypeMeta: typeMeta(v1alpha1.KindApp), ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns"}, Spec: v1alpha1.AppSpec{SourceRef: repoRef}}},
		Comments: map[string][]string{"App/web": {"Secret ns/x must exist"}},
	}
	var b strings.Builder
	if err := c.Write(&b); err != nil {
		t.Fatal(err)
	}
	want := `apiVersion: syncd.dev/v1alpha1
kind: GitSource
metadata:
  name: repo
  namespace: ns
spec:
  url: https://git.example.com/r.git
---
# Secret ns/x must exist
apiVersion: syncd.dev/v1alpha1
kind: App
metadata:
  name: web
  namespace: ns
spec:
  sourceRef:
    kind: GitSource
    name: repo
`
	if diff := cmp.Diff(want, b.String()); diff != "" {
		t.Errorf("Write (-want +got):\n%s", diff)
	}
}

// TestConvertArtifactSourcesRoundTrip: a sources[].helm and a
// sources[].oci entry become a HelmSource and an OCISource that
// translate back (as the controller runs them, the Secret's keys written
// to the files the config named) to the same entries, and their apps
// reference them by kind.
func TestConvertArtifactSourcesRoundTrip(t *testing.T) {
	interval := &metav1.Duration{Duration: 300e9}
	cfg := &config.Config{
		APIVersion: config.APIVersion, Kind: config.Kind, File: "syncd.yaml",
		Sources: []config.Source{
			{Name: "charts", Helm: &config.HelmSource{URL: "oci://registry.example.com/charts", Interval: interval,
				Auth: &config.HelmAuth{DockerConfigFile: "/etc/syncd/docker.json", CAFile: "/etc/syncd/ca.pem"}}},
			{Name: "bundle", OCI: &config.OCISource{URL: "oci://registry.example.com/ops/bundle", OCIRef: config.OCIRef{Digest: "sha256:" + strings.Repeat("a", 64), Interval: interval},
				Auth: &config.OCIAuth{Username: "robot", PasswordFile: "/etc/syncd/password"}, CAFile: "/etc/syncd/ca.pem"}},
			{Name: "plain", OCI: &config.OCISource{URL: "oci://localhost:5000/bundle", OCIRef: config.OCIRef{Tag: "latest", Interval: interval}}},
		},
		Apps: []config.App{
			{Name: "team-a-web", Source: "charts", Namespace: "team-a", AppSpec: config.AppSpec{Helm: &config.HelmSpec{Chart: "web"}}},
			{Name: "team-a-base", Source: "bundle", Namespace: "team-a", AppSpec: config.AppSpec{Path: "deploy"}},
			{Name: "team-a-plain", Source: "plain", Namespace: "team-a"},
		},
	}
	c, err := Convert(cfg, "team-a")
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Sources) != 0 || len(c.HelmSources) != 1 || len(c.OCISources) != 2 {
		t.Fatalf("converted %d GitSources, %d HelmSources, %d OCISources; want 0, 1, 2", len(c.Sources), len(c.HelmSources), len(c.OCISources))
	}
	if ref := c.OCISources[1].Spec.SecretRef; ref != nil {
		t.Errorf("OCISource plain without credentials names Secret %s", ref.Name)
	}
	sources := map[string]controller.Source{"charts": {Helm: c.HelmSources[0]}, "bundle": {OCI: c.OCISources[0]}, "plain": {OCI: c.OCISources[1]}}
	creds := map[string]controller.Credentials{
		"charts": {DockerConfigFile: "/etc/syncd/docker.json", CAFile: "/etc/syncd/ca.pem"},
		"bundle": {Username: "robot", PasswordFile: "/etc/syncd/password", CAFile: "/etc/syncd/ca.pem"},
	}
	wantKinds := map[string]string{"web": v1alpha1.KindHelmSource, "base": v1alpha1.KindOCISource, "plain": v1alpha1.KindOCISource}
	for i, app := range c.Apps {
		if got := app.Spec.SourceRef.Kind; got != wantKinds[app.Name] {
			t.Errorf("App %s: sourceRef.kind %q, want %q", app.Name, got, wantKinds[app.Name])
		}
		name := app.Spec.SourceRef.Name
		back, err := controller.TranslateSource(app, sources[name], creds[name])
		if err != nil {
			t.Fatalf("App %s: %v", app.Name, err)
		}
		if diff := cmp.Diff(cfg.Sources[i], back.Sources[0]); diff != "" {
			t.Errorf("source %s after convert and translation (-want +got):\n%s", name, diff)
		}
	}
}

// TestConvertAlerts: an alerts[] entry becomes an AlertProvider of its
// type and an Alert of its events selecting every App of the namespace,
// the provider's Secret keys named from its files, with the command.
func TestConvertAlerts(t *testing.T) {
	cfg := gitConfig()
	cfg.Alerts = []config.Alert{
		{Name: "chat", Type: "slack", URLFile: "/etc/syncd/chat-url"},
		{Name: "audit", Type: "webhook", URLFile: "/etc/syncd/audit-url", HMACKeyFile: "/etc/syncd/audit-key", Events: []string{"drift", "error"}},
	}
	c, err := Convert(cfg, "team-a")
	if err != nil {
		t.Fatal(err)
	}
	type sink struct{ Type, Secret, Provider string }
	got := map[string]sink{}
	for _, p := range c.AlertProviders {
		got[p.Name] = sink{Type: p.Spec.Type, Secret: p.Spec.SecretRef.Name}
	}
	for _, a := range c.Alerts {
		s := got[a.Name]
		s.Provider = a.Spec.ProviderRef.Name
		got[a.Name] = s
		if diff := cmp.Diff([]v1alpha1.AppSelector{{Kind: v1alpha1.KindApp, Name: "*"}}, a.Spec.EventSources); diff != "" {
			t.Errorf("Alert %s eventSources (-want +got):\n%s", a.Name, diff)
		}
	}
	want := map[string]sink{"chat": {"slack", "chat-alert", "chat"}, "audit": {"webhook", "audit-alert", "audit"}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("alerts (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"drift", "error"}, c.Alerts[1].Spec.Events); diff != "" {
		t.Errorf("Alert audit events (-want +got):\n%s", diff)
	}
	wantCmd := "kubectl -n team-a create secret generic audit-alert --from-file=address=/etc/syncd/audit-url --from-file=hmacKey=/etc/syncd/audit-key"
	if !slices.ContainsFunc(c.Warnings, func(w string) bool { return strings.Contains(w, wantCmd) }) {
		t.Errorf("no warning with %q:\n%s", wantCmd, strings.Join(c.Warnings, "\n"))
	}
}
