package applier

import (
	"bytes"
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
	"sigs.k8s.io/yaml"

	"syncd.dev/syncd/internal/config"
	"syncd.dev/syncd/internal/planner"
	"syncd.dev/syncd/internal/testenv"
)

var env *testenv.Env

func TestMain(m *testing.M) {
	testenv.Main(m, testenv.Options{ControllerManager: true}, &env)
}

// cluster is what one test needs to apply plans: the applier's clients
// and a mapper shared with the planner.
type cluster struct {
	cfg    *rest.Config
	dyn    dynamic.Interface
	mapper *restmapper.DeferredDiscoveryRESTMapper
}

func newCluster(t *testing.T, cfg *rest.Config) *cluster {
	t.Helper()
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	disc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return &cluster{cfg: cfg, dyn: dyn, mapper: restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(disc))}
}

// applier returns an Applier of the cluster's clients. Like syncd's
// drivers, it has a MetadataClient unless opts names a metadata client.
func (c *cluster) applier(t *testing.T, opts Options) *Applier {
	t.Helper()
	if opts.Metadata == nil {
		md, err := NewMetadataClient(c.cfg)
		if err != nil {
			t.Fatal(err)
		}
		opts.Metadata = md
	}
	a, err := New(c.dyn, c.mapper, opts)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// plan renders docs (YAML documents) for app, as the daemon would.
func (c *cluster) plan(t *testing.T, app config.App, docs ...string) *planner.Plan {
	t.Helper()
	p, err := planner.New(plannerApp(t, app), planner.Options{Mapper: c.mapper, Revision: "test"})
	if err != nil {
		t.Fatal(err)
	}
	var ms []planner.Manifest
	for i, d := range docs {
		ms = append(ms, planner.Manifest{File: "test.yaml", Index: i + 1, Object: object(t, d)})
	}
	plan, err := p.Plan(context.Background(), ms)
	if err != nil {
		t.Fatalf("plan: %v", err)
	}
	return plan
}

// apply applies plan and fails the test when Apply itself errs.
func (c *cluster) apply(t *testing.T, plan *planner.Plan, ao ApplyOptions) *ChangeSet {
	t.Helper()
	cs, err := c.applier(t, Options{}).Apply(context.Background(), plan, ao)
	if err != nil {
		t.Fatalf("Apply: %v", err)
	}
	return cs
}

func (c *cluster) resource(t *testing.T, gvr schema.GroupVersionResource, ns string) dynamic.ResourceInterface {
	if ns == "" {
		return c.dyn.Resource(gvr)
	}
	return c.dyn.Resource(gvr).Namespace(ns)
}

func (c *cluster) get(t *testing.T, gvr schema.GroupVersionResource, ns, name string) *unstructured.Unstructured {
	t.Helper()
	u, err := c.resource(t, gvr, ns).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("get %s %s/%s: %v", gvr.Resource, ns, name, err)
	}
	return u
}

var (
	configMaps  = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	secrets     = schema.GroupVersionResource{Version: "v1", Resource: "secrets"}
	deployments = schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}
)

// object decodes one YAML document.
func object(t *testing.T, doc string) *unstructured.Unstructured {
	t.Helper()
	j, err := yaml.YAMLToJSON([]byte(doc))
	if err != nil {
		t.Fatalf("yaml: %v\n%s", err, doc)
	}
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON(j); err != nil {
		t.Fatalf("decode: %v\n%s", err, doc)
	}
	return u
}

// owners returns, per managedFields entry, the leaf fields it owns in the
// API server's notation, sorted. Entries are keyed by manager, with the
// operation and subresource when they are not a plain Apply:
// "syncd-web", "operator (Update)", "hpa-sim (Update/scale)".
func owners(t *testing.T, u *unstructured.Unstructured) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	for _, e := range u.GetManagedFields() {
		key := e.Manager
		switch {
		case e.Operation != metav1.ManagedFieldsOperationApply && e.Subresource != "":
			key += fmt.Sprintf(" (%s/%s)", e.Operation, e.Subresource)
		case e.Operation != metav1.ManagedFieldsOperationApply:
			key += fmt.Sprintf(" (%s)", e.Operation)
		case e.Subresource != "":
			key += fmt.Sprintf(" (Apply/%s)", e.Subresource)
		}
		set := &fieldpath.Set{}
		if e.FieldsV1 != nil {
			if err := set.FromJSON(bytes.NewReader(e.FieldsV1.Raw)); err != nil {
				t.Fatalf("managedFields of %s: %v", e.Manager, err)
			}
		}
		out[key] = append(out[key], leaves(set)...)
		sort.Strings(out[key])
	}
	return out
}

