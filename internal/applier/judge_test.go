package applier

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"
)

// TestConfigMapAcceptable: the local judgement vouches for the plain
// ConfigMaps the API server accepts and for nothing the server refuses,
// or that has a part it does not check.
func TestConfigMapAcceptable(t *testing.T) {
	tests := map[string]struct {
		doc  string
		want bool
	}{
		"plain":                  {doc: "metadata: {name: a, namespace: ns}\ndata: {k: v, a.b_c-1: x}", want: true},
		"no data":                {doc: "metadata: {name: a, namespace: ns}", want: true},
		"labels and annotations": {doc: "metadata: {name: a, namespace: ns, labels: {app.kubernetes.io/name: web}, annotations: {example.com/x: 'any value: at all'}}", want: true},
		"immutable":              {doc: "metadata: {name: a, namespace: ns}\nimmutable: true", want: true},
		"a bad key":              {doc: "metadata: {name: a, namespace: ns}\ndata: {'a/b': v}"},
		"a bad name":             {doc: "metadata: {name: A_b, namespace: ns}"},
		"no namespace":           {doc: "metadata: {name: a}"},
		"a bad label value":      {doc: "metadata: {name: a, namespace: ns, labels: {k: 'not valid!'}}"},
		"a bad annotation key":   {doc: "metadata: {name: a, namespace: ns, annotations: {'a b': v}}"},
		"binaryData":             {doc: "metadata: {name: a, namespace: ns}\nbinaryData: {k: dg==}"},
		"owner references":       {doc: "metadata: {name: a, namespace: ns, ownerReferences: [{apiVersion: v1, kind: ConfigMap, name: b, uid: 1}]}"},
		"finalizers":             {doc: "metadata: {name: a, namespace: ns, finalizers: [example.com/f]}"},
		"a resourceVersion":      {doc: "metadata: {name: a, namespace: ns, resourceVersion: '1'}"},
		"a value not a string":   {doc: "metadata: {name: a, namespace: ns}\ndata: {k: 1}"},
		"immutable not a bool":   {doc: "metadata: {name: a, namespace: ns}\nimmutable: 'yes'"},
		"another field":          {doc: "metadata: {name: a, namespace: ns}\nspec: {}"},
		"another apiVersion":     {doc: "apiVersion: v2\nmetadata: {name: a, namespace: ns}"},
		"1 MiB of data":          {doc: "metadata: {name: a, namespace: ns}\ndata: {a: " + strings.Repeat("x", 1<<19) + ", b: " + strings.Repeat("x", 1<<19) + "}", want: true},
		"over 1 MiB of data":     {doc: "metadata: {name: a, namespace: ns}\ndata: {a: " + strings.Repeat("x", 1<<19) + ", b: " + strings.Repeat("x", 1<<19+1) + "}"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			obj := configMapObject(t, tc.doc)
			if got := configMapAcceptable(obj); got != tc.want {
				t.Errorf("configMapAcceptable = %v, want %v", got, tc.want)
			}
		})
	}
}

// configMapObject decodes doc as a ConfigMap (apiVersion v1 unless doc
// says otherwise).
func configMapObject(t *testing.T, doc string) *unstructured.Unstructured {
	t.Helper()
	obj := map[string]any{}
	if err := yaml.Unmarshal([]byte(doc), &obj); err != nil {
		t.Fatal(err)
	}
	if _, ok := obj["apiVersion"]; !ok {
		obj["apiVersion"] = "v1"
	}
	obj["kind"] = "ConfigMap"
	return &unstructured.Unstructured{Object: obj}
}

