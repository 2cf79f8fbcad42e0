package e2e

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/discovery"

	"syncd.dev/syncd/internal/config"
	"syncd.dev/syncd/internal/planner"
	"syncd.dev/syncd/internal/reconcile"
)

const statusWarning = "status is set by controllers through the status subresource and is not applied"

// TestStatusOfClusterCRD plans a custom resource that carries status and
// whose CRD is installed in the cluster but not in the render. With the
// cluster's schemas (planner.ClusterSchemas) the planner learns from the
// cluster whether the kind serves status as a subresource: if it does,
// status is stripped with a warning; if not, status is kept (the server
// stores and records it). Either way every slice's Fields equals the
// server's managedFields. Without the cluster's schemas (offline), status
// is kept whatever the CRD says.
func TestStatusOfClusterCRD(t *testing.T) {
	ns := env.Namespace(t)
	c := connect(t)
	dc, err := discovery.NewDiscoveryClientForConfig(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	schemas := planner.NewClusterSchemas(dc.OpenAPIV3WithContext(context.Background()))
	tests := map[string]struct {
		subresource bool
	}{
		"with status subresource":    {subresource: true},
		"without status subresource": {subresource: false},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			group := strings.ReplaceAll(ns, "-", "") + ".example.com"
			crd := crdDocs(group)
			if !tc.subresource {
				group = "nostatus." + group
				crd = strings.ReplaceAll(crdDocs(group), "    subresources: {status: {}}\n", "")
				if strings.Contains(crd, "subresources") {
					t.Fatal("the CRD fixture still declares a subresource")
				}
			}
			docs := strings.SplitN(crd, "\n---\n", 2)
			route := docs[1] + "status: {ready: true}\n"
			app := config.App{
				Name: "routes", Namespace: ns,
				AppSpec: config.AppSpec{
					Split: []config.SplitRule{
						{Manager: "syncd-routes-weights", Kinds: []string{group + "/Route"}, Paths: []string{".spec.backends[*].weight"}},
					},
				},
			}
			// Install the CRD first, as another app would.
			c.applyAndCompare(t, planDocs(t, config.App{Name: "crds"}, planner.Options{}, docs[0]), false)

			offline := planDocs(t, app, planner.Options{}, route)
			if _, found := offline.Objects[0].Desired.Object["status"]; !found {
				t.Errorf("offline: status was stripped; without the cluster the planner cannot know the kind's subresources")
			}

			online := planOnline(t, c, app, planner.Options{Mapper: c.mapper, Schemas: schemas}, route)
			o := online.Objects[0]
			_, kept := o.Desired.Object["status"]
			warned := hasWarning(online, statusWarning)
			if kept == tc.subresource || warned != tc.subresource {
				t.Errorf("status kept = %v, warned = %v; want kept = %v, warned = %v (warnings: %v)", kept, warned, !tc.subresource, tc.subresource, online.Warnings)
			}
			// status is no split path: only the default manager's slice
			// may carry it.
			if _, found := o.Slices[0].Object.Object["status"]; found == tc.subresource {
				t.Errorf("slice of %s: status in the apply configuration = %v, want %v", o.Slices[0].Manager, found, !tc.subresource)
			}
			c.applyAndCompare(t, online, true)
		})
	}
}

// planOnline plans docs with opts, whose Schemas types kinds the render
// does not define, polling until the cluster serves the kind and
// publishes its OpenAPI document (a moment after the CRD is established).
func planOnline(t *testing.T, c *cluster, app config.App, opts planner.Options, docs string) *planner.Plan {
	t.Helper()
	spec, err := reconcile.Compile(app)
	if err != nil {
		t.Fatal(err)
	}
	p, err := planner.New(spec.Planner, opts)
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		u := &unstructured.Unstructured{}
		if err := u.UnmarshalJSON(yamlToJSON(t, docs)); err != nil {
			t.Fatal(err)
		}
		plan, err := p.Plan(context.Background(), []planner.Manifest{{File: "test.yaml", Index: 1, Object: u}})
		var me planner.ManifestErrors
		switch {
		case err == nil && !hasWarning(plan, "no schema is known"):
			for _, w := range plan.Warnings {
				t.Logf("warning: %s", w)
			}
			return plan
		case err != nil && !(errors.As(err, &me) && strings.Contains(err.Error(), "the cluster does not serve")):
			t.Fatal(err)
		}
		if time.Now().After(deadline) {
			t.Fatalf("the cluster never served %s with a schema: err = %v, plan = %v", u.GroupVersionKind(), err, plan)
		}
		c.mapper.Reset()
		time.Sleep(200 * time.Millisecond) // poll interval while the new kind is published
	}
}

func hasWarning(plan *planner.Plan, s string) bool {
	for _, w := range plan.Warnings {
		if strings.Contains(w.Message, s) {
			return true
		}
	}
	return false
}
