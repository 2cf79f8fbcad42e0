package reconcile

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"

	"syncd.dev/syncd/internal/planner"
)

// The memo only decides which requests reach the server; what the server
// answers is canned here. What a dry run answers is proven against a real
// API server by the Preview tests and cmd/syncd's plan tests.

var configMaps = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}

// server is a dynamic client that records the requests it is sent and
// answers them from objs (by name; absent is NotFound).
type server struct {
	dynamic.Interface // nil: a request the memo should not send panics

	mu        sync.Mutex
	sent      []string
	objs      map[string]bool
	denyList  bool
	denyApply bool
}

func (s *server) record(req string) {
	s.mu.Lock()
	s.sent = append(s.sent, req)
	s.mu.Unlock()
}

func (s *server) Resource(schema.GroupVersionResource) dynamic.NamespaceableResourceInterface {
	return &serverResource{s: s}
}

type serverResource struct {
	dynamic.NamespaceableResourceInterface
	s  *server
	ns string
}

func (r *serverResource) Namespace(ns string) dynamic.ResourceInterface {
	return &serverResource{s: r.s, ns: ns}
}

func (r *serverResource) object(name string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion("v1")
	u.SetKind("ConfigMap")
	u.SetNamespace(r.ns)
	u.SetName(name)
	return u
}

func (r *serverResource) Get(_ context.Context, name string, opts metav1.GetOptions, _ ...string) (*unstructured.Unstructured, error) {
	req := "GET " + name
	if opts.ResourceVersion != "" {
		req += " rv=" + opts.ResourceVersion
	}
	r.s.record(req)
	if !r.s.objs[name] {
		return nil, apierrors.NewNotFound(configMaps.GroupResource(), name)
	}
	return r.object(name), nil
}

func (r *serverResource) List(_ context.Context, opts metav1.ListOptions) (*unstructured.UnstructuredList, error) {
	r.s.record("LIST " + r.ns)
	if r.s.denyList {
		return nil, apierrors.NewForbidden(configMaps.GroupResource(), "", fmt.Errorf("no list"))
	}
	list := &unstructured.UnstructuredList{}
	for name := range r.s.objs {
		list.Items = append(list.Items, *r.object(name))
	}
	return list, nil
}

func (r *serverResource) Patch(_ context.Context, name string, pt types.PatchType, data []byte, opts metav1.PatchOptions, _ ...string) (*unstructured.Unstructured, error) {
	req := fmt.Sprintf("PATCH %s %s manager=%s force=%v dryRun=%v body=%s", name, pt, opts.FieldManager, opts.Force != nil && *opts.Force, opts.DryRun, data)
	r.s.record(req)
	if r.s.denyApply {
		return nil, apierrors.NewForbidden(configMaps.GroupResource(), name, fmt.Errorf("no patch"))
	}
	return r.object(name), nil
}

// memoRequest is one request sent through the memo.
type memoRequest func(ctx context.Context, c *dryRunClient) error

func get(name string) memoRequest {
	return func(ctx context.Context, c *dryRunClient) error {
		_, err := c.Resource(configMaps).Namespace("ns").Get(ctx, name, metav1.GetOptions{})
		return ignoreNotFound(err)
	}
}

func getAt(name, rv string) memoRequest {
	return func(ctx context.Context, c *dryRunClient) error {
		_, err := c.Resource(configMaps).Namespace("ns").Get(ctx, name, metav1.GetOptions{ResourceVersion: rv})
		return ignoreNotFound(err)
	}
}

// applyReq is one server-side apply of name's body by manager.
type applyReq struct {
	name, manager, body string
	force, dryRun       bool
}

func apply(a applyReq) memoRequest {
	return func(ctx context.Context, c *dryRunClient) error {
		opts := metav1.PatchOptions{FieldManager: a.manager, Force: &a.force}
		if a.dryRun {
			opts.DryRun = []string{metav1.DryRunAll}
		}
		_, err := c.Resource(configMaps).Namespace("ns").Patch(ctx, a.name, types.ApplyPatchType, []byte(a.body), opts)
		if apierrors.IsForbidden(err) {
			return nil
		}
		return err
	}
}

