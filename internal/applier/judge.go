package applier

import (
	"context"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/client-go/dynamic"

	"syncd.dev/syncd/internal/planner"
)

// A new ConfigMap's validation dry run asks the API server what syncd can
// know without asking: the server judges a ConfigMap create by its own
// validation (the metadata, the keys, the size), which is fixed and small
// enough to repeat exactly, and by what is in the cluster: admission
// webhooks and policies that see ConfigMaps, a quota that counts them,
// the namespace (it must exist and not be terminating), and whether the
// identity may create and patch ConfigMaps there. When none of those can
// refuse it and its own validation accepts it, the dry run's outcome is
// known: accepted. The local judgement never refuses: anything it cannot
// vouch for is dry-run as before, so a refusal is always the server's.
//
// It pays only when a stage creates many ConfigMaps (a first sync):
// reading the cluster's facts costs a few requests per run and per
// namespace, so the first localAfter new ConfigMaps of a run are dry-run
// and only the ones after them are judged here.

// localAfter is how many new ConfigMaps of a run are dry-run before the
// rest are judged locally: more than the requests the facts cost (four
// lists for the cluster, four requests per namespace), so that a sync
// creating a few ConfigMaps sends no more requests than before.
const localAfter = 16

// maxConfigMapData is the API server's limit on a ConfigMap's data
// (core.MaxSecretSize, 1 MiB), summed over its values.
const maxConfigMapData = 1 << 20

// localJudge holds one run's facts about the cluster, read once when the
// first ConfigMap is judged locally.
type localJudge struct {
	seen       atomic.Int64
	admission  sync.Once
	admits     bool
	namespaces sync.Map // name → *namespaceFacts
}

// namespaceFacts is whether one namespace admits a new ConfigMap of the
// run's identity with nothing but the API server's own validation.
type namespaceFacts struct {
	once   sync.Once
	admits bool
}

// judgedLocally reports whether the validation dry run of s, the whole of
// what Git wants of t, has a known outcome without a request: t is a
// ConfigMap that does not exist, checked against its schema by the
// planner, enough new ConfigMaps came before it in the run, its own
// validation accepts it and the cluster has nothing else that could
// refuse it.
func (r *objectRun) judgedLocally(ctx context.Context, t *target, s planner.Slice) bool {
	if !r.ao.LocalValidation || t.live != nil || !isConfigMap(t.obj.Ref) || !t.obj.SchemaChecked() {
		return false
	}
	if r.local.seen.Add(1) <= localAfter {
		return false
	}
	return configMapAcceptable(s.Object) && r.clusterAdmits(ctx) && r.namespaceAdmits(ctx, t.obj.Ref.Namespace)
}

// isConfigMap reports whether ref is a core/v1 ConfigMap.
func isConfigMap(ref planner.ObjectRef) bool {
	return ref.Group == "" && ref.Kind == "ConfigMap"
}

// configMapAcceptable reports whether the API server's validation of a
// ConfigMap create accepts obj (core validation's ValidateConfigMap):
// valid metadata, every data key a valid ConfigMap key, the values at
// most 1 MiB together. It vouches only for the plain shape: an object
// with anything else (binaryData, owner references, finalizers, any
// other metadata or field) is left to the dry run.
func configMapAcceptable(obj *unstructured.Unstructured) bool {
	if obj.GetAPIVersion() != "v1" || !onlyKeys(obj.Object, "apiVersion", "kind", "metadata", "data", "immutable") {
		return false
	}
	md, ok := obj.Object["metadata"].(map[string]any)
	if !ok || !onlyKeys(md, "name", "namespace", "labels", "annotations") {
		return false
	}
	if errs := apivalidation.ValidateObjectMetaAccessor(obj, true, apivalidation.NameIsDNSSubdomain, field.NewPath("metadata")); len(errs) > 0 {
		return false
	}
	if v, ok := obj.Object["immutable"]; ok {
		if _, isBool := v.(bool); !isBool {
			return false
		}
	}
	return dataAcceptable(obj.Object["data"])
}

// dataAcceptable reports whether a ConfigMap's data is a map of valid
// keys to strings of at most maxConfigMapData bytes together (nil: no
// data).
func dataAcceptable(v any) bool {
	if v == nil {
		return true
	}
	data, ok := v.(map[string]any)
	if !ok {
		return false
	}
	size := 0
	for k, v := range data {
		s, ok := v.(string)
		if !ok || len(validation.IsConfigMapKey(k)) > 0 {
			return false
		}
		size += len(s)
	}
	return size <= maxConfigMapData
}

