package applier

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"

	"syncd.dev/syncd/internal/planner"
	"syncd.dev/syncd/internal/redact"
)

// refusedInputs are objects the API server refuses (and the planner lets
// through), with a fragment of the server's reason for each: what a new
// user's bad commit looks like.
var refusedInputs = map[string]struct {
	doc    string
	reason string
}{
	"a bad label value": {
		doc:    "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: bad-label\n  labels:\n    tier: \"not a label value!\"\ndata:\n  k: v\n",
		reason: "metadata.labels: Invalid value",
	},
	"a Deployment without a selector": {
		doc:    "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: no-selector\nspec:\n  template:\n    metadata:\n      labels:\n        app: x\n    spec:\n      containers:\n      - name: app\n        image: nginx:1.27\n",
		reason: "spec.selector: Required value",
	},
	"a Secret whose data is not base64": {
		doc:    "apiVersion: v1\nkind: Secret\nmetadata:\n  name: not-base64\ndata:\n  password: \"hunter2!!\"\n",
		reason: "illegal base64 data",
	},
	"an invalid name": {
		doc:    "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: Bad_Name\ndata:\n  k: v\n",
		reason: "metadata.name: Invalid value",
	},
	"a namespace that does not exist": {
		doc:    "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: elsewhere\n  namespace: no-such-namespace-syncd\ndata:\n  k: v\n",
		reason: `namespaces "no-such-namespace-syncd" not found`,
	},
}

// goodNeighbours are valid objects of the same stage as every refused
// input.
func goodNeighbours() []string {
	return []string{
		configMap("good", map[string]string{"k": "v"}),
		"apiVersion: v1\nkind: Secret\nmetadata:\n  name: good-secret\nstringData:\n  token: s3cr3t-value\n",
		deployment("good-web", 0, "nginx:1.27"),
	}
}

// TestRefusedStageWritesNothing: each input the API server refuses, next
// to valid objects of the same stage, fails with the object named and the
// server's reason, and nothing of the stage is written; all five at once
// are each named. With validation off, the valid objects are created and
// only the refused one fails (the behaviour before validation).
func TestRefusedStageWritesNothing(t *testing.T) {
	type input struct{ doc, reason string }
	type refusalCase struct {
		bad            []input
		skipValidation bool
	}
	tests := map[string]refusalCase{}
	var all []input
	for name, in := range refusedInputs {
		tests[name] = refusalCase{bad: []input{{in.doc, in.reason}}}
		tests[name+", validation off"] = refusalCase{bad: []input{{in.doc, in.reason}}, skipValidation: true}
		all = append(all, input{in.doc, in.reason})
	}
	tests["all five at once"] = refusalCase{bad: all}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			c := newCluster(t, env.Config)
			ns := env.Namespace(t)
			docs := goodNeighbours()
			for _, b := range tc.bad {
				docs = append(docs, b.doc)
			}
			plan := c.plan(t, appOf("app", ns), docs...)
			cs := c.apply(t, plan, ApplyOptions{RecordManagers: true, SkipValidation: tc.skipValidation})

			refused := map[string]bool{}
			for _, ch := range cs.Changes {
				if ch.Action == Failed {
					refused[ch.Object.Name] = true
				}
			}
			if len(refused) != len(tc.bad) {
				t.Errorf("failed objects %v, want %d refused%s", refused, len(tc.bad), errs(cs))
			}
			for _, b := range tc.bad {
				if !strings.Contains(errs(cs), b.reason) {
					t.Errorf("no change error names the server's reason %q:%s", b.reason, errs(cs))
				}
			}
			for _, ch := range cs.Changes {
				if ch.Action != Failed {
					continue
				}
				var status apierrors.APIStatus
				if !errors.As(ch.Err, &status) {
					t.Errorf("%s: error does not wrap the server's status: %v", ch.Object, ch.Err)
				}
				var sr *StageRefusedError
				if got := errors.As(ch.Err, &sr); got == tc.skipValidation {
					t.Errorf("%s: StageRefusedError %v with validation off %v: %v", ch.Object, got, tc.skipValidation, ch.Err)
				}
				if !strings.Contains(ch.Err.Error(), ch.Object.String()) {
					t.Errorf("error does not name %s: %v", ch.Object, ch.Err)
				}
				for _, value := range []string{"hunter2!!", "not a label value!"} {
					if strings.Contains(redact.Error(ch.Err), value) {
						t.Errorf("scrubbed error shows the value %q: %s", value, redact.Error(ch.Err))
					}
				}
			}
			for _, ch := range cs.Changes {
				if ch.Err != nil {
					t.Logf("%s %s: %s", ch.Object, ch.Action, redact.Error(ch.Err))
				}
			}
			if cs.OK() {
				t.Error("OK() = true with refused objects")
			}

			wantGood := "skipped"
			if tc.skipValidation {
				wantGood = "created"
			}
			for _, ch := range cs.Changes {
				if !refused[ch.Object.Name] && string(ch.Action) != wantGood {
					t.Errorf("%s %s, want %s%s", ch.Object, ch.Action, wantGood, errs(cs))
				}
			}
			for _, o := range []struct {
				gvr  schema.GroupVersionResource
				name string
			}{{configMaps, "good"}, {secrets, "good-secret"}, {deployments, "good-web"}} {
				_, err := c.resource(t, o.gvr, ns).Get(context.Background(), o.name, metav1.GetOptions{})
				switch {
				case tc.skipValidation && err != nil:
					t.Errorf("%s %s not created with validation off: %v", o.gvr.Resource, o.name, err)
				case !tc.skipValidation && !apierrors.IsNotFound(err):
					t.Errorf("%s %s of a refused stage: get err = %v, want NotFound (nothing written)", o.gvr.Resource, o.name, err)
				}
			}
		})
	}
}