func prime(names ...string) memoRequest {
	return func(ctx context.Context, c *dryRunClient) error {
		mapper := meta.NewDefaultRESTMapper(nil)
		mapper.Add(schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}, meta.RESTScopeNamespace)
		plan := &planner.Plan{}
		for _, n := range names {
			plan.Objects = append(plan.Objects, planner.Object{Ref: planner.ObjectRef{Version: "v1", Kind: "ConfigMap", Namespace: "ns", Name: n}})
		}
		return c.prime(ctx, mapper, plan, 2)
	}
}

func ignoreNotFound(err error) error {
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

// names returns n object names, "cm-00" on.
func names(n int) []string {
	var out []string
	for i := range n {
		out = append(out, fmt.Sprintf("cm-%02d", i))
	}
	return out
}

func sentPatch(a applyReq) string {
	dry := "[]"
	if a.dryRun {
		dry = "[All]"
	}
	return fmt.Sprintf("PATCH %s %s manager=%s force=%v dryRun=%s body=%s", a.name, types.ApplyPatchType, a.manager, a.force, dry, a.body)
}

func TestDryRunClient(t *testing.T) {
	dry := applyReq{name: "a", manager: "syncd", body: `{"data":{"k":"v"}}`, dryRun: true}
	forced := dry
	forced.force = true
	other := dry
	other.body = `{"data":{"k":"w"}}`
	real := dry
	real.dryRun = false
	many := names(primeThreshold)
	tests := map[string]struct {
		objs      []string
		denyList  bool
		denyApply bool
		requests  []memoRequest
		want      []string
	}{
		"a GET twice is sent once": {
			objs: []string{"a"}, requests: []memoRequest{get("a"), get("a")},
			want: []string{"GET a"},
		},
		"a NotFound is remembered": {
			requests: []memoRequest{get("a"), get("a")},
			want:     []string{"GET a"},
		},
		"a GET at a resourceVersion is always sent": {
			objs: []string{"a"}, requests: []memoRequest{get("a"), getAt("a", "7"), getAt("a", "7")},
			want: []string{"GET a", "GET a rv=7", "GET a rv=7"},
		},
		"an identical dry-run apply is sent once": {
			requests: []memoRequest{apply(dry), apply(dry)},
			want:     []string{sentPatch(dry)},
		},
		"a forced dry run after its unforced twin is answered from memory": {
			requests: []memoRequest{apply(dry), apply(forced)},
			want:     []string{sentPatch(dry)},
		},
		"an unforced dry run after a forced one is sent": {
			requests: []memoRequest{apply(forced), apply(dry)},
			want:     []string{sentPatch(forced), sentPatch(dry)},
		},
		"another body is sent": {
			requests: []memoRequest{apply(dry), apply(other)},
			want:     []string{sentPatch(dry), sentPatch(other)},
		},
		"a real apply is always sent": {
			requests: []memoRequest{apply(real), apply(real)},
			want:     []string{sentPatch(real), sentPatch(real)},
		},
		"a refused dry run is not remembered": {
			denyApply: true, requests: []memoRequest{apply(dry), apply(dry)},
			want: []string{sentPatch(dry), sentPatch(dry)},
		},
		"prime lists a resource with primeThreshold objects once, found and missing alike": {
			objs: many[1:], requests: []memoRequest{prime(many...), get(many[0]), get(many[1]), get(many[len(many)-1])},
			want: []string{"LIST ns"},
		},
		"prime leaves fewer objects to GETs": {
			objs: many[1:], requests: []memoRequest{prime(many[1:]...), get(many[1])},
			want: []string{"GET " + many[1]},
		},
		"a LIST that fails leaves the objects to GETs": {
			objs: many, denyList: true, requests: []memoRequest{prime(many...), get(many[0]), get(many[0])},
			want: []string{"LIST ns", "GET " + many[0]},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			s := &server{objs: map[string]bool{}, denyList: tc.denyList, denyApply: tc.denyApply}
			for _, n := range tc.objs {
				s.objs[n] = true
			}
			c := newDryRunClient(s)
			for i, req := range tc.requests {
				if err := req(context.Background(), c); err != nil {
					t.Fatalf("request %d: %v", i, err)
				}
			}
			if diff := cmp.Diff(tc.want, s.sent); diff != "" {
				t.Errorf("requests sent (-want +got):\n%s", diff)
			}
		})
	}
}