// TestConfigMapAcceptableAgreesWithTheServer: random ConfigMaps (names,
// keys, labels and annotations drawn from characters that are valid and
// that are not, sizes near the limit) are judged locally and dry-run as
// creates against the real API server: every one the judgement vouches
// for, the server accepts. Both answers are seen (the test fails if the
// judgement vouched for all or none).
func TestConfigMapAcceptableAgreesWithTheServer(t *testing.T) {
	c := newCluster(t, env.Config)
	ns := env.Namespace(t)
	ri := c.dyn.Resource(corev1.SchemeGroupVersion.WithResource("configmaps")).Namespace(ns)
	rnd := rand.New(rand.NewPCG(1, 2))
	var vouched, refused int
	for i := range 300 {
		obj := randomConfigMap(rnd, ns, i)
		local := configMapAcceptable(obj)
		_, err := ri.Create(context.Background(), obj, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}, FieldValidation: metav1.FieldValidationStrict})
		if local && err != nil {
			t.Errorf("vouched for %s, which the server refuses: %v", describe(obj), err)
		}
		if local {
			vouched++
		}
		if err != nil {
			refused++
		}
	}
	if vouched == 0 || vouched == 300 || refused == 0 {
		t.Fatalf("vouched for %d of 300, the server refused %d: the draws test nothing", vouched, refused)
	}
	t.Logf("vouched for %d of 300; the server refused %d", vouched, refused)
}

// randomConfigMap draws a ConfigMap whose parts are valid most of the
// time, each on its own.
func randomConfigMap(rnd *rand.Rand, ns string, i int) *unstructured.Unstructured {
	name := fmt.Sprintf("cm-%d", i)
	if rnd.IntN(6) == 0 {
		name = draw(rnd, "abcXYZ-._09/", 1+rnd.IntN(12))
	}
	data := map[string]any{}
	for range rnd.IntN(4) {
		key := draw(rnd, "abz-._09", 1+rnd.IntN(8))
		if rnd.IntN(8) == 0 {
			key = draw(rnd, "ab /:", 1+rnd.IntN(4))
		}
		size := rnd.IntN(64)
		if rnd.IntN(20) == 0 {
			size = 1<<19 + rnd.IntN(2) - 1
		}
		data[key] = strings.Repeat("v", size)
	}
	md := map[string]any{"name": name, "namespace": ns}
	if rnd.IntN(3) == 0 {
		md["labels"] = map[string]any{draw(rnd, "abz.-/", 1+rnd.IntN(10)): draw(rnd, "abz.-_ !", rnd.IntN(10))}
	}
	if rnd.IntN(3) == 0 {
		md["annotations"] = map[string]any{draw(rnd, "abz.-/ ", 1+rnd.IntN(10)): draw(rnd, "any thing", rnd.IntN(20))}
	}
	return &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": md, "data": data}}
}

// draw returns n characters drawn from set.
func draw(rnd *rand.Rand, set string, n int) string {
	b := make([]byte, n)
	for i := range b {
		b[i] = set[rnd.IntN(len(set))]
	}
	return string(b)
}

// describe names a drawn ConfigMap and its metadata, without its data.
func describe(obj *unstructured.Unstructured) string {
	var keys []string
	data, _, _ := unstructured.NestedMap(obj.Object, "data")
	for k, v := range data {
		keys = append(keys, fmt.Sprintf("%q (%d bytes)", k, len(v.(string))))
	}
	return fmt.Sprintf("%q labels %v annotations %v keys %v", obj.GetName(), obj.GetLabels(), obj.GetAnnotations(), keys)
}

