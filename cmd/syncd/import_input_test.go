package main

import "testing"

// The error of an import that found nothing names the inputs as a
// person writes them: standard input for "-", paths joined by commas.
func TestImportInputNamesTheInputs(t *testing.T) {
	for name, tc := range map[string]struct {
		flags importFlags
		paths []string
		want  string
	}{
		"standard input": {paths: []string{"-"}, want: "standard input"},
		"paths":          {paths: []string{"clusters/prod", "apps"}, want: "clusters/prod, apps"},
		"paths and -":    {paths: []string{"apps", "-"}, want: "apps, standard input"},
		"the cluster":    {flags: importFlags{fromCluster: true}, want: "the cluster"},
	} {
		t.Run(name, func(t *testing.T) {
			if got := importInput(&tc.flags, tc.paths); got != tc.want {
				t.Errorf("importInput(%q) = %q, want %q", tc.paths, got, tc.want)
			}
		})
	}
}
