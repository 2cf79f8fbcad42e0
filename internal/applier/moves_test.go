package applier

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	"syncd.dev/syncd/internal/ownership"
	"syncd.dev/syncd/internal/planner"
)

// The step planner's operation scripts, in the style of
// structured-merge-diff's merge tests: an object's managedFields before,
// the app's slices, the steps the planner plans, and the managedFields
// after a simulation of those steps. The simulation plays the API
// server's part for ownership only (an apply makes its manager own
// exactly what it sends; same-valued fields are shared; a field nobody
// owns any more is lost: deleted, or reset when the script says it
// resets; the takeover is the real planTakeover). Every script also
// checks that no field is lost on the way unless the script expects it.
// The API-server tests (split_test.go, handoff_test.go, migrate*_test.go,
// takeover_test.go) prove the same sequences end to end.

const (
	web     = planner.FieldManager("syncd-web")
	release = planner.FieldManager("syncd-web-release")
	renamed = planner.FieldManager("platform")
	hpaMgr  = "hpaMgr-controller"
	csa     = "kubectl-client-side-apply"
)

// The fields of the scripts' Deployment.
const (
	fReplicas    = ".spec.replicas"
	fContainer   = ".spec.template.spec.containers[name=app]"
	fName        = ".spec.template.spec.containers[name=app].name"
	fImage       = ".spec.template.spec.containers[name=app].image"
	fLimits      = ".spec.template.spec.containers[name=app].resources.limits.cpu"
	fLabel       = ".metadata.labels.app"
	fLastApplied = ".metadata.annotations.kubectl.kubernetes.io/last-applied-configuration"
)

// opEntry is one managedFields opEntry of a script: a manager, Apply unless
// update is set, owning fields.
type opEntry struct {
	manager string
	update  bool
	fields  []string
}

type script struct {
	live    []opEntry
	slices  []opEntry
	old     []planner.FieldManager
	force   []bool
	release bool
	// resets are the fields the API server resets to a default instead
	// of deleting when nobody owns them (the hold's dry run finds them).
	resets []string
	// create plans a creation instead of an update.
	create bool

	wantSteps []string
	wantAfter []opEntry
	// wantLost are the fields the steps leave without an owner.
	wantLost []string
}