// TestSeesConfigMapCreate: the admission rules that can see a ConfigMap
// create, and those that cannot.
func TestSeesConfigMapCreate(t *testing.T) {
	rule := func(ops []admissionv1.OperationType, groups, versions, resources []string, scope *admissionv1.ScopeType) admissionv1.RuleWithOperations {
		return admissionv1.RuleWithOperations{Operations: ops, Rule: admissionv1.Rule{APIGroups: groups, APIVersions: versions, Resources: resources, Scope: scope}}
	}
	create := []admissionv1.OperationType{admissionv1.Create}
	core, v1 := []string{""}, []string{"v1"}
	tests := map[string]struct {
		rule admissionv1.RuleWithOperations
		want bool
	}{
		"configmaps":               {rule(create, core, v1, []string{"configmaps"}, nil), true},
		"every operation":          {rule([]admissionv1.OperationType{admissionv1.OperationAll}, core, v1, []string{"configmaps"}, nil), true},
		"every resource":           {rule(create, core, v1, []string{"*"}, nil), true},
		"every resource and sub":   {rule(create, core, v1, []string{"*/*"}, nil), true},
		"every group and version":  {rule(create, []string{"*"}, []string{"*"}, []string{"*"}, nil), true},
		"namespaced scope":         {rule(create, core, v1, []string{"configmaps"}, ptr.To(admissionv1.NamespacedScope)), true},
		"any scope":                {rule(create, core, v1, []string{"configmaps"}, ptr.To(admissionv1.AllScopes)), true},
		"a subresource of them":    {rule(create, core, v1, []string{"configmaps/status"}, nil), true},
		"updates only":             {rule([]admissionv1.OperationType{admissionv1.Update, admissionv1.Delete}, core, v1, []string{"configmaps"}, nil), false},
		"pods":                     {rule(create, core, v1, []string{"pods", "secrets"}, nil), false},
		"another group":            {rule(create, []string{"apps"}, v1, []string{"*"}, nil), false},
		"another version":          {rule(create, core, []string{"v2"}, []string{"*"}, nil), false},
		"cluster-scoped ones only": {rule(create, core, v1, []string{"*"}, ptr.To(admissionv1.ClusterScope)), false},
		"a policy without a match": {everything, true},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if got := seesConfigMapCreate(tc.rule); got != tc.want {
				t.Errorf("seesConfigMapCreate = %v, want %v", got, tc.want)
			}
		})
	}
}

// factsCounter counts the dry runs (as dryRunCounter does) and the
// requests that read the local judgement's facts.
type factsCounter struct {
	dryRunCounter
	facts atomic.Int64
}

func (c *factsCounter) RoundTrip(req *http.Request) (*http.Response, error) {
	p := req.URL.Path
	if strings.Contains(p, "/admissionregistration.k8s.io/") || strings.HasSuffix(p, "/resourcequotas") ||
		strings.HasSuffix(p, "/selfsubjectaccessreviews") || (req.Method == http.MethodGet && strings.HasPrefix(p, "/api/v1/namespaces/") && strings.Count(p, "/") == 4) {
		c.facts.Add(1)
	}
	return c.dryRunCounter.RoundTrip(req)
}

// countingCluster returns a cluster of cfg's identity whose requests a
// factsCounter counts.
func countingCluster(t *testing.T, cfg *rest.Config) (*cluster, *factsCounter) {
	counter := &factsCounter{}
	cfg = rest.CopyConfig(cfg)
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { counter.next = rt; return counter })
	return newCluster(t, cfg), counter
}

// manyConfigMaps is n new ConfigMaps and a Deployment, one stage.
func manyConfigMaps(n int) []string {
	docs := []string{deployment("web", 0, "nginx:1.27")}
	for i := range n {
		docs = append(docs, configMap(fmt.Sprintf("cm-%d", i), map[string]string{"k": "v"}))
	}
	return docs
}

