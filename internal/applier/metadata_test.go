package applier

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"

	"syncd.dev/syncd/internal/ownership"
)

// acceptRecorder records the Accept header of every apply request (PATCH)
// a client sends, by whether it was a dry run.
type acceptRecorder struct {
	next http.RoundTripper
	mu   sync.Mutex
	seen map[string][]string // "dry run" / "write" → Accept headers
}

func (r *acceptRecorder) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Method == http.MethodPatch {
		kind := "write"
		if req.URL.Query().Get("dryRun") != "" {
			kind = "dry run"
		}
		r.mu.Lock()
		r.seen[kind] = append(r.seen[kind], req.Header.Get("Accept"))
		r.mu.Unlock()
	}
	return r.next.RoundTrip(req)
}

// take returns what was recorded and forgets it.
func (r *acceptRecorder) take() map[string][]string {
	r.mu.Lock()
	defer r.mu.Unlock()
	seen := r.seen
	r.seen = map[string][]string{}
	return seen
}

// metadataOnlyAnswers reports whether there are Accept headers and every
// one asks for PartialObjectMetadata.
func metadataOnlyAnswers(accepts []string) bool {
	return len(accepts) > 0 && !slices.ContainsFunc(accepts, func(a string) bool {
		return !strings.Contains(a, "as=PartialObjectMetadata")
	})
}

// metadataRig applies plans of one app in a namespace of its own through
// an Applier whose requests are recorded, with or without a metadata
// client.
type metadataRig struct {
	c   *cluster
	a   *Applier
	rec *acceptRecorder
	ns  string
}

func newMetadataRig(t *testing.T, withMetadata bool) *metadataRig {
	rec := &acceptRecorder{seen: map[string][]string{}}
	cfg := rest.CopyConfig(env.Config)
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { rec.next = rt; return rec })
	c := newCluster(t, cfg)
	var opts Options
	if withMetadata {
		opts.Metadata = metadata.NewForConfigOrDie(cfg)
	}
	a, err := New(dynamic.NewForConfigOrDie(cfg), c.mapper, opts)
	if err != nil {
		t.Fatal(err)
	}
	return &metadataRig{c: c, a: a, rec: rec, ns: env.Namespace(t)}
}

// apply applies docs and returns the ChangeSet and the Accept headers of
// its apply requests.
func (r *metadataRig) apply(t *testing.T, docs ...string) (*ChangeSet, map[string][]string) {
	t.Helper()
	r.rec.take()
	cs, err := r.a.Apply(context.Background(), r.c.plan(t, appOf("app", r.ns), docs...), ApplyOptions{RecordManagers: true})
	if err != nil {
		t.Fatalf("Apply: %v", err)
	}
	return cs, r.rec.take()
}

// kindResources are the resources of the kinds these tests apply.
var kindResources = map[string]schema.GroupVersionResource{
	"ConfigMap": configMaps,
	"Secret":    secrets,
	"Service":   {Version: "v1", Resource: "services"},
}

// changeSummary is what a ChangeSet says of each object, and whether its
// resourceVersion and managedFields fingerprint are the live object's.
type changeSummary struct {
	Actions       []string
	LiveRV, Owned []bool
}

func (r *metadataRig) summary(t *testing.T, cs *ChangeSet) changeSummary {
	t.Helper()
	var s changeSummary
	for _, ch := range cs.Changes {
		live := r.c.get(t, kindResources[ch.Object.Kind], r.ns, ch.Object.Name)
		s.Actions = append(s.Actions, ch.Object.Kind+" "+string(ch.Action))
		s.LiveRV = append(s.LiveRV, ch.ResourceVersion == live.GetResourceVersion())
		s.Owned = append(s.Owned, ch.Owned != "" && ch.Owned == ownership.Fingerprint(live.GetManagedFields(), string(ch.Manager)))
	}
	return s
}

// metadataDocs are objects no controller writes after syncd does, so
// that the live object is the one the apply left.
func metadataDocs(value string) []string {
	return []string{
		configMap("settings", map[string]string{"k": value}),
		"apiVersion: v1\nkind: Secret\nmetadata:\n  name: token\nstringData:\n  token: s3cr3t-value\n",
		"apiVersion: v1\nkind: Service\nmetadata:\n  name: web\nspec:\n  ports:\n  - port: 80\n",
	}
}

// TestCreatesAndDryRunsReadMetadataOnly: with a metadata client, a first
// sync's validation dry runs and creates (whose answer syncd reads only
// for its resourceVersion and managedFields) ask for metadata only, and
// the ChangeSet is the one whole answers give: the same actions, each
// change's resourceVersion and managedFields fingerprint those of the
// live object. An update, whose answer is compared with the object
// before, still reads the whole object and tells what changed.
func TestCreatesAndDryRunsReadMetadataOnly(t *testing.T) {
	whole, meta := newMetadataRig(t, false), newMetadataRig(t, true)
	wholeCS, wholeSeen := whole.apply(t, metadataDocs("v1")...)
	metaCS, metaSeen := meta.apply(t, metadataDocs("v1")...)

	want, got := whole.summary(t, wholeCS), meta.summary(t, metaCS)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("ChangeSet with metadata answers differs from the one with whole answers (-whole +metadata):\n%s", diff)
	}
	if slices.Contains(got.LiveRV, false) || slices.Contains(got.Owned, false) {
		t.Errorf("changes do not carry the live objects' resourceVersion %v and managedFields fingerprint %v", got.LiveRV, got.Owned)
	}
	for _, kind := range []string{"dry run", "write"} {
		if !metadataOnlyAnswers(metaSeen[kind]) {
			t.Errorf("%s requests with a metadata client asked for %q, want PartialObjectMetadata only", kind, metaSeen[kind])
		}
		if len(wholeSeen[kind]) == 0 || slices.ContainsFunc(wholeSeen[kind], func(a string) bool { return strings.Contains(a, "PartialObjectMetadata") }) {
			t.Errorf("%s requests without a metadata client asked for %q, want whole objects", kind, wholeSeen[kind])
		}
	}

	cs, seen := meta.apply(t, metadataDocs("v2")...)
	i := slices.IndexFunc(cs.Changes, func(c Change) bool { return c.Object.Kind == "ConfigMap" })
	if i < 0 {
		t.Fatalf("no change of the ConfigMap: %v", changes(cs))
	}
	c := cs.Changes[i]
	if c.Action != Configured || !slices.Contains(c.Changed, ".data.k") {
		t.Errorf("update of the ConfigMap: %s changing %v, want configured changing .data.k", c.Action, c.Changed)
	}
	if writes := seen["write"]; len(writes) == 0 || slices.ContainsFunc(writes, func(a string) bool { return strings.Contains(a, "PartialObjectMetadata") }) {
		t.Errorf("the updates' writes asked for %q, want whole objects", writes)
	}
}