func TestStepPlanner(t *testing.T) {
	defaultSlice := opEntry{manager: string(web), fields: []string{fReplicas, fContainer, fName, fImage, fLimits, fLabel}}
	splitDefault := opEntry{manager: string(web), fields: []string{fReplicas, fContainer, fName, fLimits, fLabel}}
	splitRelease := opEntry{manager: string(release), fields: []string{fContainer, fName, fImage}}
	tests := map[string]script{
		"create with one slice is one apply": {
			create:    true,
			slices:    []opEntry{defaultSlice},
			wantSteps: []string{"exact syncd-web"},
			wantAfter: []opEntry{defaultSlice},
		},
		"split create: whole, then each split slice, then the default slice": {
			create:    true,
			slices:    []opEntry{splitDefault, splitRelease},
			wantSteps: []string{"whole syncd-web", "exact syncd-web-release force", "exact syncd-web force"},
			wantAfter: []opEntry{splitDefault, splitRelease},
		},
		"steady state: one request per manager": {
			live:      []opEntry{splitDefault, splitRelease},
			slices:    []opEntry{splitDefault, splitRelease},
			force:     []bool{false, false},
			wantSteps: []string{"exact syncd-web", "exact syncd-web-release", "takeover"},
			wantAfter: []opEntry{splitDefault, splitRelease},
		},
		"split change: the image moves to the release manager, shared first": {
			live:   []opEntry{defaultSlice},
			slices: []opEntry{splitDefault, splitRelease},
			force:  []bool{false, false},
			wantSteps: []string{
				"share syncd-web force +" + fImage,
				"share syncd-web-release force",
				"exact syncd-web", "exact syncd-web-release", "takeover",
			},
			wantAfter: []opEntry{splitDefault, splitRelease},
		},
		"split undone: the default manager takes the image back": {
			live:   []opEntry{splitDefault, splitRelease},
			slices: []opEntry{defaultSlice},
			old:    []planner.FieldManager{release},
			force:  []bool{true},
			wantSteps: []string{
				"share syncd-web force",
				"exact syncd-web force", "release syncd-web-release force", "takeover",
			},
			wantAfter: []opEntry{defaultSlice},
		},
		"manager rename: share, then the old manager lets go": {
			live:      []opEntry{defaultSlice},
			slices:    []opEntry{{manager: string(renamed), fields: defaultSlice.fields}},
			old:       []planner.FieldManager{web},
			force:     []bool{false},
			wantSteps: []string{"share platform force", "exact platform", "release syncd-web force", "takeover"},
			wantAfter: []opEntry{{manager: string(renamed), fields: defaultSlice.fields}},
		},
		"rename that also drops a field that resets: the old manager's handoff holds it": {
			live:   []opEntry{defaultSlice},
			slices: []opEntry{{manager: string(renamed), fields: minus(defaultSlice.fields, fReplicas)}},
			old:    []planner.FieldManager{web},
			force:  []bool{false},
			resets: []string{fReplicas},
			wantSteps: []string{
				"share platform force", "exact platform",
				"hold syncd-web force " + fReplicas, "release syncd-web force", "takeover",
			},
			wantAfter: []opEntry{
				{manager: string(renamed), fields: minus(defaultSlice.fields, fReplicas)},
				{manager: "syncd-web-handoff", fields: []string{fReplicas}},
			},
		},
		"replicas leaves Git (the HPA trap): held at its value until someone owns it": {
			live:      []opEntry{defaultSlice},
			slices:    []opEntry{{manager: string(web), fields: minus(defaultSlice.fields, fReplicas)}},
			force:     []bool{false},
			resets:    []string{fReplicas},
			wantSteps: []string{"hold syncd-web " + fReplicas, "exact syncd-web", "takeover"},
			wantAfter: []opEntry{
				{manager: string(web), fields: minus(defaultSlice.fields, fReplicas)},
				{manager: "syncd-web-handoff", fields: []string{fReplicas}},
			},
		},
		"a held field another manager applies too: the handoff manager lets go": {
			live: []opEntry{
				{manager: string(web), fields: minus(defaultSlice.fields, fReplicas)},
				{manager: "syncd-web-handoff", fields: []string{fReplicas}},
				{manager: hpaMgr, fields: []string{fReplicas}},
			},
			slices:    []opEntry{{manager: string(web), fields: minus(defaultSlice.fields, fReplicas)}},
			force:     []bool{false},
			wantSteps: []string{"exact syncd-web", "takeover", "let-go syncd-web-handoff force"},
			wantAfter: []opEntry{
				{manager: string(web), fields: minus(defaultSlice.fields, fReplicas)},
				{manager: hpaMgr, fields: []string{fReplicas}},
			},
		},
		"a held field nobody else owns yet: the hold stays": {
			live: []opEntry{
				{manager: string(web), fields: minus(defaultSlice.fields, fReplicas)},
				{manager: "syncd-web-handoff", fields: []string{fReplicas}},
			},
			slices:    []opEntry{{manager: string(web), fields: minus(defaultSlice.fields, fReplicas)}},
			force:     []bool{false},
			wantSteps: []string{"exact syncd-web", "takeover"},
			wantAfter: []opEntry{
				{manager: string(web), fields: minus(defaultSlice.fields, fReplicas)},
				{manager: "syncd-web-handoff", fields: []string{fReplicas}},
			},
		},
		"handoff: release lets a dropped field go at once": {
			live:      []opEntry{defaultSlice},
			slices:    []opEntry{{manager: string(web), fields: minus(defaultSlice.fields, fReplicas)}},
			force:     []bool{false},
			release:   true,
			resets:    []string{fReplicas},
			wantSteps: []string{"exact syncd-web", "takeover"},
			wantAfter: []opEntry{{manager: string(web), fields: minus(defaultSlice.fields, fReplicas)}},
			wantLost:  []string{fReplicas},
		},
		"handoff: release lets an existing hold go": {
			live: []opEntry{
				{manager: string(web), fields: minus(defaultSlice.fields, fReplicas)},
				{manager: "syncd-web-handoff", fields: []string{fReplicas}},
			},
			slices:    []opEntry{{manager: string(web), fields: minus(defaultSlice.fields, fReplicas)}},
			force:     []bool{false},
			release:   true,
			wantSteps: []string{"exact syncd-web", "takeover", "let-go syncd-web-handoff force"},
			wantAfter: []opEntry{{manager: string(web), fields: minus(defaultSlice.fields, fReplicas)}},
			wantLost:  []string{fReplicas},
		},
		"a field removed from Git that does not reset is deleted": {
			live:      []opEntry{defaultSlice},
			slices:    []opEntry{{manager: string(web), fields: minus(defaultSlice.fields, fLimits)}},
			force:     []bool{false},
			wantSteps: []string{"hold syncd-web " + fLimits, "exact syncd-web", "takeover"},
			wantAfter: []opEntry{{manager: string(web), fields: minus(defaultSlice.fields, fLimits)}},
			wantLost:  []string{fLimits},
		},
		"a field another manager owns too is no drop": {
			live:      []opEntry{defaultSlice, {manager: hpaMgr, update: true, fields: []string{fReplicas}}},
			slices:    []opEntry{{manager: string(web), fields: minus(defaultSlice.fields, fReplicas)}},
			force:     []bool{false},
			wantSteps: []string{"exact syncd-web", "takeover"},
			wantAfter: []opEntry{
				{manager: string(web), fields: minus(defaultSlice.fields, fReplicas)},
				{manager: hpaMgr, update: true, fields: []string{fReplicas}},
			},
		},
		"key fields both split managers own are no move": {
			live:      []opEntry{splitDefault, splitRelease},
			slices:    []opEntry{splitDefault, splitRelease},
			force:     []bool{false, false},
			wantSteps: []string{"exact syncd-web", "exact syncd-web-release", "takeover"},
			wantAfter: []opEntry{splitDefault, splitRelease},
		},
		"policy forced a conflict: the exact apply forces": {
			live:      []opEntry{defaultSlice},
			slices:    []opEntry{defaultSlice},
			force:     []bool{true},
			wantSteps: []string{"exact syncd-web force", "takeover"},
			wantAfter: []opEntry{defaultSlice},
		},
		"takeover from client-side kubectl apply": {
			live: []opEntry{
				{manager: csa, update: true, fields: append(slices.Clone(defaultSlice.fields), fLastApplied)},
			},
			slices:    []opEntry{defaultSlice},
			force:     []bool{false},
			wantSteps: []string{"exact syncd-web", "takeover"},
			wantAfter: []opEntry{defaultSlice},
			// Client-side apply's record of the object goes with its
			// entry (the executor removes the annotation).
			wantLost: []string{fLastApplied},
		},
		"takeover leaves client-side apply the fields Git does not declare": {
			live: []opEntry{
				{manager: csa, update: true, fields: []string{fReplicas, fContainer, fName, fImage, fLimits, fLabel, fLastApplied}},
			},
			slices:    []opEntry{{manager: string(web), fields: minus(defaultSlice.fields, fLimits)}},
			force:     []bool{false},
			wantSteps: []string{"exact syncd-web", "takeover"},
			wantAfter: []opEntry{
				{manager: csa, update: true, fields: []string{fLimits, fLastApplied}},
				{manager: string(web), fields: minus(defaultSlice.fields, fLimits)},
			},
		},
	}
	for name, sc := range tests {
		t.Run(name, func(t *testing.T) {
			sim := newSim(t, sc)
			steps := sim.run(sim.plan())
			if diff := cmp.Diff(sc.wantSteps, describeSteps(sim, steps)); diff != "" {
				t.Errorf("steps (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(normalEntries(t, sc.wantAfter), sim.state(), cmp.AllowUnexported(opEntry{})); diff != "" {
				t.Errorf("managedFields after (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(sc.wantLost, sim.lost); diff != "" {
				t.Errorf("fields left without an owner (-want +got):\n%s", diff)
			}
		})
	}
}

// sim plays an object's managedFields through a script's steps.
type sim struct {
	t       *testing.T
	sc      script
	entries []metav1.ManagedFieldsEntry
	slices  []sliceFields
	lost    []string
	am      appManagers
}

func newSim(t *testing.T, sc script) *sim {
	s := &sim{t: t, sc: sc}
	for _, e := range sc.live {
		s.entries = append(s.entries, managedEntry(t, e))
	}
	for _, e := range sc.slices {
		s.slices = append(s.slices, sliceFields{Manager: planner.FieldManager(e.manager), Fields: fieldSet(t, e.fields)})
	}
	s.am = newAppManagers(s.slices, sc.old)
	return s
}

// object returns the simulated object: its managedFields, and the
// last-applied annotation when client-side apply owns it.
func (s *sim) object() *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetManagedFields(s.entries)
	for _, e := range s.sc.live {
		if slices.Contains(e.fields, fLastApplied) {
			u.SetAnnotations(map[string]string{lastAppliedAnnotation: "{}"})
		}
	}
	return u
}

func (s *sim) plan() []step {
	if s.sc.create {
		return planCreate(s.slices)
	}
	in := moveInput{Slices: s.slices, Live: ownership.Decode(s.object()), Old: s.sc.old, Force: s.sc.force, ReleaseHandoff: s.sc.release}
	in.Moving = in.moving()
	return planUpdate(in)
}

// run sends the steps, as the executor does (the takeover adds the
// handoff managers' releases, planned on the ownership it leaves), and
// returns every step it sent.
func (s *sim) run(steps []step) []step {
	for k := 0; k < len(steps); k++ {
		before := s.owned()
		steps = append(steps, s.do(steps[k])...)
		s.lose(before)
	}
	return steps
}

func (s *sim) do(st step) []step {
	switch st.Purpose {
	case PurposeWhole, PurposeShare, PurposeExact:
		s.apply(string(st.Manager), st.Fields)
	case PurposeHold:
		s.apply(string(HandoffManager(st.Manager)), st.Fields.Intersection(fieldSet(s.t, s.sc.resets)))
	case PurposeRelease, PurposeLetGo:
		s.apply(string(st.Manager), fieldpath.NewSet())
	case PurposeTakeover:
		tk, err := planTakeover(s.object(), managersOfSlices(s.slices), nil, nil)
		if err != nil {
			s.t.Fatal(err)
		}
		if !tk.empty() {
			s.entries = tk.entries
		}
		return planLetGo(ownership.Decode(s.object()), s.am, s.sc.release)
	default:
		s.t.Fatalf("unknown step %q", st.Purpose)
	}
	return nil
}

// apply makes m's Apply opEntry own exactly fields; an empty set removes
// the opEntry, as the API server does.
func (s *sim) apply(m string, fields *fieldpath.Set) {
	i := slices.IndexFunc(s.entries, func(e metav1.ManagedFieldsEntry) bool {
		return e.Manager == m && e.Operation == metav1.ManagedFieldsOperationApply
	})
	if fields.Empty() {
		if i >= 0 {
			s.entries = slices.Delete(s.entries, i, i+1)
		}
		return
	}
	e := managedEntryOf(s.t, m, metav1.ManagedFieldsOperationApply, fields)
	if i >= 0 {
		s.entries[i] = e
		return
	}
	s.entries = append(s.entries, e)
}

// owned returns every leaf field someone owns.
func (s *sim) owned() *fieldpath.Set {
	return ownership.Decode(s.object()).OwnedExcept(func(string) bool { return false }).Leaves()
}

// lose records the fields owned before a step that nobody owns after it.
func (s *sim) lose(before *fieldpath.Set) {
	s.lost = append(s.lost, pathStrings(before.Difference(s.owned()))...)
}

// state returns the managedFields as script entries, sorted by manager.
func (s *sim) state() []opEntry {
	var out []opEntry
	for _, e := range s.entries {
		set := &fieldpath.Set{}
		if err := set.FromJSON(strings.NewReader(string(e.FieldsV1.Raw))); err != nil {
			s.t.Fatal(err)
		}
		out = append(out, opEntry{manager: e.Manager, update: e.Operation == metav1.ManagedFieldsOperationUpdate, fields: pathStrings(set)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].manager < out[j].manager })
	return out
}

func managersOfSlices(sl []sliceFields) []planner.FieldManager {
	out := make([]planner.FieldManager, len(sl))
	for i, s := range sl {
		out[i] = s.Manager
	}
	return out
}

// describeSteps writes steps the way the scripts expect them: purpose,
// manager, "force", and for holds the fields, for shares the fields
// beyond the slice's own.
func describeSteps(s *sim, steps []step) []string {
	var out []string
	for _, st := range steps {
		words := []string{string(st.Purpose)}
		if st.Manager != "" {
			words = append(words, string(st.Manager))
		}
		if st.Force {
			words = append(words, "force")
		}
		switch st.Purpose {
		case PurposeHold:
			words = append(words, pathStrings(st.Fields)...)
		case PurposeShare:
			for _, p := range pathStrings(st.Fields.Difference(s.slices[st.Slice].Fields)) {
				words = append(words, "+"+p)
			}
		}
		out = append(out, strings.Join(words, " "))
	}
	return out
}

// normalEntries sorts the entries and their fields as state does.
func normalEntries(t *testing.T, es []opEntry) []opEntry {
	var out []opEntry
	for _, e := range es {
		out = append(out, opEntry{manager: e.manager, update: e.update, fields: pathStrings(fieldSet(t, e.fields))})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].manager < out[j].manager })
	return out
}