// TestLocalJudgementOfNewConfigMaps: with LocalValidation, a stage of 40
// new ConfigMaps dry-runs the first localAfter of them (and the
// Deployment) and judges the rest from the cluster's facts, read once;
// without it every object is dry-run. Either way everything is created.
func TestLocalJudgementOfNewConfigMaps(t *testing.T) {
	tests := map[string]struct {
		local            bool
		wantDry          int64
		wantFactsAtLeast int64
	}{
		"local":       {local: true, wantDry: localAfter + 1, wantFactsAtLeast: 4},
		"dry-run all": {local: false, wantDry: 41},
	}
	// The ChangeSet counts what the server counted, and the rest as
	// judged.
	wantValidation := func(dry int64) Validation { return Validation{DryRuns: int(dry), Judged: 41 - int(dry)} }
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			c, counter := countingCluster(t, env.Config)
			ns := env.Namespace(t)
			cs := c.apply(t, c.plan(t, appOf("app", ns), manyConfigMaps(40)...), ApplyOptions{LocalValidation: tc.local})
			if !cs.OK() {
				t.Fatalf("apply failed:%s", errs(cs))
			}
			if got := counter.dry.Load(); got != tc.wantDry {
				t.Errorf("%d dry runs, want %d", got, tc.wantDry)
			}
			if got, want := cs.Validation, wantValidation(tc.wantDry); got != want {
				t.Errorf("ChangeSet.Validation %+v, want %+v", got, want)
			}
			facts := counter.facts.Load()
			if tc.local && (facts < tc.wantFactsAtLeast || facts > 8) {
				t.Errorf("%d requests for the facts, want 4 to 8 (four lists at most, one namespace read, one quota list, two reviews)", facts)
			}
			if !tc.local && facts != 0 {
				t.Errorf("%d requests for the facts without LocalValidation, want none", facts)
			}
		})
	}
}

// TestLocalJudgementDefersToTheCluster: whatever in the cluster could
// refuse a new ConfigMap makes every one of them dry-run: a validating
// admission policy that refuses one, cm-33 (the stage is refused,
// nothing of it written, as without the judgement), a quota counting
// ConfigMaps, an identity that may not read the facts, one that may not
// create or patch ConfigMaps. An identity that may not read the facts is
// judged as syncd's own when syncd reads them for it (Options.Facts).
func TestLocalJudgementDefersToTheCluster(t *testing.T) {
	t.Run("an admission policy", func(t *testing.T) {
		ns := env.Namespace(t)
		env.DenyForbiddenKey(t, ns, "probe", nil)
		c, counter := countingCluster(t, env.Config)
		docs := manyConfigMaps(40)
		docs[34] = configMap("cm-33", map[string]string{"forbidden": "x"})
		cs := c.apply(t, c.plan(t, appOf("app", ns), docs...), ApplyOptions{LocalValidation: true})
		if cs.OK() || !strings.Contains(errs(cs), "cm-33") {
			t.Fatalf("the stage was not refused for cm-33:%s", errs(cs))
		}
		if got := counter.dry.Load(); got != 41 {
			t.Errorf("%d dry runs, want 41", got)
		}
		list, err := c.dyn.Resource(corev1.SchemeGroupVersion.WithResource("configmaps")).Namespace(ns).List(context.Background(), metav1.ListOptions{LabelSelector: "applyset.kubernetes.io/part-of"})
		if err != nil {
			t.Fatal(err)
		}
		if len(list.Items) != 0 {
			t.Errorf("%d ConfigMaps written, want none", len(list.Items))
		}
	})
	t.Run("a quota", func(t *testing.T) {
		ns := env.Namespace(t)
		quota := &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Name: "q"}, Spec: corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{"count/configmaps": resource.MustParse("100")}}}
		if _, err := env.Clientset(t).CoreV1().ResourceQuotas(ns).Create(context.Background(), quota, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		c, counter := countingCluster(t, env.Config)
		cs := c.apply(t, c.plan(t, appOf("app", ns), manyConfigMaps(40)...), ApplyOptions{LocalValidation: true})
		if !cs.OK() {
			t.Fatalf("apply failed:%s", errs(cs))
		}
		if got := counter.dry.Load(); got != 41 {
			t.Errorf("%d dry runs, want 41", got)
		}
	})
	identities := map[string]struct {
		cluster   []rbacv1.PolicyRule
		configMap []string
		// syncdFacts gives the applier syncd's (the admin's) client for
		// the facts, as the drivers do (Options.Facts).
		syncdFacts bool
		wantOK     bool
		wantDry    int64
	}{
		"an identity that may not read the facts": {
			configMap: []string{"get", "list", "watch", "create", "patch"}, wantOK: true, wantDry: 41,
		},
		"an identity that may not read the facts, which syncd reads": {
			configMap: []string{"get", "list", "watch", "create", "patch"}, syncdFacts: true, wantOK: true, wantDry: 17,
		},
		"an identity that may not create ConfigMaps, with syncd reading the facts": {
			configMap: []string{"get", "list", "watch", "patch"}, syncdFacts: true, wantDry: 41,
		},
		"an identity that may not patch ConfigMaps": {
			cluster: []rbacv1.PolicyRule{
				{APIGroups: []string{"admissionregistration.k8s.io"}, Resources: []string{"*"}, Verbs: []string{"list"}},
				{APIGroups: []string{""}, Resources: []string{"namespaces"}, Verbs: []string{"get"}},
				{APIGroups: []string{""}, Resources: []string{"resourcequotas"}, Verbs: []string{"list"}},
			},
			configMap: []string{"get", "list", "watch", "create"}, wantDry: 41,
		},
	}
	for name, tc := range identities {
		t.Run(name, func(t *testing.T) {
			ns := env.Namespace(t)
			sa, err := env.ServiceAccountConfig(context.Background(), ns, "writer")
			if err != nil {
				t.Fatal(err)
			}
			rules := []rbacv1.PolicyRule{
				{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: tc.configMap},
				{APIGroups: []string{"apps"}, Resources: []string{"deployments"}, Verbs: []string{"get", "list", "watch", "create", "patch"}},
			}
			if err := env.Grant(context.Background(), ns, "writer", ns, rules); err != nil {
				t.Fatal(err)
			}
			if tc.cluster != nil {
				if err := env.Grant(context.Background(), ns, "writer", "", tc.cluster); err != nil {
					t.Fatal(err)
				}
			}
			c, counter := countingCluster(t, sa)
			admin := newCluster(t, env.Config)
			opts := Options{}
			if tc.syncdFacts {
				opts.Facts = admin.dyn
			}
			cs, err := c.applier(t, opts).Apply(context.Background(), admin.plan(t, appOf("app", ns), manyConfigMaps(40)...), ApplyOptions{LocalValidation: true})
			if err != nil {
				t.Fatal(err)
			}
			if cs.OK() != tc.wantOK {
				t.Errorf("OK() = %v, want %v:%s", cs.OK(), tc.wantOK, errs(cs))
			}
			if got := counter.dry.Load(); got != tc.wantDry {
				t.Errorf("%d dry runs, want %d", got, tc.wantDry)
			}
		})
	}
}

