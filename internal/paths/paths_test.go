package paths

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
	"sigs.k8s.io/structured-merge-diff/v6/value"
)

func path(parts ...any) fieldpath.Path { return fieldpath.MakePathOrDie(parts...) }

func key(name string, v any) fieldpath.PathElement {
	return fieldpath.KeyElementByFields(name, v)
}

var containerImage = path("spec", "template", "spec", "containers", key("name", "app"), "image")

func TestMatches(t *testing.T) {
	tests := map[string]struct {
		pattern string
		path    fieldpath.Path
		want    bool
	}{
		"exact field":                     {".spec.replicas", path("spec", "replicas"), true},
		"below":                           {".spec", path("spec", "replicas"), true},
		"above is not matched":            {".spec.replicas", path("spec"), false},
		"other field":                     {".spec.replicas", path("spec", "paused"), false},
		"key":                             {`.spec.template.spec.containers[name="app"].image`, containerImage, true},
		"other key value":                 {`.spec.template.spec.containers[name="web"].image`, containerImage, false},
		"any item":                        {".spec.template.spec.containers[*].image", containerImage, true},
		"any field":                       {".spec.template.*.containers[*].image", containerImage, true},
		"any item other field":            {".spec.template.spec.containers[*].name", containerImage, false},
		"any item does not match a field": {".spec[*]", path("spec", "replicas"), false},
		"set value":                       {`.metadata.finalizers[="a/b"]`, path("metadata", "finalizers", fieldpath.ValueElement(value.NewValueInterface("a/b"))), true},
		"set value differs":               {`.metadata.finalizers[="a/c"]`, path("metadata", "finalizers", fieldpath.ValueElement(value.NewValueInterface("a/b"))), false},
		"index":                           {".spec.args[1]", path("spec", "args", 1), true},
		"index differs":                   {".spec.args[0]", path("spec", "args", 1), false},
		"multiple keys any order":         {`.spec.ports[protocol="TCP",containerPort=80]`, path("spec", "ports", fieldpath.KeyElementByFields("containerPort", int64(80), "protocol", "TCP")), true},
		"multiple keys subset":            {`.spec.ports[containerPort=80]`, path("spec", "ports", fieldpath.KeyElementByFields("containerPort", int64(80), "protocol", "TCP")), false},
		"number is not string":            {`.spec.ports[containerPort="80"]`, path("spec", "ports", key("containerPort", int64(80))), false},
		"quoted field":                    {`.metadata.labels."app.kubernetes.io/name"`, path("metadata", "labels", "app.kubernetes.io/name"), true},
		"unquoted dots differ":            {`.metadata.labels.app`, path("metadata", "labels", "app.kubernetes.io/name"), false},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			p, err := Parse(tc.pattern)
			if err != nil {
				t.Fatal(err)
			}
			if got := p.Matches(tc.path); got != tc.want {
				t.Errorf("Parse(%q).Matches(%s) = %v, want %v", tc.pattern, tc.path, got, tc.want)
			}
		})
	}
}

func TestBelow(t *testing.T) {
	p := MustParse(".spec.template.spec.containers[*].args[0]")
	tests := map[string]struct {
		path fieldpath.Path
		want bool
	}{
		"ancestor":      {path("spec", "template", "spec", "containers", key("name", "app"), "args"), true},
		"root field":    {path("spec"), true},
		"same length":   {path("spec", "template", "spec", "containers", key("name", "app"), "args", 0), false},
		"unrelated":     {path("metadata"), false},
		"other sibling": {path("spec", "template", "spec", "containers", key("name", "app"), "env"), false},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if got := p.Below(tc.path); got != tc.want {
				t.Errorf("Below(%s) = %v, want %v", tc.path, got, tc.want)
			}
		})
	}
}

// TestStringRoundTrip checks that String prints the API server's notation,
// the one fieldpath.Path.String uses, for concrete paths.
func TestStringRoundTrip(t *testing.T) {
	tests := map[string]string{
		"field":    ".spec.replicas",
		"key":      `.spec.template.spec.containers[name="app"].image`,
		"wildcard": ".spec.*.containers[*].image",
		"set":      `.metadata.finalizers[="a/b"]`,
		"index":    ".spec.args[3]",
		"keys":     `.spec.ports[containerPort=80,protocol="TCP"]`,
		"quoted":   `.metadata.labels."app.kubernetes.io/name"`,
		"bool":     `.x[enabled=true]`,
	}
	for name, in := range tests {
		t.Run(name, func(t *testing.T) {
			p, err := Parse(in)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(in, p.String()); diff != "" {
				t.Errorf("String() (-want +got):\n%s", diff)
			}
			again, err := Parse(p.String())
			if err != nil {
				t.Fatal(err)
			}
			if again.String() != p.String() {
				t.Errorf("reparse changed %q to %q", p.String(), again.String())
			}
		})
	}
	// A concrete path printed by structured-merge-diff parses and matches itself.
	p, err := Parse(containerImage.String())
	if err != nil {
		t.Fatal(err)
	}
	if !p.Matches(containerImage) {
		t.Errorf("pattern %s does not match the path it was printed from", p)
	}
}

func TestParseErrors(t *testing.T) {
	tests := map[string]struct {
		in  string
		pos int
	}{
		"empty":              {"", 0},
		"no leading dot":     {"spec.replicas", 0},
		"trailing dot":       {".spec.", 5},
		"double dot":         {".spec..x", 5},
		"unterminated item":  {".spec.containers[name=\"a\"", 16},
		"unquoted string":    {".spec.containers[name=app]", 22},
		"partial wildcard":   {".spec.contain*", 6},
		"bad index":          {".spec.args[1x]", 11},
		"key without value":  {".spec.c[name=]", 13},
		"bad char in name":   {".spec.a]b", 7},
		"duplicate key":      {`.spec.c[a=1,a=2]`, 12},
		"unterminated quote": {`.metadata."abc`, 10},
		"junk after item":    {".spec.c[*]x", 10},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			_, err := Parse(tc.in)
			var se *SyntaxError
			if !errors.As(err, &se) {
				t.Fatalf("Parse(%q) error = %v, want a *SyntaxError", tc.in, err)
			}
			if se.Pos != tc.pos {
				t.Errorf("Parse(%q) position = %d, want %d (%v)", tc.in, se.Pos, tc.pos, err)
			}
		})
	}
}

func FuzzParse(f *testing.F) {
	for _, s := range []string{".spec.replicas", `.a[name="x",b=1].c`, ".a[*].*", `.a[="v"]`, `.a."b.c"`, ".a[0]"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		p, err := Parse(s)
		if err != nil {
			return
		}
		again, err := Parse(p.String())
		if err != nil {
			t.Fatalf("Parse(%q).String() = %q does not parse: %v", s, p.String(), err)
		}
		if again.String() != p.String() {
			t.Fatalf("round trip of %q: %q then %q", s, p.String(), again.String())
		}
	})
}
