package planner

import (
	"bytes"
	"encoding/json"
	"unicode/utf8"

	utiljson "k8s.io/apimachinery/pkg/util/json"
	sigjson "sigs.k8s.io/json"
)

// decodeJSONObject decodes doc when it is one JSON object, to exactly what
// the YAML route (yaml.YAMLToJSONStrict, then utiljson) decodes it to: a
// JSON document is YAML, and the YAML route reads one in flow style, all
// on one line as JSON tools write it, at about a quarter of the speed of
// a JSON decoder (docs/performance.md). ok is false for anything else, and
// for a JSON object with a key given twice (the YAML route refuses it),
// with bytes that are not UTF-8 (a JSON decoder would replace them; the
// YAML route refuses them) or that does not decode: the caller then takes
// the YAML route, whose errors say where the document is wrong, as they
// always did.
func decodeJSONObject(doc []byte) (content map[string]any, ok bool) {
	doc = bytes.TrimSpace(doc)
	if len(doc) == 0 || doc[0] != '{' || !utf8.Valid(doc) {
		return nil, false
	}
	strict, err := sigjson.UnmarshalStrict(doc, &content, sigjson.DisallowDuplicateFields)
	if err != nil || len(strict) > 0 || content == nil {
		return nil, false
	}
	return normalizeFloats(content).(map[string]any), true
}

// normalizeFloats replaces every float in v (a decoded JSON value) with
// what the YAML route makes of it (yamlRouteNumber), in place where it
// can, and returns v.
func normalizeFloats(v any) any {
	switch t := v.(type) {
	case map[string]any:
		for k, e := range t {
			t[k] = normalizeFloats(e)
		}
	case []any:
		for i, e := range t {
			t[i] = normalizeFloats(e)
		}
	case float64:
		return yamlRouteNumber(t)
	}
	return v
}

// yamlRouteNumber is what the YAML route makes of a number f that is not
// an integer literal ("1.0", "1e3", "2.5"): sigs.k8s.io/yaml writes the
// float it read with encoding/json, and utiljson reads that back, so an
// integral f within int64 becomes an int64 ("1.0" reads as 1, as the
// API machinery reads it) and any other f stays a float. It runs the same
// two steps on f.
func yamlRouteNumber(f float64) any {
	b, err := json.Marshal(f)
	if err != nil {
		return f // NaN and infinities: JSON cannot spell them
	}
	var v any
	if err := utiljson.Unmarshal(b, &v); err != nil {
		return f
	}
	return v
}
