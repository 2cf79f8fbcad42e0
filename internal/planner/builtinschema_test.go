package planner

import (
	"encoding/json"
	"os"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/applyconfigurations"
	"sigs.k8s.io/structured-merge-diff/v6/schema"
)

// TestBuiltinSchemaIsClientGos: the built-in schema syncd embeds decodes
// to client-go's own, Go types of the defaults included; -update writes
// it from client-go's (after a client-go upgrade).
func TestBuiltinSchemaIsClientGos(t *testing.T) {
	want := clientGoSchema(t)
	if *update {
		js, err := json.Marshal(wireOfSchema(want))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile("builtinschema.json", append(js, '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
		builtinSchemaJSON = js
	}
	got, err := builtinParser()
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want.Types, got.Schema.Types, cmpopts.IgnoreUnexported(schema.Map{})); diff != "" {
		t.Errorf("embedded built-in schema (-client-go +embedded); run this test with -update:\n%s", diff)
	}
}

// clientGoSchema is the schema client-go's type converter of the
// built-in kinds holds.
func clientGoSchema(t *testing.T) *schema.Schema {
	t.Helper()
	cm := &corev1.ConfigMap{}
	cm.APIVersion, cm.Kind = "v1", "ConfigMap"
	tv, err := applyconfigurations.NewTypeConverter(builtinScheme).ObjectToTyped(cm)
	if err != nil {
		t.Fatal(err)
	}
	return tv.Schema()
}
