package redact

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestText(t *testing.T) {
	tests := map[string]struct{ in, want string }{
		"field error with a quoted value": {
			`Secret "s" is invalid: type: Invalid value: "x-s3cr3t": field is immutable`,
			`Secret "s" is invalid: type: Invalid value: <redacted>: field is immutable`},
		"field error with a JSON value and a list of causes": {
			`[spec.template: Invalid value: {"Env":[{"Value":"a: b, c"}]}: field is immutable, data[k]: Unsupported value: 5: supported values: "a"]`,
			`[spec.template: Invalid value: <redacted>: field is immutable, data[k]: Unsupported value: <redacted>: supported values: "a"]`},
		"smd type error with a value dump": {
			`.stringData.token: expected string, got &value.valueUnstructured{Value:map[string]interface {}{"nested":"v"}}`,
			`.stringData.token: expected string, got <redacted>`},
		"smd type error with a type name": {
			`.spec.replicas: expected numeric (int or float), got string`,
			`.spec.replicas: expected numeric (int or float), got string`},
		"kustomize map dump": {
			`missing metadata.name in object {map[apiVersion:v1 data:map[password:c2VjcmV0] kind:Secret]}`,
			`missing metadata.name in object {<redacted>}`},
		"kyaml node dump": {
			"wrong node kind: expected MappingNode but got ScalarNode: node contents:\ns3cr3t\n",
			"wrong node kind: expected MappingNode but got ScalarNode: node contents: <redacted>"},
		"no value": {
			`Apply failed with 1 conflict: conflict with "kubectl" using v1: .data.password`,
			`Apply failed with 1 conflict: conflict with "kubectl" using v1: .data.password`},
		"required field": {
			`spec.containers[0].image: Required value`,
			`spec.containers[0].image: Required value`},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, Text(tc.in)); diff != "" {
				t.Errorf("Text (-want +got):\n%s", diff)
			}
		})
	}
}