// onlyKeys reports whether every key of m is one of keys.
func onlyKeys(m map[string]any, keys ...string) bool {
	for k := range m {
		if !slices.Contains(keys, k) {
			return false
		}
	}
	return true
}

// clusterAdmits reports whether no admission webhook or policy of the
// cluster can see a ConfigMap create, read once per run. A list the
// identity may not read, or that fails, admits nothing: every ConfigMap
// is dry-run.
func (r *objectRun) clusterAdmits(ctx context.Context) bool {
	r.local.admission.Do(func() {
		r.local.admits = r.a.noAdmissionSeesConfigMaps(ctx)
	})
	return r.local.admits
}

// facts is the client the cluster's facts are read through
// (Options.Facts).
func (a *Applier) facts() dynamic.Interface {
	if a.opts.Facts != nil {
		return a.opts.Facts
	}
	return a.dyn
}

// admissionKinds are the kinds whose objects can make the API server's
// admission refuse or change an object.
var admissionKinds = []schema.GroupKind{
	{Group: "admissionregistration.k8s.io", Kind: "ValidatingWebhookConfiguration"},
	{Group: "admissionregistration.k8s.io", Kind: "MutatingWebhookConfiguration"},
	{Group: "admissionregistration.k8s.io", Kind: "ValidatingAdmissionPolicy"},
	{Group: "admissionregistration.k8s.io", Kind: "MutatingAdmissionPolicy"},
}

// noAdmissionSeesConfigMaps lists the admission kinds the cluster serves
// and reports whether none of their rules matches a ConfigMap create.
// A kind the cluster does not serve has no objects.
func (a *Applier) noAdmissionSeesConfigMaps(ctx context.Context) bool {
	for _, gk := range admissionKinds {
		mapping, err := a.mapper.RESTMapping(gk)
		if meta.IsNoMatchError(err) {
			continue
		}
		if err != nil {
			return false
		}
		rules, err := a.admissionRules(ctx, mapping)
		if err != nil || slices.ContainsFunc(rules, seesConfigMapCreate) {
			return false
		}
	}
	return true
}

// admissionRules lists the objects of one admission kind and returns
// their rules: each webhook's rules, each policy's match constraints
// (a policy without them matches everything, so it gets a rule that
// does).
func (a *Applier) admissionRules(ctx context.Context, mapping *meta.RESTMapping) ([]admissionv1.RuleWithOperations, error) {
	list, err := a.facts().Resource(mapping.Resource).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	var rules []admissionv1.RuleWithOperations
	for _, item := range list.Items {
		var o admissionObject
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(item.Object, &o); err != nil {
			return nil, err
		}
		rules = append(rules, o.rules()...)
	}
	return rules, nil
}

// admissionObject is what admissionRules reads of a webhook
// configuration or an admission policy, whatever its version: the
// webhooks' rules, or the policy's match constraints.
type admissionObject struct {
	Webhooks []struct {
		Rules []admissionv1.RuleWithOperations `json:"rules"`
	} `json:"webhooks"`
	Spec *struct {
		MatchConstraints *admissionv1.MatchResources `json:"matchConstraints"`
	} `json:"spec"`
}

// everything is a rule that matches every request.
var everything = admissionv1.RuleWithOperations{
	Operations: []admissionv1.OperationType{admissionv1.OperationAll},
	Rule:       admissionv1.Rule{APIGroups: []string{"*"}, APIVersions: []string{"*"}, Resources: []string{"*"}},
}

// rules returns the object's rules.
func (o admissionObject) rules() []admissionv1.RuleWithOperations {
	var out []admissionv1.RuleWithOperations
	for _, w := range o.Webhooks {
		out = append(out, w.Rules...)
	}
	if o.Spec == nil {
		return out
	}
	if o.Spec.MatchConstraints == nil {
		return append(out, everything)
	}
	for _, r := range o.Spec.MatchConstraints.ResourceRules {
		out = append(out, r.RuleWithOperations)
	}
	return out
}