// TestRefusedStageStopsLaterStages: a refusal in an earlier stage (a
// ClusterRole rule without verbs) writes nothing of its stage or of the
// later ones; an earlier stage that was accepted stays written.
func TestRefusedStageStopsLaterStages(t *testing.T) {
	c := newCluster(t, env.Config)
	ns := env.Namespace(t)
	created := ns + "-made"
	t.Cleanup(func() {
		_ = c.dyn.Resource(namespaces).Delete(context.Background(), created, metav1.DeleteOptions{})
	})
	plan := c.plan(t, appOf("app", ns),
		"apiVersion: v1\nkind: Namespace\nmetadata:\n  name: "+created+"\n",
		"apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata:\n  name: "+ns+"-no-verbs\nrules:\n- apiGroups: [\"\"]\n  resources: [pods]\n",
		configMap("later", map[string]string{"k": "v"}))
	cs := c.apply(t, plan, ApplyOptions{})
	wantChanges(t, cs,
		"Namespace "+created+" syncd-app created",
		"ClusterRole "+ns+"-no-verbs syncd-app failed",
		"ConfigMap later syncd-app skipped")
	t.Logf("refusal: %v", cs.Changes[1].Err)
	for _, want := range []string{"ClusterRole " + ns + "-no-verbs", "rules[0].verbs: Required value", "nothing of stage cluster or of later stages was applied"} {
		if err := cs.Changes[1].Err; err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("refusal lacks %q: %v", want, err)
		}
	}
	if _, err := c.resource(t, configMaps, ns).Get(context.Background(), "later", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("ConfigMap of a later stage: get err = %v, want NotFound", err)
	}
}

var namespaces = schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}

// TestValidateNamespaceOfSameApply: a namespace and objects in it, in one
// apply, are no false refusal: each stage is validated just before it is
// written, after the namespace exists.
func TestValidateNamespaceOfSameApply(t *testing.T) {
	c := newCluster(t, env.Config)
	ns := env.Namespace(t) + "-new"
	t.Cleanup(func() {
		_ = c.dyn.Resource(namespaces).Delete(context.Background(), ns, metav1.DeleteOptions{})
	})
	plan := c.plan(t, appOf("app", ns),
		"apiVersion: v1\nkind: Namespace\nmetadata:\n  name: "+ns+"\n",
		configMap("cfg", map[string]string{"k": "v"}),
		deployment("web", 0, "nginx:1.27"))
	wantChanges(t, c.apply(t, plan, ApplyOptions{}),
		"Namespace "+ns+" syncd-app created",
		"ConfigMap cfg syncd-app created",
		"Deployment web syncd-app created")
}

// dryRunCounter counts the PATCH requests, and the dry runs (dryRun=All)
// among them and among the POSTs: a validation dry run is a create for an
// object that does not exist, an apply for one that does.
type dryRunCounter struct {
	next         http.RoundTripper
	dry, patches atomic.Int64
}

func (d *dryRunCounter) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Method == http.MethodPatch {
		d.patches.Add(1)
	}
	if (req.Method == http.MethodPatch || req.Method == http.MethodPost) && req.URL.Query().Get("dryRun") == metav1.DryRunAll {
		d.dry.Add(1)
	}
	return d.next.RoundTrip(req)
}

