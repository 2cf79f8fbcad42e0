package planner

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
)

// jsonDocuments are JSON objects in the shapes JSON tools write (one line,
// or indented), with every kind of number and string escape the YAML
// route reads its own way.
var jsonDocuments = map[string]string{
	"one line":  `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c","labels":{"app":"web"}},"data":{"a":"1","b":"x y"}}`,
	"indented":  "{\n  \"apiVersion\": \"apps/v1\",\n  \"kind\": \"Deployment\",\n  \"spec\": {\n    \"replicas\": 3,\n    \"template\": {\"spec\": {\"containers\": [{\"name\": \"web\", \"image\": \"nginx:1.27\", \"ports\": [{\"containerPort\": 80}]}]}}\n  }\n}\n",
	"integers":  `{"kind":"X","a":0,"b":-0,"c":7,"d":-12,"e":9223372036854775807,"f":-9223372036854775808,"g":9223372036854775808,"h":18446744073709551615,"i":-9223372036854775809,"j":123456789012345678901234567890}`,
	"floats":    `{"kind":"X","a":1.0,"b":-2.0,"c":1e3,"d":1E3,"e":2.5,"f":0.1,"g":1e21,"h":1e20,"i":1e-7,"j":-0.0,"k":1.5e300,"l":100000.0,"m":1000000.0,"n":9.2233720368547758e18,"o":4.9e-324}`,
	"nested":    `{"kind":"X","a":[1,2.0,[3.5,{"b":4.0}],{"c":[]}],"d":{},"e":[],"f":null,"g":true,"h":false}`,
	"strings":   `{"kind":"X","a":"\"quoted\"","b":"back\\slash","d":"tab\tnew\nline","e":"\u00e9\u4e2d","f":"é中","g":"yes","h":"1.0","i":"~","j":"null","k":"","l":"<<","m":"# not a comment","n":": colon","o":"\b\f\r"}`,
	"odd keys":  `{"kind":"X","<<":"m","":"empty","a b":"c","1":"one","true":"t","null":"n","~":"tilde"}`,
	"key order": `{"z":1,"kind":"X","a":{"y":2,"b":3}}`,
	"spaced":    " \n{ \"kind\" : \"X\" , \"a\" : [ 1 , 2 ] }\n\n",
}

// TestJSONObjectDecodesAsYAML pins decodeJSONObject to the YAML route: a
// JSON document decodes to exactly the map (types included: int64 where
// the YAML route reads an integer) that the YAML route decodes it to.
func TestJSONObjectDecodesAsYAML(t *testing.T) {
	for name, doc := range jsonDocuments {
		t.Run(name, func(t *testing.T) {
			got, ok := decodeJSONObject([]byte(doc))
			if !ok {
				t.Fatalf("not decoded as JSON: %s", doc)
			}
			want, err := decodeYAMLDocument([]byte(doc))
			if err != nil {
				t.Fatalf("YAML route: %v", err)
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("JSON route:\n%#v\nYAML route:\n%#v", got, want)
			}
		})
	}
}

// TestJSONObjectReadsWhatYAMLRefused: valid JSON that goyaml refuses (an
// escaped slash, a character outside the BMP as a surrogate pair, a tab
// between tokens) decodes, as kubectl, which reads JSON as JSON, reads it.
func TestJSONObjectReadsWhatYAMLRefused(t *testing.T) {
	for name, tc := range map[string]struct{ doc, want string }{
		"escaped slash":  {doc: `{"kind":"X","a":"a\/b"}`, want: "a/b"},
		"surrogate pair": {doc: `{"kind":"X","a":"\ud83d\ude00"}`, want: "\U0001F600"},
		"tab":            {doc: "\t{\"kind\":\t\"X\",\"a\":\"t\"}", want: "t"},
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := decodeYAMLDocument([]byte(tc.doc)); err == nil {
				t.Fatalf("the YAML route reads %q now: move it to jsonDocuments", tc.doc)
			}
			obj, err := parseDocument([]byte(tc.doc))
			if err != nil {
				t.Fatal(err)
			}
			if got := obj.Object["a"]; got != tc.want {
				t.Errorf("a = %q, want %q", got, tc.want)
			}
		})
	}
}

// TestJSONObjectLeavesTheRestToYAML: a document that is not one JSON
// object of UTF-8 without a key given twice is left to the YAML route, so
// that decodeContent says of it what it always said.
func TestJSONObjectLeavesTheRestToYAML(t *testing.T) {
	for name, doc := range map[string]string{
		"key given twice":     `{"kind":"ConfigMap","data":{"a":"1","a":"2"}}`,
		"top-level key twice": `{"kind":"ConfigMap","kind":"Secret"}`,
		"flow YAML":           `{kind: ConfigMap, apiVersion: v1, metadata: {name: c}}`,
		"trailing comma":      `{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"c"},}`,
		"not UTF-8":           "{\"kind\":\"ConfigMap\",\"data\":{\"a\":\"\xff\"}}",
		"two objects":         `{"kind":"ConfigMap"} {"kind":"Secret"}`,
		"block YAML":          "kind: ConfigMap\napiVersion: v1\nmetadata:\n  name: c\n",
		"comment before":      "# generated\n{\"kind\":\"ConfigMap\",\"apiVersion\":\"v1\",\"metadata\":{\"name\":\"c\"}}",
		"array":               `[{"kind":"ConfigMap"}]`,
		"unterminated":        `{"kind":"ConfigMap"`,
	} {
		t.Run(name, func(t *testing.T) {
			if _, ok := decodeJSONObject([]byte(doc)); ok {
				t.Fatalf("decoded as JSON: %q", doc)
			}
			got, err := decodeContent([]byte(doc))
			want, yamlErr := decodeYAMLDocument([]byte(doc))
			if fmt.Sprint(err) != fmt.Sprint(yamlErr) || !reflect.DeepEqual(got, want) {
				t.Fatalf("decodeContent = %v, %v; the YAML route %v, %v", got, err, want, yamlErr)
			}
		})
	}
}

// FuzzJSONObject checks decodeJSONObject against the YAML route on any
// input: where both decode, to the same map; where only the JSON route
// decodes, never a document the YAML route refuses for a key given twice.
func FuzzJSONObject(f *testing.F) {
	for _, doc := range jsonDocuments {
		f.Add([]byte(doc))
	}
	f.Add([]byte(`{"kind":"ConfigMap","data":{"a":"1","a":"2"}}`))
	f.Add([]byte(`{"a":"\ud83d\ude00"}`))
	f.Fuzz(func(t *testing.T, doc []byte) {
		got, ok := decodeJSONObject(doc)
		if !ok {
			return
		}
		want, err := decodeYAMLDocument(doc)
		if err != nil {
			if strings.Contains(err.Error(), "already set in map") {
				t.Fatalf("JSON route decoded what the YAML route refuses: %v\n%q", err, doc)
			}
			return
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("JSON route:\n%#v\nYAML route:\n%#v\ninput %q", got, want, doc)
		}
	})
}