// TestLocalJudgementIsRemembered: with the app's Accepted record, the
// retry of a stage refused because of one object dry-runs only that
// object, whether the others were dry-run or judged without one in the
// first attempt.
func TestLocalJudgementIsRemembered(t *testing.T) {
	c, counter := countingCluster(t, env.Config)
	ns := env.Namespace(t)
	docs := append(manyConfigMaps(40)[1:], refusedInputs["a bad label value"].doc)
	accepted := NewAccepted()
	for i, want := range []int64{localAfter, 1} {
		before := counter.dry.Load()
		cs := c.apply(t, c.plan(t, appOf("app", ns), docs...), ApplyOptions{LocalValidation: true, Accepted: accepted})
		if cs.OK() || !strings.Contains(errs(cs), "bad-label") {
			t.Fatalf("attempt %d: the stage was not refused for bad-label:%s", i+1, errs(cs))
		}
		got := counter.dry.Load() - before
		if i == 0 && got != want && got != want+1 {
			t.Errorf("attempt 1: %d dry runs, want %d or %d (the first %d new ConfigMaps, and bad-label unless among them)", got, want, want+1, localAfter)
		}
		if i == 1 && got != want {
			t.Errorf("attempt 2: %d dry runs, want %d (bad-label's)", got, want)
		}
		if v := cs.Validation; int64(v.DryRuns) != got || v.DryRuns+v.Judged+v.Known != len(docs) || (i == 1 && v.Known != len(docs)-1) {
			t.Errorf("attempt %d: ChangeSet.Validation %+v with %d dry runs sent, want them all counted (%d objects; on the retry all but bad-label known)", i+1, v, got, len(docs))
		}
	}
}
