package planner

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"math"

	"sigs.k8s.io/structured-merge-diff/v6/schema"
	"sigs.k8s.io/structured-merge-diff/v6/typed"
)

// builtinSchemaJSON is client-go's schema of the built-in kinds (the one
// applyconfigurations.NewTypeConverter parses from YAML) written as
// JSON: it decodes in about a twentieth of the time (10 ms instead of
// 0.1-0.2 s of CPU, paid by every syncd process that plans). It is
// generated from client-go's own by TestBuiltinSchemaIsClientGos
// (go test ./internal/planner -run TestBuiltinSchemaIsClientGos -update),
// which fails while it differs from the client-go in go.mod.
//
//go:embed builtinschema.json
var builtinSchemaJSON []byte

// builtinParser decodes builtinSchemaJSON.
func builtinParser() (*typed.Parser, error) {
	var w wireSchema
	if err := json.Unmarshal(builtinSchemaJSON, &w); err != nil {
		return nil, fmt.Errorf("built-in schema: %w", err)
	}
	p := &typed.Parser{}
	p.Schema.Types = make([]schema.TypeDef, len(w.Types))
	for i, t := range w.Types {
		p.Schema.Types[i] = schema.TypeDef{Name: t.Name, Atom: t.Atom.schema()}
	}
	return p, nil
}

// The wire types are schema's own with JSON names: encoding/json cannot
// read schema's types as their YAML tags lay them out (an inlined Atom,
// List and Map both holding ElementType).
type (
	wireSchema struct {
		Types []wireTypeDef `json:"types"`
	}
	wireTypeDef struct {
		Name string   `json:"name"`
		Atom wireAtom `json:"atom"`
	}
	wireAtom struct {
		Scalar *schema.Scalar `json:"scalar,omitempty"`
		List   *wireList      `json:"list,omitempty"`
		Map    *wireMap       `json:"map,omitempty"`
	}
	wireTypeRef struct {
		NamedType           *string                     `json:"namedType,omitempty"`
		Inlined             *wireAtom                   `json:"inlined,omitempty"`
		ElementRelationship *schema.ElementRelationship `json:"elementRelationship,omitempty"`
		Nullable            bool                        `json:"nullable,omitempty"`
	}
	wireMap struct {
		Fields              []wireField                `json:"fields,omitempty"`
		Unions              []schema.Union             `json:"unions,omitempty"`
		ElementType         wireTypeRef                `json:"elementType"`
		ElementRelationship schema.ElementRelationship `json:"elementRelationship,omitempty"`
	}
	wireField struct {
		Name    string      `json:"name"`
		Type    wireTypeRef `json:"type"`
		Default any         `json:"default,omitempty"`
		// HasDefault tells a default of "", 0 or false from none.
		HasDefault bool `json:"hasDefault,omitempty"`
	}
	wireList struct {
		ElementType         wireTypeRef                `json:"elementType"`
		ElementRelationship schema.ElementRelationship `json:"elementRelationship,omitempty"`
		Keys                []string                   `json:"keys,omitempty"`
	}
)

// wireOfSchema is s on the wire.
func wireOfSchema(s *schema.Schema) wireSchema {
	w := wireSchema{Types: make([]wireTypeDef, len(s.Types))}
	for i, t := range s.Types {
		w.Types[i] = wireTypeDef{Name: t.Name, Atom: wireOfAtom(t.Atom)}
	}
	return w
}

func wireOfAtom(a schema.Atom) wireAtom {
	w := wireAtom{Scalar: a.Scalar}
	if a.List != nil {
		w.List = &wireList{ElementType: wireOfRef(a.List.ElementType), ElementRelationship: a.List.ElementRelationship, Keys: a.List.Keys}
	}
	if a.Map != nil {
		w.Map = &wireMap{Unions: a.Map.Unions, ElementType: wireOfRef(a.Map.ElementType), ElementRelationship: a.Map.ElementRelationship}
		for _, f := range a.Map.Fields {
			w.Map.Fields = append(w.Map.Fields, wireField{Name: f.Name, Type: wireOfRef(f.Type), Default: jsonValue(f.Default), HasDefault: f.Default != nil})
		}
	}
	return w
}

func wireOfRef(r schema.TypeRef) wireTypeRef {
	w := wireTypeRef{NamedType: r.NamedType, ElementRelationship: r.ElementRelationship, Nullable: r.Nullable}
	if r.Inlined != (schema.Atom{}) {
		a := wireOfAtom(r.Inlined)
		w.Inlined = &a
	}
	return w
}

func (w wireAtom) schema() schema.Atom {
	a := schema.Atom{Scalar: w.Scalar}
	if w.List != nil {
		a.List = &schema.List{ElementType: w.List.ElementType.schema(), ElementRelationship: w.List.ElementRelationship, Keys: w.List.Keys}
	}
	if w.Map != nil {
		a.Map = &schema.Map{Unions: w.Map.Unions, ElementType: w.Map.ElementType.schema(), ElementRelationship: w.Map.ElementRelationship}
		if w.Map.Fields != nil {
			a.Map.Fields = make([]schema.StructField, len(w.Map.Fields))
		}
		for i, f := range w.Map.Fields {
			a.Map.Fields[i] = schema.StructField{Name: f.Name, Type: f.Type.schema()}
			if f.HasDefault {
				a.Map.Fields[i].Default = yamlValue(f.Default)
			}
		}
	}
	return a
}

func (w wireTypeRef) schema() schema.TypeRef {
	r := schema.TypeRef{NamedType: w.NamedType, ElementRelationship: w.ElementRelationship, Nullable: w.Nullable}
	if w.Inlined != nil {
		r.Inlined = w.Inlined.schema()
	}
	return r
}

// jsonValue is a default as YAML decoded it (maps keyed by any), made
// encodable as JSON.
func jsonValue(v any) any {
	switch v := v.(type) {
	case map[any]any:
		m := make(map[string]any, len(v))
		for k, e := range v {
			m[fmt.Sprint(k)] = jsonValue(e)
		}
		return m
	case []any:
		out := make([]any, len(v))
		for i, e := range v {
			out[i] = jsonValue(e)
		}
		return out
	}
	return v
}

// yamlValue is a default decoded from JSON given the Go types YAML
// decoding gives it (the types client-go's parsed schema holds): whole
// numbers int, maps keyed by any.
func yamlValue(v any) any {
	switch v := v.(type) {
	case float64:
		if v == math.Trunc(v) && math.Abs(v) <= math.MaxInt32 {
			return int(v)
		}
	case map[string]any:
		m := make(map[any]any, len(v))
		for k, e := range v {
			m[k] = yamlValue(e)
		}
		return m
	case []any:
		out := make([]any, len(v))
		for i, e := range v {
			out[i] = yamlValue(e)
		}
		return out
	}
	return v
}