// TestValidateOnlyWhatIsWritten: objects skipped as unchanged need no dry
// run; a one-object change sends one validation dry run (and its write);
// validation off sends none.
func TestValidateOnlyWhatIsWritten(t *testing.T) {
	admin := newCluster(t, env.Config)
	ns := env.Namespace(t)
	app := appOf("app", ns)
	docs := func(changed string) []string {
		return []string{
			configMap("a", map[string]string{"k": "v"}),
			configMap("b", map[string]string{"k": changed}),
			configMap("c", map[string]string{"k": "v"}),
		}
	}
	admin.apply(t, admin.plan(t, app, docs("v")...), ApplyOptions{})
	skipAllBut := func(name string) func(*planner.Object, *unstructured.Unstructured) bool {
		return func(o *planner.Object, _ *unstructured.Unstructured) bool { return o.Ref.Name != name }
	}
	tests := map[string]struct {
		skipValidation bool
		wantDry        int64
	}{
		"validation on":  {wantDry: 1},
		"validation off": {skipValidation: true, wantDry: 0},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			counter := &dryRunCounter{}
			cfg := rest.CopyConfig(env.Config)
			cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { counter.next = rt; return counter })
			c := newCluster(t, cfg)
			plan := admin.plan(t, app, docs(name)...)
			cs, err := c.applier(t, Options{}).Apply(context.Background(), plan, ApplyOptions{Skip: skipAllBut("b"), SkipValidation: tc.skipValidation})
			if err != nil {
				t.Fatal(err)
			}
			wantChanges(t, cs, "ConfigMap a syncd-app unchanged", "ConfigMap b syncd-app configured", "ConfigMap c syncd-app unchanged")
			if got := counter.dry.Load(); got != tc.wantDry {
				t.Errorf("%d dry-run requests, want %d (of %d PATCHes)", got, tc.wantDry, counter.patches.Load())
			}
		})
	}
}

// TestRetryDryRunsOnlyWhatIsUnknown: after a stage refused because of one
// object, the next Apply with the app's Accepted record dry-runs only the
// refused object (the others' outcome is known: same body, still absent),
// and once it is fixed, only the fixed one before the stage is written.
// An object changed in the cluster since its accepted dry run is dry-run
// again. Without the record every object is dry-run each time.
func TestRetryDryRunsOnlyWhatIsUnknown(t *testing.T) {
	bad := refusedInputs["a bad label value"].doc
	fixed := configMap("bad-label", map[string]string{"k": "v"})
	type step struct {
		doc       string
		wantDry   int64
		wantWrite bool
	}
	tests := map[string]struct {
		accepted *Accepted
		steps    []step
	}{
		"with the app's record": {accepted: NewAccepted(), steps: []step{
			{doc: bad, wantDry: 4},
			{doc: bad, wantDry: 1},
			{doc: fixed, wantDry: 1, wantWrite: true},
		}},
		"without": {steps: []step{
			{doc: bad, wantDry: 4},
			{doc: bad, wantDry: 4},
			{doc: fixed, wantDry: 4, wantWrite: true},
		}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			counter := &dryRunCounter{}
			cfg := rest.CopyConfig(env.Config)
			cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { counter.next = rt; return counter })
			c := newCluster(t, cfg)
			ns := env.Namespace(t)
			for i, st := range tc.steps {
				before := counter.dry.Load()
				plan := c.plan(t, appOf("app", ns), append(goodNeighbours(), st.doc)...)
				cs := c.apply(t, plan, ApplyOptions{RecordManagers: true, Accepted: tc.accepted})
				if got := counter.dry.Load() - before; got != st.wantDry {
					t.Errorf("step %d: %d dry runs, want %d", i, got, st.wantDry)
				}
				if cs.OK() != st.wantWrite {
					t.Errorf("step %d: OK() = %v, want %v:%s", i, cs.OK(), st.wantWrite, errs(cs))
				}
			}
		})
	}
}

// TestAcceptedOutcomeNeedsTheSameLiveObject: an object whose accepted dry
// run was against a resourceVersion the object no longer has is dry-run
// again.
func TestAcceptedOutcomeNeedsTheSameLiveObject(t *testing.T) {
	counter := &dryRunCounter{}
	cfg := rest.CopyConfig(env.Config)
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { counter.next = rt; return counter })
	c := newCluster(t, cfg)
	ns := env.Namespace(t)
	app := appOf("app", ns)
	c.apply(t, c.plan(t, app, configMap("a", map[string]string{"k": "v"}), configMap("b", map[string]string{"k": "v"})), ApplyOptions{})
	accepted := NewAccepted()
	refused := func() *planner.Plan {
		return c.plan(t, app, configMap("a", map[string]string{"k": "git"}), configMap("b", map[string]string{"k": "git"}), refusedInputs["an invalid name"].doc)
	}
	c.apply(t, refused(), ApplyOptions{Accepted: accepted})
	cm, err := c.resource(t, configMaps, ns).Get(context.Background(), "a", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := unstructured.SetNestedField(cm.Object, "someone", "data", "other"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.resource(t, configMaps, ns).Update(context.Background(), cm, metav1.UpdateOptions{FieldManager: "someone"}); err != nil {
		t.Fatal(err)
	}
	before := counter.dry.Load()
	c.apply(t, refused(), ApplyOptions{Accepted: accepted})
	// a changed (its resourceVersion moved) and the refused one; b's
	// outcome is known.
	if got := counter.dry.Load() - before; got != 2 {
		t.Errorf("%d dry runs after another writer changed one object, want 2", got)
	}
}
