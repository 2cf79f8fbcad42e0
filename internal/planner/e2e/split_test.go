package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/openapi"
	"k8s.io/client-go/restmapper"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
	"sigs.k8s.io/structured-merge-diff/v6/typed"
	"sigs.k8s.io/structured-merge-diff/v6/value"

	"syncd.dev/syncd/internal/config"
	"syncd.dev/syncd/internal/ownership"
	"syncd.dev/syncd/internal/planner"
	"syncd.dev/syncd/internal/reconcile"
	"syncd.dev/syncd/internal/testenv"
)

var env *testenv.Env

func TestMain(m *testing.M) { testenv.Main(m, testenv.Options{}, &env) }

type cluster struct {
	dyn    dynamic.Interface
	mapper *restmapper.DeferredDiscoveryRESTMapper
}

func connect(t *testing.T) *cluster {
	t.Helper()
	dyn, err := dynamic.NewForConfig(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	dc, err := discovery.NewDiscoveryClientForConfig(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	return &cluster{dyn: dyn, mapper: restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(dc))}
}

func (c *cluster) resource(t *testing.T, u *unstructured.Unstructured) dynamic.ResourceInterface {
	t.Helper()
	gvk := u.GroupVersionKind()
	// A kind just defined by a CRD reaches discovery a moment after the
	// CRD is Established: poll for it.
	mapping, err := c.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	for deadline := time.Now().Add(60 * time.Second); meta.IsNoMatchError(err) && time.Now().Before(deadline); {
		time.Sleep(100 * time.Millisecond)
		c.mapper.Reset()
		mapping, err = c.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	}
	if err != nil {
		t.Fatalf("%s: %v", gvk, err)
	}
	if mapping.Scope.Name() == meta.RESTScopeNameNamespace {
		return c.dyn.Resource(mapping.Resource).Namespace(u.GetNamespace())
	}
	return c.dyn.Resource(mapping.Resource)
}

// apply sends u as manager m, never forcing. A kind that was just defined
// may take a moment to be served: NotFound and NoMatch are retried until a
// generous deadline.
func (c *cluster) apply(t *testing.T, u *unstructured.Unstructured, m planner.FieldManager) *unstructured.Unstructured {
	t.Helper()
	ctx := context.Background()
	deadline := time.Now().Add(60 * time.Second)
	for {
		live, err := c.resource(t, u).Apply(ctx, u.GetName(), u, metav1.ApplyOptions{FieldManager: string(m), Force: false})
		if err == nil {
			return live
		}
		if time.Now().After(deadline) || !(apierrors.IsNotFound(err) || meta.IsNoMatchError(err)) {
			t.Fatalf("apply %s %s as %s: %v", u.GetKind(), u.GetName(), m, err)
		}
		c.mapper.Reset()
		time.Sleep(100 * time.Millisecond) // poll interval while the new kind is published
	}
}

// waitEstablished polls a CRD until its Established condition is True.
func (c *cluster) waitEstablished(t *testing.T, crd *unstructured.Unstructured) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		live, err := c.resource(t, crd).Get(context.Background(), crd.GetName(), metav1.GetOptions{})
		if err == nil {
			conds, _, _ := unstructured.NestedSlice(live.Object, "status", "conditions")
			for _, cond := range conds {
				m, _ := cond.(map[string]any)
				if m["type"] == "Established" && m["status"] == "True" {
					return
				}
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("CRD %s not established: %v", crd.GetName(), err)
		}
		time.Sleep(100 * time.Millisecond) // poll interval
	}
}

// applyFields returns the field set each manager owns through Apply
// operations on live.
func applyFields(t *testing.T, live *unstructured.Unstructured) map[planner.FieldManager]*fieldpath.Set {
	t.Helper()
	own := ownership.Decode(live)
	if len(own.Invalid) > 0 {
		t.Fatalf("managedFields: %v", own.Invalid)
	}
	out := map[planner.FieldManager]*fieldpath.Set{}
	for _, e := range own.Entries {
		if e.IsApply() {
			out[planner.FieldManager(e.Manager)] = e.Set
		}
	}
	return out
}

func setDiff(want, got *fieldpath.Set) string {
	var b strings.Builder
	want.Difference(got).Iterate(func(p fieldpath.Path) { fmt.Fprintf(&b, "  - %s (promised, not owned)\n", p) })
	got.Difference(want).Iterate(func(p fieldpath.Path) { fmt.Fprintf(&b, "  + %s (owned, not promised)\n", p) })
	return b.String()
}

