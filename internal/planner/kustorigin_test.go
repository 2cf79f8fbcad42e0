package planner

import (
	"context"
	"errors"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/yaml"
)

// originRepo is an overlay two levels above its base, as in the hand
// trial: overlays/prod builds base, which lists a.yaml and b.yaml (two
// objects) and generates a ConfigMap.
func originRepo(overlay, b string) map[string]string {
	return map[string]string{
		".git/HEAD":                        "ref: refs/heads/main\n",
		"overlays/prod/kustomization.yaml": overlay,
		"base/kustomization.yaml":          "resources: [a.yaml, b.yaml]\nconfigMapGenerator:\n- {name: gen, literals: [k=v]}\n",
		"base/a.yaml":                      "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\ndata: {k: v}\n",
		"base/b.yaml":                      b,
	}
}

const goodB = "# header\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: b}\ndata: {color: blue}\n---\n" +
	"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\ndata: {}\n"

// origins lists each manifest as "File#Index Kind name" and whether it
// carries kustomize's origin annotation.
func origins(ms []Manifest) []string {
	var out []string
	for _, m := range ms {
		s := m.Origin() + " " + m.Object.GetKind() + " " + m.Object.GetName()
		if _, ok := m.Object.GetAnnotations()["config.kubernetes.io/origin"]; ok {
			s += " annotated"
		}
		out = append(out, s)
	}
	return out
}

// TestKustomizeOrigins: the objects of a build are named after the file
// they came from (a generated one after the kustomization that generates
// it), without a document number, whatever the kustomization asks for;
// kustomize's origin annotation stays off the objects unless the
// kustomization asks for it with buildMetadata.
func TestKustomizeOrigins(t *testing.T) {
	tests := map[string]struct {
		overlay string
		want    []string
	}{
		"no buildMetadata": {
			overlay: "resources: [../../base]\nnamespace: prod\n",
			want:    []string{"base/a.yaml ConfigMap a", "base/b.yaml ConfigMap b", "base/b.yaml ConfigMap c", "base/kustomization.yaml ConfigMap gen-bdg947hgcc"},
		},
		"buildMetadata without originAnnotations": {
			overlay: "resources: [../../base]\nbuildMetadata: [managedByLabel]\n",
			want:    []string{"base/a.yaml ConfigMap a", "base/b.yaml ConfigMap b", "base/b.yaml ConfigMap c", "base/kustomization.yaml ConfigMap gen-bdg947hgcc"},
		},
		"originAnnotations asked for": {
			overlay: "resources: [../../base]\nbuildMetadata: [originAnnotations]\n",
			want: []string{"base/a.yaml ConfigMap a annotated", "base/b.yaml ConfigMap b annotated", "base/b.yaml ConfigMap c annotated",
				"base/kustomization.yaml ConfigMap gen-bdg947hgcc annotated"},
		},
		"a JSON kustomization": {
			overlay: `{"resources": ["../../base"]}`,
			want:    []string{"base/a.yaml ConfigMap a", "base/b.yaml ConfigMap b", "base/b.yaml ConfigMap c", "base/kustomization.yaml ConfigMap gen-bdg947hgcc"},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			root := writeTree(t, originRepo(tc.overlay, goodB))
			ms, err := Render(context.Background(), Tree{Root: root, Dir: filepath.Join(root, "overlays", "prod")})
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, origins(ms)); diff != "" {
				t.Errorf("origins (-want +got):\n%s", diff)
			}
		})
	}
}

// TestKustomizeOutputErrorNamesSource: an object kustomize reads but that
// does not decode (a key given twice, which kyaml keeps) is reported
// against the file it is in and by its kind and name, not against the
// top kustomization and its position in the output.
func TestKustomizeOutputErrorNamesSource(t *testing.T) {
	b := "# header\n# header\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: b\ndata:\n  color: blue\n  color: red\n"
	root := writeTree(t, originRepo("resources: [../../base]\n", b))
	_, err := Render(context.Background(), Tree{Root: root, Dir: filepath.Join(root, "overlays", "prod")})
	var list ManifestErrors
	if !errors.As(err, &list) || len(list) != 1 {
		t.Fatalf("err = %v, want one ManifestError", err)
	}
	want := "base/b.yaml (v1 ConfigMap b): kustomize output: yaml: unmarshal errors:\n  line 9: mapping key \"color\" already defined at line 8"
	if got := list[0].Error(); got != want {
		t.Errorf("error:\n%s\nwant:\n%s", got, want)
	}
}

// TestTrackOrigins: originAnnotations is added to the kustomization's
// buildMetadata, keeping what it holds; a kustomization that asks for it
// already keeps the annotations; one that cannot be edited is built as
// it is.
func TestTrackOrigins(t *testing.T) {
	tests := map[string]struct {
		in       string
		wantMeta []string // buildMetadata of the content; nil: content nil
		wantKeep bool
	}{
		"none":                {in: "resources: [a.yaml]\n", wantMeta: []string{"originAnnotations"}},
		"others kept":         {in: "buildMetadata: [transformerAnnotations]\n", wantMeta: []string{"transformerAnnotations", "originAnnotations"}},
		"block list":          {in: "buildMetadata:\n- managedByLabel\nresources: []\n", wantMeta: []string{"managedByLabel", "originAnnotations"}},
		"JSON":                {in: `{"resources": ["a.yaml"]}`, wantMeta: []string{"originAnnotations"}},
		"asked for":           {in: "buildMetadata: [originAnnotations]\n", wantKeep: true},
		"not a list":          {in: "buildMetadata: originAnnotations\n"},
		"not a mapping":       {in: "- a\n"},
		"not YAML":            {in: "resources: [a\n"},
		"empty kustomization": {in: "", wantMeta: nil},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got := trackOrigins([]byte(tc.in))
			if got.keep != tc.wantKeep {
				t.Errorf("keep = %v, want %v", got.keep, tc.wantKeep)
			}
			var meta []string
			if got.content != nil {
				var k struct{ BuildMetadata []string }
				if err := yaml.Unmarshal(got.content, &k); err != nil {
					t.Fatalf("content does not parse: %v\n%s", err, got.content)
				}
				meta = k.BuildMetadata
			}
			if diff := cmp.Diff(tc.wantMeta, meta); diff != "" {
				t.Errorf("buildMetadata (-want +got):\n%s", diff)
			}
		})
	}
}
