package planner

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"syncd.dev/syncd/internal/config"
)

// TestSplitAheadPlansAsOneCPU: a plan whose built-in objects are typed
// and split on several CPUs (splitBuiltinsAhead) is the plan one CPU
// makes: the same objects, slices, warnings, unmatched-path warnings and
// errors, in the same order, with objects of a CRD in the render and of
// unknown kinds among them.
func TestSplitAheadPlansAsOneCPU(t *testing.T) {
	app := config.App{Name: "web", AppSpec: config.AppSpec{Split: []config.SplitRule{
		{Manager: "syncd-web-release", Paths: []string{".spec.template.spec.containers[*].image"}},
		{Manager: "syncd-web-ops", Paths: []string{".data.nowhere"}},
	}}}
	var docs []string
	docs = append(docs, "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata: {name: widgets.example.com}\n"+
		"spec:\n  group: example.com\n  scope: Namespaced\n  names: {plural: widgets, singular: widget, kind: Widget}\n"+
		"  versions:\n  - name: v1\n    served: true\n    storage: true\n    schema: {openAPIV3Schema: {type: object, properties: {spec: {type: object, properties: {size: {type: integer}}}}}}\n")
	for i := range 300 {
		switch i % 10 {
		case 0:
			docs = append(docs, fmt.Sprintf("apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w-%03d, namespace: ns}\nspec: {size: %d}\n", i, i))
		case 1:
			docs = append(docs, fmt.Sprintf("apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: d-%03d, namespace: ns}\n"+
				"spec: {selector: {matchLabels: {a: b}}, template: {metadata: {labels: {a: b}}, spec: {containers: [{name: c, image: i:%d}]}}}\nstatus: {replicas: 1}\n", i, i))
		case 2:
			docs = append(docs, fmt.Sprintf("apiVersion: v1\nkind: Service\nmetadata: {name: s-%03d, namespace: ns}\nspec: {ports: [{port: %d}]}\n", i, 1000+i))
		default:
			docs = append(docs, fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c-%03d, namespace: ns}\ndata: {k: v%d}\n", i, i))
		}
	}
	good := strings.Join(docs, "---\n")
	bad := good + "---\napiVersion: apps/v1\nkind: Deployment\nmetadata: {name: bad-a, namespace: ns}\nspec: {replicas: three}\n" +
		"---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: bad-b, namespace: ns}\ndata: {k: [1]}\n"

	plans := map[int]string{}
	errs := map[int]string{}
	for _, cpus := range []int{1, 4} {
		prev := runtime.GOMAXPROCS(cpus)
		plans[cpus] = describePlan(mustPlan(t, app, Options{}, good))
		p, err := newFromConfig(app, Options{})
		if err != nil {
			t.Fatal(err)
		}
		_, err = p.Plan(context.Background(), decodeAll(t, bad))
		if err == nil {
			t.Fatalf("%d CPUs: the plan with bad objects did not fail", cpus)
		}
		errs[cpus] = err.Error()
		runtime.GOMAXPROCS(prev)
	}
	if diff := cmp.Diff(plans[1], plans[4]); diff != "" {
		t.Errorf("plan on 4 CPUs differs from the plan on one (-one +four):\n%s", diff)
	}
	if diff := cmp.Diff(errs[1], errs[4]); diff != "" {
		t.Errorf("errors on 4 CPUs differ from those on one (-one +four):\n%s", diff)
	}
	for _, want := range []string{"syncd-web-release", "Widget", "status is set by controllers", "matches no field of any object"} {
		if !strings.Contains(plans[1], want) {
			t.Errorf("the plan lacks %q; the test no longer covers it:\n%.2000s", want, plans[1])
		}
	}
	for _, want := range []string{"bad-a", "bad-b"} {
		if !strings.Contains(errs[1], want) {
			t.Errorf("the errors lack %q: %s", want, errs[1])
		}
	}
}

// describePlan writes every object of a plan (its stage, reference, and
// each slice's manager, hash and fields) and every warning, in order.
func describePlan(plan *Plan) string {
	var b strings.Builder
	for _, o := range plan.Objects {
		fmt.Fprintf(&b, "%s %s deduced=%v\n", o.Stage, o.Ref, o.deduced)
		for _, s := range o.Slices {
			fmt.Fprintf(&b, "  %s %s %s\n", s.Manager, s.Hash, s.Fields.String())
		}
	}
	for _, w := range plan.Warnings {
		fmt.Fprintf(&b, "warning: %s: %s\n", w.Object, w.Message)
	}
	return b.String()
}
