package planner

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"syncd.dev/syncd/internal/redact"
)

// WriteYAML writes every slice of the plan, in apply order, as a YAML
// document preceded by a comment naming its manager and object:
//
//	# manager: syncd-web  object: apps/Deployment default/web
//	---
//	apiVersion: apps/v1
//	...
//
// Warnings follow as "# warning:" comments at the end. Hidden values
// (package redact: Secret data and stringData, the last-applied
// annotation, the app's sensitive fields given to Redact) are printed as
// redact.Marker.
func (p *Plan) WriteYAML(w io.Writer) error {
	for _, o := range p.Objects {
		for _, s := range o.Slices {
			b, err := yaml.Marshal(p.redactor.Object(s.Object.Object, s.Fields))
			if err != nil {
				return fmt.Errorf("%s: encode slice of %s: %w", o.Ref, s.Manager, err)
			}
			if _, err := fmt.Fprintf(w, "---\n# manager: %s  object: %s\n%s", s.Manager, o.Ref, b); err != nil {
				return err
			}
		}
	}
	for _, warn := range p.Warnings {
		if _, err := fmt.Fprintf(w, "# warning: %s\n", strings.ReplaceAll(warn.String(), "\n", " ")); err != nil {
			return err
		}
	}
	return nil
}

// Redact makes WriteYAML and WriteJSON hide the fields of r's app rules
// too; without it they hide what redact's built-in rules and the plan's
// decrypted fields hide.
func (p *Plan) Redact(r *redact.Rules) { p.redactor = p.Sensitive(r) }

// Sensitive returns r, an app's redaction rules, with the plan's
// decrypted fields hidden too and the plan's secret values (decrypted,
// from Secrets and sensitive fields and variables) masked wherever they
// appear in a string: what every output of the plan's objects (render,
// plan diffs, drift, alerts) redacts with.
func (p *Plan) Sensitive(r *redact.Rules) *redact.Rules {
	if p == nil {
		return r
	}
	return r.WithFields(p.Decrypted).WithSecrets(p.secrets)
}

// SliceJSON is one element of the array WriteJSON prints.
type SliceJSON struct {
	Manager FieldManager `json:"manager"`
	// Object is the ObjectRef string: "apps/Deployment default/web".
	Object string `json:"object"`
	Stage  string `json:"stage"`
	Origin string `json:"origin"`
	// Hash is the sha256 of the canonical JSON of ApplyConfiguration, as
	// printed: of the real slice when nothing in it is hidden, of the
	// redacted one otherwise, so that no digest of a hidden value is
	// printed (one could check a guessed password against it).
	Hash string `json:"hash"`
	// Fields is the slice's field set in managedFields (fieldsV1) form.
	Fields             json.RawMessage `json:"fields"`
	ApplyConfiguration map[string]any  `json:"applyConfiguration"`
}

// PlanJSON is the document WriteJSON prints.
type PlanJSON struct {
	App      string      `json:"app"`
	Revision string      `json:"revision,omitempty"`
	Slices   []SliceJSON `json:"slices"`
	Warnings []Warning   `json:"warnings,omitempty"`
}

// WriteJSON writes the plan as one indented JSON document (PlanJSON):
// the slices in apply order and the warnings. Values are hidden as in
// WriteYAML, and each Hash is of the slice as printed (SliceJSON.Hash).
func (p *Plan) WriteJSON(w io.Writer) error {
	out := PlanJSON{App: p.App, Revision: p.Revision, Slices: []SliceJSON{}, Warnings: p.Warnings}
	for _, o := range p.Objects {
		for _, s := range o.Slices {
			fields, err := s.Fields.ToJSON()
			if err != nil {
				return fmt.Errorf("%s: encode fields of %s: %w", o.Ref, s.Manager, err)
			}
			shown := p.redactor.Object(s.Object.Object, s.Fields)
			hash, err := hashObject(&unstructured.Unstructured{Object: shown})
			if err != nil {
				return fmt.Errorf("%s: hash the slice of %s: %w", o.Ref, s.Manager, err)
			}
			out.Slices = append(out.Slices, SliceJSON{
				Manager: s.Manager, Object: o.Ref.String(), Stage: o.Stage.String(), Origin: o.Origin,
				Hash: hash, Fields: fields, ApplyConfiguration: shown,
			})
		}
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false) // "<redacted>", not "\u003credacted\u003e"
	return enc.Encode(out)
}
