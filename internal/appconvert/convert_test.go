package appconvert

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"syncd.dev/syncd/internal/api/v1alpha1"
	"syncd.dev/syncd/internal/config"
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
	app, err := c.app(a, "team-a")
	if err != nil {
		t.Fatal(err)
	}
	app.Spec.Path = ""
	src, creds := c.source(gitConfig().Sources[0], "team-a")
	err = checkRoundTrip(a, app, src, creds)
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
