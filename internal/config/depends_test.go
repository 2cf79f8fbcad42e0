package config

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// deps builds apps from "name: dep dep" pairs, in order.
func deps(specs ...[]string) []App {
	apps := make([]App, len(specs))
	for i, s := range specs {
		apps[i] = App{Name: s[0], AppSpec: AppSpec{DependsOn: s[1:]}}
	}
	return apps
}

func names(apps []App) []string {
	out := make([]string, len(apps))
	for i, a := range apps {
		out[i] = a.Name
	}
	return out
}

func TestDependencyOrder(t *testing.T) {
	tests := map[string]struct {
		apps []App
		want []string
	}{
		"no dependsOn keeps the config order": {
			apps: deps([]string{"c"}, []string{"a"}, []string{"b"}),
			want: []string{"c", "a", "b"},
		},
		"a chain written backwards": {
			apps: deps([]string{"a", "b"}, []string{"b", "c"}, []string{"c"}),
			want: []string{"c", "b", "a"},
		},
		"independent apps keep their place": {
			apps: deps([]string{"web", "db"}, []string{"docs"}, []string{"db"}, []string{"cache"}),
			want: []string{"docs", "db", "web", "cache"},
		},
		"a diamond": {
			apps: deps([]string{"app", "api", "ui"}, []string{"ui", "base"}, []string{"api", "base"}, []string{"base"}),
			want: []string{"base", "ui", "api", "app"},
		},
		"unknown names and self are ignored": {
			apps: deps([]string{"a", "a", "nowhere"}, []string{"b"}),
			want: []string{"a", "b"},
		},
		"a cycle comes last in config order": {
			apps: deps([]string{"x", "y"}, []string{"free"}, []string{"y", "x"}),
			want: []string{"free", "x", "y"},
		},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, names(DependencyOrder(tt.apps))); diff != "" {
				t.Errorf("DependencyOrder (-want +got):\n%s", diff)
			}
		})
	}
}