// contains checks that every field of desired is in live with the same
// value, comparing typed values cut to desired's field set.
func contains(t *testing.T, o planner.Object, live *unstructured.Unstructured) {
	t.Helper()
	want, err := o.Typed().ToFieldSet()
	if err != nil {
		t.Fatal(err)
	}
	l := live.DeepCopy()
	if _, applied := o.Desired.Object["status"]; !applied {
		delete(l.Object, "status") // written by controllers, not in Git
	}
	md := l.Object["metadata"].(map[string]any)
	for k := range md {
		switch k {
		case "name", "namespace", "labels", "annotations", "finalizers", "ownerReferences":
		default:
			delete(md, k)
		}
	}
	liveTV := typed.AsTypedUnvalidated(value.NewValueInterface(l.Object), o.Typed().Schema(), o.Typed().TypeRef())
	got := liveTV.ExtractItems(want)
	cmp, err := o.Typed().ExtractItems(want).Compare(got)
	if err != nil {
		t.Fatalf("%s: compare with live: %v", o.Ref, err)
	}
	if !cmp.IsSame() {
		t.Errorf("%s: live object differs from the rendered one: %v", o.Ref, cmp)
	}
}

const deployment = `apiVersion: apps/v1
kind: Deployment
metadata: {name: web, labels: {app: web, tier: frontend}}
spec:
  replicas: 2
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
      - name: app
        image: example.com/web:1.0
        args: ["--port=8080"]
        ports: [{containerPort: 8080, protocol: TCP}]
        env: [{name: A, value: "1"}]
        resources: {limits: {memory: 128Mi}}
      - name: proxy
        image: example.com/proxy:3
---
apiVersion: v1
kind: ConfigMap
metadata: {name: web, labels: {tier: frontend}}
data: {color: blue}
---
apiVersion: v1
kind: Service
metadata: {name: web}
spec:
  selector: {app: web}
  ports: [{name: http, port: 80, targetPort: 8080, protocol: TCP}]
`

func crdDocs(group string) string {
	return `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: routes.` + group + `}
spec:
  group: ` + group + `
  scope: Namespaced
  names: {kind: Route, plural: routes, singular: route, listKind: RouteList}
  versions:
  - name: v1
    served: true
    storage: true
    subresources: {status: {}}
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              backends:
                type: array
                x-kubernetes-list-type: map
                x-kubernetes-list-map-keys: [name]
                items:
                  type: object
                  required: [name]
                  properties:
                    name: {type: string}
                    port: {type: integer}
                    weight: {type: integer}
              hosts:
                type: array
                x-kubernetes-list-type: atomic
                items: {type: string}
          status:
            type: object
            properties:
              ready: {type: boolean}
---
apiVersion: ` + group + `/v1
kind: Route
metadata: {name: shop, labels: {team: edge}}
spec:
  hosts: [shop.example.com, www.shop.example.com]
  backends:
  - {name: blue, port: 8080, weight: 90}
  - {name: green, port: 8080, weight: 10}
`
}

// TestSplitMatchesServer applies every slice of an offline plan, the way
// the applier creates a split object (whole object as the default
// manager, then each split slice, then the default slice), and compares
// the server's managedFields with the planner's promise.
func TestSplitMatchesServer(t *testing.T) {
	ns := env.Namespace(t)
	group := strings.ReplaceAll(ns, "-", "") + ".example.com"
	tests := map[string]struct {
		docs  string
		split []config.SplitRule
	}{
		"deployment images and labels": {
			docs: deployment,
			split: []config.SplitRule{
				{Manager: "syncd-web-release", Kinds: []string{"apps/Deployment"}, Paths: []string{".spec.template.spec.containers[*].image"}},
				{Manager: "syncd-web-labels", Paths: []string{".metadata.labels.tier", `.spec.ports[port=80,protocol="TCP"].targetPort`}},
			},
		},
		"CRD list-map and atomic list": {
			docs: crdDocs(group),
			split: []config.SplitRule{
				{Manager: "syncd-routes-weights", Kinds: []string{group + "/Route"}, Paths: []string{".spec.backends[*].weight", ".spec.hosts"}},
			},
		},
	}
	c := connect(t)
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			app := config.App{Name: "web", Namespace: ns, AppSpec: config.AppSpec{Split: tc.split}}
			c.applyAndCompare(t, planDocs(t, app, planner.Options{}, tc.docs), false)
		})
	}
}

// planDocs decodes YAML documents and plans them.
func planDocs(t *testing.T, app config.App, opts planner.Options, docs string) *planner.Plan {
	t.Helper()
	spec, err := reconcile.Compile(app)
	if err != nil {
		t.Fatal(err)
	}
	p, err := planner.New(spec.Planner, opts)
	if err != nil {
		t.Fatal(err)
	}
	var ms []planner.Manifest
	for i, doc := range strings.Split(docs, "\n---\n") {
		u := &unstructured.Unstructured{}
		if err := u.UnmarshalJSON(yamlToJSON(t, doc)); err != nil {
			t.Fatal(err)
		}
		ms = append(ms, planner.Manifest{File: "test.yaml", Index: i + 1, Object: u})
	}
	plan, err := p.Plan(context.Background(), ms)
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range plan.Warnings {
		t.Logf("warning: %s", w)
	}
	return plan
}