// leaves lists the leaf paths of set, sorted.
func leaves(set *fieldpath.Set) []string {
	var out []string
	set.Leaves().Iterate(func(p fieldpath.Path) { out = append(out, p.String()) })
	sort.Strings(out)
	return out
}

// without returns owners without the entries of controllers that are
// not part of a test (the Deployment controller's revision annotation and
// status).
func without(o map[string][]string, drop ...string) map[string][]string {
	out := map[string][]string{}
	for k, v := range o {
		skip := false
		for _, d := range drop {
			if strings.HasPrefix(k, d) {
				skip = true
			}
		}
		if !skip {
			out[k] = v
		}
	}
	return out
}

// planOwners is what managedFields must say after a plan object is
// applied with ao: each slice's leaf fields under its manager, plus the
// managers annotation and the extra labels on the default manager.
func planOwners(plan *planner.Plan, ref string, ao ApplyOptions) map[string][]string {
	out := map[string][]string{}
	for _, o := range plan.Objects {
		if o.Ref.Name != ref {
			continue
		}
		for i, s := range o.Slices {
			set := s.Fields
			if i == 0 && ao.RecordManagers {
				set = set.Union(fieldpath.NewSet(fieldpath.MakePathOrDie("metadata", "annotations", managersAnnotation(plan.App))))
			}
			for k := range ao.Labels {
				if i == 0 {
					set = set.Union(fieldpath.NewSet(fieldpath.MakePathOrDie("metadata", "labels", k)))
				}
			}
			out[string(s.Manager)] = leaves(set)
		}
	}
	return out
}

// changes summarises a change set as "Kind name manager action" lines,
// for comparing with cmp.
func changes(cs *ChangeSet) []string {
	var out []string
	for _, c := range cs.Changes {
		out = append(out, fmt.Sprintf("%s %s %s %s", c.Object.Kind, c.Object.Name, c.Manager, c.Action))
	}
	return out
}

func errs(cs *ChangeSet) string {
	var b strings.Builder
	for _, c := range cs.Changes {
		if c.Err != nil {
			fmt.Fprintf(&b, "\n  %s: %v", c.Object, c.Err)
		}
	}
	return b.String()
}

// wantChanges compares a change set's summary lines.
func wantChanges(t *testing.T, cs *ChangeSet, want ...string) {
	t.Helper()
	if diff := cmp.Diff(want, changes(cs)); diff != "" {
		t.Errorf("changes (-want +got):\n%s%s", diff, errs(cs))
	}
}

// recorder records every version of one object from a watch started
// before a step, so tests can assert on transient states nobody would
// see with GETs.
type recorder struct {
	t        *testing.T
	ns, name string
	w        watch.Interface
	mu       sync.Mutex
	seen     []*unstructured.Unstructured
	done     chan struct{}
}

// watchObject starts recording name from its current resourceVersion.
func (c *cluster) watchObject(t *testing.T, gvr schema.GroupVersionResource, ns, name string) *recorder {
	t.Helper()
	ri := c.resource(t, gvr, ns)
	live, err := ri.Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	w, err := ri.Watch(context.Background(), metav1.ListOptions{
		FieldSelector:   "metadata.name=" + name,
		ResourceVersion: live.GetResourceVersion(),
	})
	if err != nil {
		t.Fatal(err)
	}
	return newRecorder(t, w, ns, name, live)
}

// watchNew starts recording name, which does not exist yet, from the
// namespace's current resourceVersion, so its creation is the first
// version seen.
func (c *cluster) watchNew(t *testing.T, gvr schema.GroupVersionResource, ns, name string) *recorder {
	t.Helper()
	ri := c.resource(t, gvr, ns)
	list, err := ri.List(context.Background(), metav1.ListOptions{FieldSelector: "metadata.name=" + name})
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Items) > 0 {
		t.Fatalf("%s %s/%s exists already", gvr.Resource, ns, name)
	}
	w, err := ri.Watch(context.Background(), metav1.ListOptions{
		FieldSelector:   "metadata.name=" + name,
		ResourceVersion: list.GetResourceVersion(),
	})
	if err != nil {
		t.Fatal(err)
	}
	return newRecorder(t, w, ns, name, nil)
}

