package applier

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"

	"syncd.dev/syncd/internal/config"
	"syncd.dev/syncd/internal/planner"
)

// sentRequests records the method, query and Accept header of every
// PATCH and POST a client sends.
type sentRequests struct {
	next http.RoundTripper
	mu   sync.Mutex
	seen []string
}

func (p *sentRequests) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Method == http.MethodPatch || req.Method == http.MethodPost {
		p.mu.Lock()
		p.seen = append(p.seen, req.Method+" "+req.URL.RawQuery+" accept="+req.Header.Get("Accept"))
		p.mu.Unlock()
	}
	return p.next.RoundTrip(req)
}

// take returns what was recorded so far and forgets it.
func (p *sentRequests) take() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	seen := p.seen
	p.seen = nil
	return seen
}

// tally counts the requests in seen that hold every one of want.
func tally(seen []string, want ...string) int {
	n := 0
	for _, q := range seen {
		if !slices.ContainsFunc(want, func(w string) bool { return !strings.Contains(q, w) }) {
			n++
		}
	}
	return n
}

// recordedCluster returns a cluster whose requests are recorded.
func recordedCluster(t *testing.T) (*cluster, *sentRequests) {
	sent := &sentRequests{}
	cfg := rest.CopyConfig(env.Config)
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { sent.next = rt; return sent })
	return newCluster(t, cfg), sent
}

// TestValidationDryRunRequests: a validated sync dry-runs an object that
// does not exist as a create, with fieldValidation=Strict and its answer
// asked for as metadata (dryRunsAsCreate), and one that exists as an
// apply; every apply, dry run or write, asks for fieldValidation=Ignore,
// so that the server decodes its body once (applyFieldValidation).
func TestValidationDryRunRequests(t *testing.T) {
	ns := env.Namespace(t)
	c, sent := recordedCluster(t)
	app := config.App{Name: "once", Namespace: ns}
	apply := func(docs ...string) []string {
		t.Helper()
		cs, err := c.applier(t, Options{}).Apply(context.Background(), c.plan(t, app, docs...), ApplyOptions{})
		if err != nil || !cs.OK() {
			t.Fatalf("Apply: %v %s", err, errs(cs))
		}
		return sent.take()
	}
	seen := apply(configMap("one", map[string]string{"k": "v"}), deployment("web", 1, "nginx:1.27"))
	if n := tally(seen, "POST", "dryRun=All", "fieldValidation=Strict", "as=PartialObjectMetadata"); n != 2 || len(seen) != 4 {
		t.Errorf("new objects: %d dry-run creates with fieldValidation=Strict asking for metadata, want 2 of 4 requests: %q", n, seen)
	}
	if tally(seen, "PATCH", "fieldValidation=Ignore") != 2 || tally(seen, "PATCH", "dryRun=All") != 0 {
		t.Errorf("new objects: want 2 applies with fieldValidation=Ignore and no dry-run apply: %q", seen)
	}
	seen = apply(configMap("one", map[string]string{"k": "changed"}), deployment("web", 1, "nginx:1.27"))
	if tally(seen, "PATCH", "dryRun=All", "fieldValidation=Ignore") == 0 || tally(seen, "POST") != 0 || tally(seen, "PATCH", "fieldValidation=Ignore") != len(seen) {
		t.Errorf("objects that exist: want dry-run applies and writes, all with fieldValidation=Ignore, and no create: %q", seen)
	}
}

// TestValidationWithoutCreates: an Applier whose metadata client cannot
// create (client-go's) dry-runs new objects as applies.
func TestValidationWithoutCreates(t *testing.T) {
	ns := env.Namespace(t)
	c, sent := recordedCluster(t)
	a := c.applier(t, Options{Metadata: metadata.NewForConfigOrDie(c.cfg)})
	cs, err := a.Apply(context.Background(), c.plan(t, config.App{Name: "once", Namespace: ns}, configMap("one", map[string]string{"k": "v"})), ApplyOptions{})
	if err != nil || !cs.OK() {
		t.Fatalf("Apply: %v %s", err, errs(cs))
	}
	if seen := sent.take(); tally(seen, "PATCH", "dryRun=All") != 1 || tally(seen, "POST") != 0 {
		t.Errorf("want one dry-run apply and no create: %q", seen)
	}
}