// applyAndCompare applies every object of plan the way the applier creates
// a split object (the whole object as the default manager, then each split
// slice, then the default slice) and checks the server's managedFields
// against each slice's Fields. CRD objects are applied whole and waited
// for; their field sets are compared only when checkCRDs is set (offline
// they are typed with a deduced schema, documented as approximate).
func (c *cluster) applyAndCompare(t *testing.T, plan *planner.Plan, checkCRDs bool) {
	t.Helper()
	crdGK := schema.GroupKind{Group: "apiextensions.k8s.io", Kind: "CustomResourceDefinition"}
	for _, o := range plan.Objects {
		isCRD := o.Ref.GroupKind() == crdGK
		def := o.Slices[0]
		c.apply(t, o.Desired, def.Manager) // create whole: required fields are all there
		for _, s := range o.Slices[1:] {
			c.apply(t, s.Object, s.Manager)
		}
		live := c.apply(t, def.Object, def.Manager)
		if isCRD {
			c.waitEstablished(t, o.Desired)
			if !checkCRDs {
				continue
			}
		}
		owned := applyFields(t, live)
		if len(owned) != len(o.Slices) {
			t.Errorf("%s: %d managers own fields, want %d: %v", o.Ref, len(owned), len(o.Slices), owned)
		}
		for _, s := range o.Slices {
			got, ok := owned[s.Manager]
			if !ok {
				t.Errorf("%s: manager %s owns nothing", o.Ref, s.Manager)
				continue
			}
			if !got.Equals(s.Fields) {
				t.Errorf("%s: ownership of %s differs from the plan:\n%s", o.Ref, s.Manager, setDiff(s.Fields, got))
			}
		}
		if !isCRD {
			contains(t, o, live)
		}
	}
}

// TestSplitMatchesServerOnline plans with the cluster's own schema
// (NewClusterConverter) and scope (a discovery REST mapper), for a custom
// kind whose CRD is installed but not in the render, and for the CRD
// object itself.
func TestSplitMatchesServerOnline(t *testing.T) {
	ns := env.Namespace(t)
	group := strings.ReplaceAll(ns, "-", "") + ".example.com"
	c := connect(t)
	docs := strings.SplitN(crdDocs(group), "\n---\n", 2)
	app := config.App{
		Name: "routes", Namespace: ns,
		AppSpec: config.AppSpec{
			Split: []config.SplitRule{
				{Manager: "syncd-routes-weights", Kinds: []string{group + "/Route"}, Paths: []string{".spec.backends[*].weight", ".spec.hosts"}},
			},
		},
	}
	// Install the CRD first, as another app would.
	c.applyAndCompare(t, planDocs(t, app, planner.Options{}, docs[0]), false)

	dc, err := discovery.NewDiscoveryClientForConfig(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	// The server publishes a new CRD's OpenAPI document shortly after the
	// CRD is established: poll until the converter knows the kind.
	route := planDocs(t, config.App{Name: "probe", Namespace: ns}, planner.Options{}, docs[1]).Objects[0].Desired
	var conv managedfields.TypeConverter
	deadline := time.Now().Add(60 * time.Second)
	for {
		conv, err = planner.NewClusterConverter(context.Background(), openapi.ToClientWithContext(dc.OpenAPIV3()))
		if err != nil {
			t.Fatal(err)
		}
		if _, err = conv.ObjectToTyped(route); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the cluster's schema never covered %s: %v", route.GroupVersionKind(), err)
		}
		time.Sleep(200 * time.Millisecond) // poll interval
	}
	c.mapper.Reset()
	opts := planner.Options{Converter: conv, Mapper: c.mapper}
	t.Run("custom resource without its CRD in the render", func(t *testing.T) {
		c.applyAndCompare(t, planDocs(t, app, opts, docs[1]), true)
	})
	t.Run("CRD object and built-in kinds", func(t *testing.T) {
		// Same app name as above: the CRD keeps its one manager.
		web := config.App{
			Name: "routes", Namespace: ns,
			AppSpec: config.AppSpec{
				Split: []config.SplitRule{
					{Manager: "syncd-web-release", Kinds: []string{"apps/Deployment"}, Paths: []string{".spec.template.spec.containers[*].image"}},
				},
			},
		}
		c.applyAndCompare(t, planDocs(t, web, opts, docs[0]+"\n---\n"+deployment), true)
	})
}
