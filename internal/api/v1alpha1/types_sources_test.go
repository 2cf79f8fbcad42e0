package v1alpha1

import (
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"syncd.dev/syncd/internal/config"
)

// TestSpecFieldsMatchConfig: a HelmSource's and an OCISource's spec have
// every field of the file's sources[].helm and sources[].oci, the files
// of credentials (auth, caFile) standing as one secretRef; a field added
// to the file's type fails here until the object has it too.
func TestSpecFieldsMatchConfig(t *testing.T) {
	tests := map[string]struct {
		file, object reflect.Type
		// asSecret are the file's fields the Secret of secretRef holds.
		asSecret []string
	}{
		"HelmSource": {file: reflect.TypeFor[config.HelmSource](), object: reflect.TypeFor[HelmSourceSpec](), asSecret: []string{"auth"}},
		"OCISource":  {file: reflect.TypeFor[config.OCISource](), object: reflect.TypeFor[OCISourceSpec](), asSecret: []string{"auth", "caFile"}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			want := slices.DeleteFunc(jsonFields(tc.file), func(f string) bool { return slices.Contains(tc.asSecret, f) })
			want = append(want, "secretRef")
			slices.Sort(want)
			got := jsonFields(tc.object)
			slices.Sort(got)
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("%s spec and the file's fields (-file +object):\n%s", name, diff)
			}
		})
	}
}

// jsonFields are the JSON names of a struct's fields, an inline embedded
// struct's included.
func jsonFields(t reflect.Type) []string {
	var out []string
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		switch {
		case name == "" && f.Anonymous:
			out = append(out, jsonFields(f.Type)...)
		case name != "-" && f.IsExported():
			out = append(out, name)
		}
	}
	return out
}