// newRecorder collects w's objects, after first when it is set.
func newRecorder(t *testing.T, w watch.Interface, ns, name string, first *unstructured.Unstructured) *recorder {
	r := &recorder{t: t, ns: ns, name: name, w: w, done: make(chan struct{})}
	if first != nil {
		r.seen = append(r.seen, first)
	}
	go func() {
		defer close(r.done)
		for ev := range w.ResultChan() {
			u, ok := ev.Object.(*unstructured.Unstructured)
			if !ok {
				continue
			}
			r.mu.Lock()
			r.seen = append(r.seen, u)
			r.mu.Unlock()
		}
	}()
	t.Cleanup(w.Stop)
	return r
}

// stop waits until the watch has delivered the object's current version
// and returns every version seen since the watch started.
func (r *recorder) stop(c *cluster, gvr schema.GroupVersionResource) []*unstructured.Unstructured {
	r.t.Helper()
	live, err := c.resource(r.t, gvr, r.ns).Get(context.Background(), r.name, metav1.GetOptions{})
	if err != nil {
		r.t.Fatal(err)
	}
	rv := live.GetResourceVersion()
	deadline := time.Now().Add(30 * time.Second)
	for {
		r.mu.Lock()
		found := false
		for _, u := range r.seen {
			if u.GetResourceVersion() == rv {
				found = true
			}
		}
		r.mu.Unlock()
		if found {
			break
		}
		select {
		case <-r.done:
			r.t.Fatalf("watch of %s ended before resourceVersion %s", r.name, rv)
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			r.t.Fatalf("watch of %s never delivered resourceVersion %s", r.name, rv)
		}
	}
	r.w.Stop()
	<-r.done
	r.mu.Lock()
	defer r.mu.Unlock()
	return copyObjects(r.seen)
}

func copyObjects(in []*unstructured.Unstructured) []*unstructured.Unstructured {
	return append([]*unstructured.Unstructured(nil), in...)
}

func replicas(u *unstructured.Unstructured) int64 {
	n, _, _ := unstructured.NestedInt64(u.Object, "spec", "replicas")
	return n
}

func replicaHistory(seen []*unstructured.Unstructured) []int64 {
	var out []int64
	for _, u := range seen {
		if n := replicas(u); len(out) == 0 || out[len(out)-1] != n {
			out = append(out, n)
		}
	}
	return out
}

// ctxT returns a context bounded by a generous deadline.
func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// written is what syncd's requests can change on an object: everything
// but status, the resourceVersion and generation, the Deployment
// controller's revision annotation, and the managedFields entries of the
// controllers. Comparing it before and after a run tells whether the run
// wrote anything even while controllers write the same object.
func written(t *testing.T, u *unstructured.Unstructured) map[string]any {
	t.Helper()
	c := u.DeepCopy()
	ann := c.GetAnnotations()
	delete(ann, "deployment.kubernetes.io/revision")
	// The controller may add its revision annotation between the two
	// reads: no annotations and none left are the same.
	if len(ann) == 0 {
		ann = nil
	}
	c.SetAnnotations(ann)
	unstructured.RemoveNestedField(c.Object, "status")
	unstructured.RemoveNestedField(c.Object, "metadata", "managedFields")
	unstructured.RemoveNestedField(c.Object, "metadata", "resourceVersion")
	unstructured.RemoveNestedField(c.Object, "metadata", "generation")
	return map[string]any{"object": c.Object, "owners": without(owners(t, u), deployControllers...)}
}

// wantUnwritten fails when a run wrote the object.
func wantUnwritten(t *testing.T, what string, before, after *unstructured.Unstructured) {
	t.Helper()
	if diff := cmp.Diff(written(t, before), written(t, after)); diff != "" {
		t.Errorf("%s wrote the object (-before +after):\n%s", what, diff)
	}
}