// TestApplyRefusesWhatValidationWouldCatch: with fieldValidation=Ignore
// the API server still refuses, in a dry run, a field the schema does not
// declare and a list entry given twice: the directive decides nothing of
// an apply but whether a JSON key given twice is looked for.
func TestApplyRefusesWhatValidationWouldCatch(t *testing.T) {
	ns := env.Namespace(t)
	c := newCluster(t, env.Config)
	a := c.applier(t, Options{})
	md, err := metadata.NewForConfig(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	cases := map[string]struct {
		gvr    schema.GroupVersionResource
		doc    string
		reason string
	}{
		"a field the schema does not declare": {
			gvr:    schema.GroupVersionResource{Version: "v1", Resource: "configmaps"},
			doc:    "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: unknown-field\ndata:\n  k: v\ncolour: red\n",
			reason: ".colour: field not declared in schema",
		},
		"an env entry given twice": {
			gvr:    schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"},
			doc:    "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: twice\nspec:\n  selector:\n    matchLabels: {app: twice}\n  template:\n    metadata:\n      labels: {app: twice}\n    spec:\n      containers:\n      - name: app\n        image: nginx:1.27\n        env:\n        - {name: MODE, value: a}\n        - {name: MODE, value: b}\n",
			reason: `duplicate entries for key [name="MODE"]`,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			u := object(t, tc.doc)
			u.SetNamespace(ns)
			ref := planner.ObjectRef{Group: tc.gvr.Group, Version: tc.gvr.Version, Kind: u.GetKind(), Namespace: ns, Name: u.GetName()}
			_, err := a.sendForMetadata(context.Background(), c.resource(t, tc.gvr, ns), md.Resource(tc.gvr).Namespace(ns), ref, request{Manager: "syncd-test", Object: u, Force: true, DryRun: true})
			if err == nil || !strings.Contains(err.Error(), tc.reason) {
				t.Fatalf("dry run: err = %v, want the server's %q", err, tc.reason)
			}
			if _, err := c.dyn.Resource(tc.gvr).Namespace(ns).Get(context.Background(), u.GetName(), metav1.GetOptions{}); err == nil {
				t.Errorf("%s exists after a refused dry run", ref)
			}
		})
	}
}

// absentLive is a LiveReader that finds no object: what a read sees of an
// object someone creates right after it.
type absentLive struct{}

func (absentLive) Live(ctx context.Context, ref planner.ObjectRef) (*unstructured.Unstructured, error) {
	return nil, apierrors.NewNotFound(schema.GroupResource{Resource: strings.ToLower(ref.Kind) + "s"}, ref.Name)
}

// TestValidationCreateFindsTheObject: when an object read as absent exists
// by the time of its dry-run create (AlreadyExists), the dry run is sent
// again as an apply, judged against the object there, and the sync goes
// on.
func TestValidationCreateFindsTheObject(t *testing.T) {
	ns := env.Namespace(t)
	c, sent := recordedCluster(t)
	app := config.App{Name: "late", Namespace: ns}
	if cs, err := c.applier(t, Options{}).Apply(context.Background(), c.plan(t, app, configMap("late", map[string]string{"k": "v"})), ApplyOptions{}); err != nil || !cs.OK() {
		t.Fatalf("first Apply: %v %s", err, errs(cs))
	}
	sent.take()
	cs, err := c.applier(t, Options{}).Apply(context.Background(), c.plan(t, app, configMap("late", map[string]string{"k": "changed"})), ApplyOptions{Live: absentLive{}})
	if err != nil || !cs.OK() {
		t.Fatalf("Apply: %v %s", err, errs(cs))
	}
	if seen := sent.take(); tally(seen, "POST", "dryRun=All") != 1 || tally(seen, "PATCH", "dryRun=All") != 1 {
		t.Errorf("want the dry-run create, refused as AlreadyExists, then the dry-run apply: %q", seen)
	}
	live := c.get(t, configMaps, ns, "late")
	if v, _, _ := unstructured.NestedString(live.Object, "data", "k"); v != "changed" {
		t.Errorf("data.k = %q after the sync, want changed", v)
	}
}

