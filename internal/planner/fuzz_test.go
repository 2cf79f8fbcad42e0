package planner

import (
	"bytes"
	"context"
	"testing"

	"syncd.dev/syncd/internal/config"
)

// FuzzDecode feeds arbitrary bytes to the manifest decoder and plans what
// decodes. Neither may panic; a document that decodes has what every
// manifest needs.
func FuzzDecode(f *testing.F) {
	for _, seed := range []string{
		configMap,
		deployment,
		"---\n---\n# only a comment\n",
		"apiVersion: v1\nkind: List\nitems: []\n",
		`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x"},"data":{"a":1}}`,
		"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x, managedFields: []}\n",
		"a: &a [*a]\n",
		"- 1\n- 2\n",
		"apiVersion: v1\nkind: Namespace\nmetadata: {name: ns}\nstatus: {phase: Active}\n",
	} {
		f.Add([]byte(seed))
	}
	p, err := newFromConfig(config.App{
		Name: "fuzz", Namespace: "default",
		AppSpec: config.AppSpec{
			Split: []config.SplitRule{
				{Manager: "images", Paths: []string{".spec.template.spec.containers[*].image", ".data.*"}},
			},
		},
	}, Options{})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		ms, errs := decodeStream(bytes.NewReader(data), "fuzz.yaml")
		if len(errs) > 0 {
			if ms != nil && len(ms) == 0 {
				t.Fatalf("empty non-nil manifests with errors")
			}
			return
		}
		for _, m := range ms {
			if m.Object.GetKind() == "" || m.Object.GetAPIVersion() == "" || m.Object.GetName() == "" {
				t.Fatalf("decoded a document without identity: %v", m.Object.Object)
			}
		}
		plan, err := p.Plan(context.Background(), ms)
		if err != nil {
			return
		}
		for _, o := range plan.Objects {
			if len(o.Slices) == 0 {
				t.Fatalf("%s has no slice", o.Ref)
			}
		}
	})
}
