package appconvert

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"syncd.dev/syncd/internal/api/v1alpha1"
	"syncd.dev/syncd/internal/config"
)

// TestFileFieldsMapped: every field of config.App outside config.AppSpec
// is one app maps or refuses by name. A field added to config.App
// (rather than to config.AppSpec, which both forms share) fails here
// until convert decides what it becomes in an App.
func TestFileFieldsMapped(t *testing.T) {
	var got []string
	typ := reflect.TypeFor[config.App]()
	for i := range typ.NumField() {
		f := typ.Field(i)
		if f.Anonymous && f.Type == reflect.TypeFor[config.AppSpec]() {
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		got = append(got, name)
	}
	if diff := cmp.Diff(fileFields, got); diff != "" {
		t.Errorf("config.App's own fields differ from those app maps; map or refuse the new field in app.go and list it in fileFields (-mapped +config.App):\n%s", diff)
	}
}

func TestObjectName(t *testing.T) {
	tests := map[string]struct{ name, ns, want string }{
		"prefixed":     {name: "team-a-web", ns: "team-a", want: "web"},
		"not prefixed": {name: "web", ns: "team-a", want: "web"},
		"prefix only":  {name: "team-a-", ns: "team-a", want: "team-a-"},
		"other prefix": {name: "team-b-web", ns: "team-a", want: "team-b-web"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if got := objectName(tc.name, tc.ns); got != tc.want {
				t.Errorf("objectName(%q, %q) = %q, want %q", tc.name, tc.ns, got, tc.want)
			}
		})
	}
}

// shared sets many of the fields config.App and the App share.
var shared = config.AppSpec{
	Path: "deploy", Prune: ptr(false), AllowEmpty: true, PruneBudget: ptr(10),
	Adopted: config.AdoptedDelete, Handoff: config.HandoffRelease, Recreate: true,
	Wait: true, Timeout: &metav1.Duration{Duration: 2 * time.Minute}, Manager: "team-a-web",
	Split:      []config.SplitRule{{Manager: "release", Paths: []string{".spec.replicas"}}},
	Conflicts:  config.ConflictPolicy{Default: config.ActionForce},
	Drift:      config.DriftPolicy{Mode: config.DriftCorrect},
	Ignore:     []config.IgnoreRule{{Paths: []string{".metadata.annotations"}}},
	Substitute: map[string]config.SubstituteValue{"CLUSTER": "eu"}, SubstituteStrict: ptr(false),
}

func TestConvertApp(t *testing.T) {
	tests := map[string]struct {
		app     config.App
		want    v1alpha1.AppSpec
		wantErr string
	}{
		"shared fields as one": {
			app:  config.App{Name: "team-a-web", Source: "repo", Namespace: "team-a", AppSpec: shared},
			want: v1alpha1.AppSpec{SourceRef: repoRef, AppSpec: shared},
		},
		"another namespace": {
			app:  config.App{Name: "team-a-web", Source: "repo", Namespace: "web", AppSpec: config.AppSpec{Manager: "m"}},
			want: v1alpha1.AppSpec{SourceRef: repoRef, TargetNamespace: "web", AppSpec: config.AppSpec{Manager: "m"}},
		},
		"dependsOn by App name": {
			app:  config.App{Name: "team-a-web", Source: "repo", Namespace: "team-a", AppSpec: config.AppSpec{DependsOn: []string{"team-a-db"}}},
			want: v1alpha1.AppSpec{SourceRef: repoRef, AppSpec: config.AppSpec{DependsOn: []string{"db"}}},
		},
		"substituteFrom objects": {
			app:  config.App{Name: "team-a-web", Source: "repo", Namespace: "team-a", SubstituteFrom: []config.SubstituteSource{{Kind: config.SubstituteSecret, Name: "s", Optional: true}}},
			want: v1alpha1.AppSpec{SourceRef: repoRef, SubstituteFrom: []v1alpha1.SubstituteReference{{Kind: config.SubstituteSecret, Name: "s", Optional: true}}},
		},
		"installsSyncd and substituteFrom file refused": {
			app:     config.App{Name: "team-a-web", Source: "repo", Namespace: "team-a", InstallsSyncd: true, SubstituteFrom: []config.SubstituteSource{{File: "/v.env"}}},
			wantErr: "installsSyncd: no App may install syncd itself (docs/apps.md); only the config file's app can; substituteFrom[0].file /v.env: an App reads substitution values from ConfigMaps and Secrets of its namespace only",
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			c := &Conversion{Comments: map[string][]string{}}
			got, err := c.app(tc.app, "team-a", v1alpha1.KindGitSource)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want it to contain %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got.Spec); diff != "" {
				t.Errorf("App spec (-want +got):\n%s", diff)
			}
		})
	}
}

var repoRef = v1alpha1.SourceReference{Kind: v1alpha1.KindGitSource, Name: "repo"}

func ptr[T any](v T) *T { return &v }