// TestValidationCreateRefuses: the dry-run create of a new object refuses
// what the apply would, keeping the stage unwritten: a field the schema
// does not declare (fieldValidation=Strict) and a value the server's
// validation refuses, each error naming the object and the field.
func TestValidationCreateRefuses(t *testing.T) {
	cases := map[string]struct{ doc, reason string }{
		"a field the schema does not declare": {
			doc:    "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: unknown-field\ndata:\n  k: v\ncolour: red\n",
			reason: `unknown field "colour"`,
		},
		"a value validation refuses": {
			doc:    "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: bad-label\n  labels:\n    tier: -not valid-\ndata:\n  k: v\n",
			reason: "metadata.labels: Invalid value",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			ns := env.Namespace(t)
			c, sent := recordedCluster(t)
			u := object(t, tc.doc)
			u.SetNamespace(ns)
			mc, err := NewMetadataClient(c.cfg)
			if err != nil {
				t.Fatal(err)
			}
			cr := &creator{rest: mc.rest, resource: configMaps, namespace: ns}
			body, err := json.Marshal(u.Object)
			if err != nil {
				t.Fatal(err)
			}
			err = cr.dryRunCreate(context.Background(), body, "syncd-test")
			if err == nil || !strings.Contains(err.Error(), tc.reason) {
				t.Fatalf("dry-run create: err = %v, want the server's %q", err, tc.reason)
			}
			if seen := sent.take(); tally(seen, "POST", "dryRun=All") != 1 {
				t.Errorf("want one dry-run create: %q", seen)
			}
			if _, err := c.dyn.Resource(configMaps).Namespace(ns).Get(context.Background(), u.GetName(), metav1.GetOptions{}); !apierrors.IsNotFound(err) {
				t.Errorf("after a refused dry run: get = %v, want not found", err)
			}
		})
	}
}

// TestValidationOfDeducedKind: a new object whose kind the planner could
// type only with the deduced schema (a custom resource whose CRD is not
// in the plan, with no cluster schemas) is dry-run as an apply: the
// planner checked neither its fields nor its list entries.
func TestValidationOfDeducedKind(t *testing.T) {
	ns := env.Namespace(t)
	c, sent := recordedCluster(t)
	group := fmt.Sprintf("t%d.applier.syncd.test", crdCounter.Add(1))
	crd := fmt.Sprintf("apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n  name: gadgets.%[1]s\nspec:\n  group: %[1]s\n  scope: Namespaced\n  names: {plural: gadgets, singular: gadget, kind: Gadget, listKind: GadgetList}\n  versions:\n  - name: v1\n    served: true\n    storage: true\n    schema:\n      openAPIV3Schema:\n        type: object\n        properties:\n          spec: {type: object, properties: {size: {type: integer}}}\n", group)
	t.Cleanup(func() {
		_ = c.dyn.Resource(crdResource).Delete(context.Background(), "gadgets."+group, metav1.DeleteOptions{})
	})
	app := config.App{Name: "gadgets", Namespace: ns}
	if cs, err := c.applier(t, Options{}).Apply(context.Background(), c.plan(t, app, crd), ApplyOptions{}); err != nil || !cs.OK() {
		t.Fatalf("CRD: %v %s", err, errs(cs))
	}
	c.mapper.Reset()
	sent.take()
	plan := c.plan(t, app, fmt.Sprintf("apiVersion: %s/v1\nkind: Gadget\nmetadata:\n  name: g1\nspec:\n  size: 2\n", group))
	if plan.Objects[0].SchemaChecked() {
		t.Fatal("the Gadget was typed with a schema; this test needs the deduced one")
	}
	cs, err := c.applier(t, Options{}).Apply(context.Background(), plan, ApplyOptions{})
	if err != nil || !cs.OK() {
		t.Fatalf("Apply: %v %s", err, errs(cs))
	}
	if seen := sent.take(); tally(seen, "PATCH", "dryRun=All") != 1 || tally(seen, "POST") != 0 {
		t.Errorf("want the Gadget's dry-run apply and no create: %q", seen)
	}
}
