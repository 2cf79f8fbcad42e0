package planner

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/yaml"

	"syncd.dev/syncd/internal/config"
)

var update = flag.Bool("update", false, "rewrite golden files in testdata/")

// loadApp reads testdata/plan/<name>/app.yaml.
func loadApp(t testing.TB, dir string) config.App {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, "app.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var app config.App
	if err := yaml.UnmarshalStrict(data, &app); err != nil {
		t.Fatalf("%s/app.yaml: %v", dir, err)
	}
	return app
}

// planDir renders and plans testdata/plan/<name>.
func planDir(t testing.TB, dir string, opts Options) (*Plan, error) {
	t.Helper()
	app := loadApp(t, dir)
	ms, err := Render(context.Background(), Tree{Dir: filepath.Join(dir, "manifests")})
	if err != nil {
		return nil, err
	}
	p, err := newFromConfig(app, opts)
	if err != nil {
		return nil, err
	}
	return p.Plan(context.Background(), ms)
}

// dump prints a plan the way `syncd render` does, with each slice's field
// set and hash, for golden comparison.
func dump(t testing.TB, plan *Plan) []byte {
	t.Helper()
	var b bytes.Buffer
	for _, o := range plan.Objects {
		fmt.Fprintf(&b, "# object: %s  stage: %s  origin: %s\n", o.Ref, o.Stage, o.Origin)
		for _, s := range o.Slices {
			y, err := yaml.Marshal(s.Object.Object)
			if err != nil {
				t.Fatal(err)
			}
			fmt.Fprintf(&b, "---\n# manager: %s  object: %s\n# hash: %s\n", s.Manager, o.Ref, s.Hash)
			for p := range s.Fields.All() {
				fmt.Fprintf(&b, "# field: %s\n", p)
			}
			b.Write(y)
		}
	}
	for _, w := range plan.Warnings {
		fmt.Fprintf(&b, "# warning: %s\n", w)
	}
	return b.Bytes()
}

func TestGolden(t *testing.T) {
	for _, name := range []string{"plain", "kustomize", "split", "crds"} {
		t.Run(name, func(t *testing.T) {
			dir := filepath.Join("testdata", "plan", name)
			plan, err := planDir(t, dir, Options{Revision: "test"})
			if err != nil {
				t.Fatal(err)
			}
			got := dump(t, plan)
			golden := filepath.Join("testdata", "plan", name+".golden")
			if *update {
				if err := os.WriteFile(golden, got, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run go test -update to create it)", err)
			}
			if diff := cmp.Diff(string(want), string(got)); diff != "" {
				t.Errorf("plan of %s (-want +got):\n%s", dir, diff)
			}
			// The output is stable: a second run gives the same bytes.
			again, err := planDir(t, dir, Options{Revision: "test"})
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(string(got), string(dump(t, again))); diff != "" {
				t.Errorf("second plan differs (-first +second):\n%s", diff)
			}
		})
	}
}