func managedEntry(t *testing.T, e opEntry) metav1.ManagedFieldsEntry {
	op := metav1.ManagedFieldsOperationApply
	if e.update {
		op = metav1.ManagedFieldsOperationUpdate
	}
	return managedEntryOf(t, e.manager, op, fieldSet(t, e.fields))
}

func managedEntryOf(t *testing.T, m string, op metav1.ManagedFieldsOperationType, fields *fieldpath.Set) metav1.ManagedFieldsEntry {
	raw, err := fields.ToJSON()
	if err != nil {
		t.Fatal(err)
	}
	return metav1.ManagedFieldsEntry{Manager: m, Operation: op, APIVersion: "apps/v1", FieldsType: "FieldsV1", FieldsV1: &metav1.FieldsV1{Raw: raw}}
}

// fieldSet parses the scripts' field notation: dot-separated field
// names, a list item as [key=value] after its list's name; the last
// element of a dotted annotation key stays whole after "annotations.".
func fieldSet(t *testing.T, fields []string) *fieldpath.Set {
	set := fieldpath.NewSet()
	for _, f := range fields {
		set.Insert(parsePath(t, f))
	}
	return set
}

func parsePath(t *testing.T, f string) fieldpath.Path {
	var parts []any
	rest := strings.TrimPrefix(f, ".")
	for rest != "" {
		if strings.HasPrefix(rest, "annotations.") || strings.HasPrefix(rest, "labels.") {
			field, key, _ := strings.Cut(rest, ".")
			parts = append(parts, field, key)
			break
		}
		var part string
		part, rest, _ = strings.Cut(rest, ".")
		field, item, isItem := strings.Cut(part, "[")
		parts = append(parts, field)
		if isItem {
			k, v, ok := strings.Cut(strings.TrimSuffix(item, "]"), "=")
			if !ok {
				t.Fatalf("%s: list item %q wants [key=value]", f, item)
			}
			parts = append(parts, fieldpath.KeyByFields(k, v))
		}
	}
	p, err := fieldpath.MakePath(parts...)
	if err != nil {
		t.Fatalf("%s: %v", f, err)
	}
	return p
}

// pathStrings writes a set's paths in the scripts' notation, sorted.
func pathStrings(set *fieldpath.Set) []string {
	var out []string
	set.Iterate(func(p fieldpath.Path) {
		var b strings.Builder
		for _, pe := range p {
			switch {
			case pe.FieldName != nil:
				fmt.Fprintf(&b, ".%s", *pe.FieldName)
			case pe.Key != nil:
				for _, k := range *pe.Key {
					fmt.Fprintf(&b, "[%s=%v]", k.Name, k.Value.AsString())
				}
			default:
				b.WriteString(pe.String())
			}
		}
		out = append(out, b.String())
	})
	sort.Strings(out)
	return out
}

func minus(fields []string, drop ...string) []string {
	return slices.DeleteFunc(slices.Clone(fields), func(f string) bool { return slices.Contains(drop, f) })
}