// seesConfigMapCreate reports whether rule can match the create of a
// core/v1 ConfigMap. Selectors and match conditions are not evaluated:
// a rule that names ConfigMaps (or every resource) sees them.
func seesConfigMapCreate(rule admissionv1.RuleWithOperations) bool {
	ops := slices.ContainsFunc(rule.Operations, func(op admissionv1.OperationType) bool {
		return op == admissionv1.Create || op == admissionv1.OperationAll
	})
	return ops && matches(rule.APIGroups, "") && matches(rule.APIVersions, "v1") &&
		slices.ContainsFunc(rule.Resources, func(res string) bool {
			return res == "*" || res == "*/*" || strings.HasPrefix(res, "configmaps")
		}) && (rule.Scope == nil || *rule.Scope != admissionv1.ClusterScope)
}

// matches reports whether values hold want or the wildcard.
func matches(values []string, want string) bool {
	return slices.Contains(values, want) || slices.Contains(values, "*")
}

// namespaceAdmits reports whether the namespace admits a new ConfigMap of
// the run's identity by the API server's own rules only, read once per
// namespace and run: it exists and is not terminating, no quota counts
// ConfigMaps, and the identity may create and patch ConfigMaps there.
func (r *objectRun) namespaceAdmits(ctx context.Context, namespace string) bool {
	v, _ := r.local.namespaces.LoadOrStore(namespace, &namespaceFacts{})
	f := v.(*namespaceFacts)
	f.once.Do(func() {
		f.admits = r.a.namespaceActive(ctx, namespace) && r.a.noConfigMapQuota(ctx, namespace) &&
			r.a.mayWriteConfigMaps(ctx, namespace)
	})
	return f.admits
}

var (
	namespacesResource = corev1.SchemeGroupVersion.WithResource("namespaces")
	quotasResource     = corev1.SchemeGroupVersion.WithResource("resourcequotas")
	accessResource     = authorizationv1.SchemeGroupVersion.WithResource("selfsubjectaccessreviews")
)

// namespaceActive reports whether the namespace exists and is not being
// deleted.
func (a *Applier) namespaceActive(ctx context.Context, namespace string) bool {
	ns, err := a.facts().Resource(namespacesResource).Get(ctx, namespace, metav1.GetOptions{})
	if err != nil || ns.GetDeletionTimestamp() != nil {
		return false
	}
	phase, _, _ := unstructured.NestedString(ns.Object, "status", "phase")
	return phase == string(corev1.NamespaceActive)
}

// noConfigMapQuota reports whether no ResourceQuota of the namespace
// counts ConfigMaps (configmaps or count/configmaps).
func (a *Applier) noConfigMapQuota(ctx context.Context, namespace string) bool {
	list, err := a.facts().Resource(quotasResource).Namespace(namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return false
	}
	for _, item := range list.Items {
		hard, _, _ := unstructured.NestedMap(item.Object, "spec", "hard")
		for res := range hard {
			if strings.Contains(res, "configmaps") {
				return false
			}
		}
	}
	return true
}

// mayWriteConfigMaps reports whether the identity may create and patch
// ConfigMaps in the namespace (a server-side apply that creates needs
// both).
func (a *Applier) mayWriteConfigMaps(ctx context.Context, namespace string) bool {
	for _, verb := range []string{"create", "patch"} {
		if !a.allowed(ctx, authorizationv1.ResourceAttributes{Namespace: namespace, Verb: verb, Resource: "configmaps"}) {
			return false
		}
	}
	return true
}

// allowed asks the API server whether the identity may do what attrs
// says (a SelfSubjectAccessReview); an error is a no.
func (a *Applier) allowed(ctx context.Context, attrs authorizationv1.ResourceAttributes) bool {
	review := &authorizationv1.SelfSubjectAccessReview{
		TypeMeta: metav1.TypeMeta{APIVersion: "authorization.k8s.io/v1", Kind: "SelfSubjectAccessReview"},
		Spec:     authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &attrs},
	}
	body, err := runtime.DefaultUnstructuredConverter.ToUnstructured(review)
	if err != nil {
		return false
	}
	out, err := a.dyn.Resource(accessResource).Create(ctx, &unstructured.Unstructured{Object: body}, metav1.CreateOptions{})
	if err != nil {
		return false
	}
	ok, _, _ := unstructured.NestedBool(out.Object, "status", "allowed")
	return ok
}
