package applier

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"

	"syncd.dev/syncd/internal/config"
	"syncd.dev/syncd/internal/planner"
)

// patchQueries records the query of every PATCH a client sends.
type patchQueries struct {
	next http.RoundTripper
	mu   sync.Mutex
	seen []string
}

func (p *patchQueries) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Method == http.MethodPatch {
		p.mu.Lock()
		p.seen = append(p.seen, req.URL.RawQuery)
		p.mu.Unlock()
	}
	return p.next.RoundTrip(req)
}

// TestApplyAsksForOneDecode: every apply request of a validated sync, dry
// runs and writes, asks the API server for fieldValidation=Ignore, so
// that the server decodes each body once (applyFieldValidation).
func TestApplyAsksForOneDecode(t *testing.T) {
	ns := env.Namespace(t)
	pq := &patchQueries{}
	cfg := rest.CopyConfig(env.Config)
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { pq.next = rt; return pq })
	c := newCluster(t, cfg)
	plan := c.plan(t, config.App{Name: "once", Namespace: ns}, configMap("one", map[string]string{"k": "v"}), deployment("web", 1, "nginx:1.27"))
	cs, err := c.applier(t, Options{}).Apply(context.Background(), plan, ApplyOptions{})
	if err != nil || !cs.OK() {
		t.Fatalf("Apply: %v %s", err, errs(cs))
	}
	dryRuns, writes := 0, 0
	for _, q := range pq.seen {
		if !strings.Contains(q, "fieldValidation=Ignore") {
			t.Errorf("apply request %q does not ask for fieldValidation=Ignore", q)
		}
		if strings.Contains(q, "dryRun=All") {
			dryRuns++
		} else {
			writes++
		}
	}
	if dryRuns != 2 || writes != 2 {
		t.Errorf("sent %d dry runs and %d writes, want 2 and 2: %q", dryRuns, writes, pq.seen)
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
