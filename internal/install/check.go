package install

import (
	"context"
	"fmt"
	"slices"
	"strings"

	chartutil "helm.sh/helm/v4/pkg/chart/v2/util"
	authorizationv1 "k8s.io/api/authorization/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	authzclient "k8s.io/client-go/kubernetes/typed/authorization/v1"
	"sigs.k8s.io/cli-utils/pkg/kstatus/status"
)

// State is the outcome of one check.
type State string

// The states of a Result.
const (
	Pass State = "PASS"
	Fail State = "FAIL"
	Skip State = "SKIP"
)

// Result is one check's outcome: what was checked and what was found.
type Result struct {
	Check  string
	State  State
	Detail string
}

// String is the result's line: "PASS  what: detail".
func (r Result) String() string { return fmt.Sprintf("%s  %s: %s", r.State, r.Check, r.Detail) }

// Failed reports whether any result is Fail.
func Failed(rs []Result) bool {
	return slices.ContainsFunc(rs, func(r Result) bool { return r.State == Fail })
}

// Cluster is what the checks read the cluster through.
type Cluster struct {
	Discovery discovery.DiscoveryInterface
	Dynamic   dynamic.Interface
	Mapper    meta.RESTMapper
	Access    authzclient.SelfSubjectAccessReviewsGetter
}

// CheckOptions are what Check checks.
type CheckOptions struct {
	// Pre checks before an install: the API server, the rights to install
	// (instead of syncd's), and the sources; not the CRDs nor the
	// Deployment.
	Pre bool
	// Objects are the rendered chart (Render), the install checked
	// against.
	Objects []*unstructured.Unstructured
	// KubeVersion is the chart's kubeVersion range.
	KubeVersion string
	// Probe checks that each source answers; nil: sources are not checked.
	Probe *Prober
	// ConfigSources are the sources of a syncd.yaml to probe beside the
	// cluster's source objects.
	ConfigSources []Endpoint
	// Namespace is the namespace syncd is installed in; checked to exist
	// after an install.
	Namespace string
}

// Check runs the checks of opts against cl and returns their results, in
// order. An API server that does not answer ends the checks there.
func Check(ctx context.Context, cl Cluster, opts CheckOptions) []Result {
	api := checkAPIServer(cl.Discovery, opts.KubeVersion)
	if api.State == Fail {
		return []Result{api}
	}
	out := []Result{api}
	if opts.Pre {
		out = append(out, checkAccess(ctx, cl.Access, installRights(cl.Mapper, opts.Objects), "RBAC to install")...)
	} else {
		out = append(out, checkNamespace(ctx, cl.Dynamic, opts.Namespace))
		out = append(out, checkCRDs(ctx, cl.Dynamic, opts.Objects)...)
		out = append(out, checkAccess(ctx, cl.Access, syncdRights(opts.Objects), "RBAC syncd needs")...)
		out = append(out, checkRollouts(ctx, cl, opts.Objects)...)
	}
	if opts.Probe != nil {
		eps, errRes := clusterSources(ctx, cl)
		out = append(out, errRes...)
		out = append(out, opts.Probe.ProbeAll(ctx, append(slices.Clone(opts.ConfigSources), eps...))...)
	}
	return out
}

// checkAPIServer reads the server's version and checks it against the
// chart's kubeVersion range.
func checkAPIServer(d discovery.ServerVersionInterface, kubeVersion string) Result {
	r := Result{Check: "API server"}
	v, err := d.ServerVersion()
	if err != nil {
		r.State, r.Detail = Fail, fmt.Sprintf("not reachable: %v", err)
		return r
	}
	if kubeVersion != "" && !chartutil.IsCompatibleRange(kubeVersion, v.GitVersion) {
		r.State, r.Detail = Fail, fmt.Sprintf("Kubernetes %s is not supported: syncd needs %s", v.GitVersion, kubeVersion)
		return r
	}
	r.State, r.Detail = Pass, fmt.Sprintf("Kubernetes %s (syncd needs %s)", v.GitVersion, kubeVersion)
	return r
}

var crdResource = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

var namespaceResource = schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}

// checkNamespace checks that the namespace syncd is installed in exists:
// checked against the wrong one, the Deployment's check would only SKIP
// ("not installed") and the RBAC checks pass for a namespace nothing runs
// in.
func checkNamespace(ctx context.Context, dyn dynamic.Interface, ns string) Result {
	r := Result{Check: "Namespace " + ns}
	_, err := dyn.Resource(namespaceResource).Get(ctx, ns, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		r.State, r.Detail = Fail, "does not exist: pass -n with the namespace syncd is installed in, or install it there (syncd install -n "+ns+")"
	case apierrors.IsForbidden(err):
		r.State, r.Detail = Skip, "this identity may not read namespaces"
	case err != nil:
		r.State, r.Detail = Fail, err.Error()
	default:
		r.State, r.Detail = Pass, "exists"
	}
	return r
}

// checkCRDs compares each CRD of objs with the cluster's: installed,
// established and with the same spec (after the API server's defaults).
func checkCRDs(ctx context.Context, dyn dynamic.Interface, objs []*unstructured.Unstructured) []Result {
	var out []Result
	for _, o := range objs {
		if o.GetKind() != "CustomResourceDefinition" {
			continue
		}
		r := Result{Check: "CRD " + o.GetName()}
		r.State, r.Detail = compareCRD(ctx, dyn, o)
		out = append(out, r)
	}
	return out
}

func compareCRD(ctx context.Context, dyn dynamic.Interface, want *unstructured.Unstructured) (State, string) {
	live, err := dyn.Resource(crdResource).Get(ctx, want.GetName(), metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return Fail, "not installed (syncd install installs it)"
	}
	if apierrors.IsForbidden(err) {
		return Skip, "this identity may not read CRDs (syncd needs not)"
	}
	if err != nil {
		return Fail, err.Error()
	}
	w, err := typedCRD(want)
	if err != nil {
		return Fail, err.Error()
	}
	l, err := typedCRD(live)
	if err != nil {
		return Fail, err.Error()
	}
	if !established(l) {
		return Fail, "installed but not established (the API server does not serve it yet)"
	}
	if field := crdDifference(w.Spec, l.Spec); field != "" {
		return Fail, fmt.Sprintf("installed, but spec.%s differs from this syncd's (%s): run syncd install to update it", field, want.GetAnnotations()["controller-gen.kubebuilder.io/version"])
	}
	return Pass, "installed and current"
}

func typedCRD(u *unstructured.Unstructured) (*apiextensionsv1.CustomResourceDefinition, error) {
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, crd); err != nil {
		return nil, fmt.Errorf("decode: %w", err)
	}
	apiextensionsv1.SetObjectDefaults_CustomResourceDefinition(crd)
	if crd.Spec.Conversion == nil {
		crd.Spec.Conversion = &apiextensionsv1.CustomResourceConversion{Strategy: apiextensionsv1.NoneConverter}
	}
	return crd, nil
}

func established(crd *apiextensionsv1.CustomResourceDefinition) bool {
	for _, c := range crd.Status.Conditions {
		if c.Type == apiextensionsv1.Established {
			return c.Status == apiextensionsv1.ConditionTrue
		}
	}
	return false
}

// crdDifference names the first field of spec that differs, "" when none.
func crdDifference(want, live apiextensionsv1.CustomResourceDefinitionSpec) string {
	fields := []struct {
		name string
		a, b any
	}{
		{"group", want.Group, live.Group},
		{"names", want.Names, live.Names},
		{"scope", want.Scope, live.Scope},
		{"versions", want.Versions, live.Versions},
		{"conversion", want.Conversion, live.Conversion},
		{"preserveUnknownFields", want.PreserveUnknownFields, live.PreserveUnknownFields},
	}
	for _, f := range fields {
		if !equality.Semantic.DeepEqual(f.a, f.b) {
			return f.name
		}
	}
	return ""
}

// checkRollouts reads each Deployment of objs: SKIP when it is not
// installed, PASS when kstatus says Current.
func checkRollouts(ctx context.Context, cl Cluster, objs []*unstructured.Unstructured) []Result {
	a := NewApplier(cl.Dynamic, cl.Mapper)
	var out []Result
	for _, o := range objs {
		if o.GetKind() != "Deployment" {
			continue
		}
		r := Result{Check: Describe(o)}
		rs, err := a.Rollouts(ctx, []*unstructured.Unstructured{o})
		switch {
		case apierrors.IsNotFound(err):
			r.State, r.Detail = Skip, "not installed"
		case apierrors.IsForbidden(err):
			r.State, r.Detail = Skip, "this identity may not read it"
		case err != nil:
			r.State, r.Detail = Fail, err.Error()
		case rs[0].Status == status.CurrentStatus:
			r.State, r.Detail = Pass, "available ("+rs[0].Message+")"
		default:
			r.State, r.Detail = Fail, fmt.Sprintf("%s: %s", rs[0].Status, rs[0].Message)
		}
		out = append(out, r)
	}
	return out
}

// Right is a set of access reviews checked together, one rule.
type Right struct {
	Name    string
	Reviews []authorizationv1.ResourceAttributes
}

// checkAccess asks the API server, with one SelfSubjectAccessReview per
// attribute, whether the identity in use has each right.
func checkAccess(ctx context.Context, access authzclient.SelfSubjectAccessReviewsGetter, rights []Right, what string) []Result {
	var out []Result
	for _, right := range rights {
		r := Result{Check: what + ": " + right.Name}
		var denied []string
		for _, ra := range right.Reviews {
			ok, err := allowed(ctx, access, ra)
			if err != nil {
				r.State, r.Detail = Fail, err.Error()
				break
			}
			if !ok {
				denied = append(denied, describeAttributes(ra))
			}
		}
		switch {
		case r.State == Fail:
		case len(denied) > 0:
			r.State, r.Detail = Fail, "denied: "+strings.Join(denied, ", ")
		default:
			r.State, r.Detail = Pass, "allowed"
		}
		out = append(out, r)
	}
	return out
}

func allowed(ctx context.Context, access authzclient.SelfSubjectAccessReviewsGetter, ra authorizationv1.ResourceAttributes) (bool, error) {
	ssar := &authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &ra}}
	res, err := access.SelfSubjectAccessReviews().Create(ctx, ssar, metav1.CreateOptions{})
	if err != nil {
		return false, fmt.Errorf("SelfSubjectAccessReview: %w", err)
	}
	return res.Status.Allowed, nil
}

func describeAttributes(ra authorizationv1.ResourceAttributes) string {
	res := ra.Resource
	if ra.Subresource != "" {
		res += "/" + ra.Subresource
	}
	if ra.Group != "" {
		res += "." + ra.Group
	}
	if ra.Name != "" {
		res += " " + ra.Name
	}
	if ra.Namespace != "" {
		res += " in " + ra.Namespace
	}
	return ra.Verb + " " + res
}

// installRights are create and patch of every object of objs (Server-Side
// Apply is a patch; one that creates is authorized as create too).
func installRights(mapper meta.RESTMapper, objs []*unstructured.Unstructured) []Right {
	byKind := map[string]*Right{}
	var order []string
	for _, o := range objs {
		gvk := o.GroupVersionKind()
		resource := strings.ToLower(gvk.Kind) + "s"
		if m, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version); err == nil {
			resource = m.Resource.Resource
		}
		name := o.GetKind()
		if byKind[name] == nil {
			byKind[name] = &Right{Name: "create, patch " + resource}
			order = append(order, name)
		}
		for _, verb := range []string{"create", "patch"} {
			ra := authorizationv1.ResourceAttributes{Verb: verb, Group: gvk.Group, Resource: resource, Namespace: o.GetNamespace()}
			if !slices.Contains(byKind[name].Reviews, ra) {
				byKind[name].Reviews = append(byKind[name].Reviews, ra)
			}
		}
	}
	out := make([]Right, 0, len(order))
	for _, k := range order {
		out = append(out, *byKind[k])
	}
	return out
}

// syncdRights are the rules the chart grants syncd's ServiceAccount: its
// Role (in its namespace) and the ClusterRoles its ClusterRoleBindings
// name (for the aggregated syncd-manager, the ClusterRoles aggregated into
// it). Rules of non-resource URLs are left out.
func syncdRights(objs []*unstructured.Unstructured) []Right {
	var out []Right
	for _, role := range boundRoles(objs) {
		var typed rbacv1.ClusterRole // a Role's rules have the same shape
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(map[string]any{"rules": role.Object["rules"]}, &typed); err != nil {
			out = append(out, Right{Name: fmt.Sprintf("%s %s: rules: %v", role.GetKind(), role.GetName(), err)})
			continue
		}
		for i, rule := range typed.Rules {
			if len(rule.Resources) == 0 {
				continue
			}
			out = append(out, Right{
				Name:    fmt.Sprintf("%s %s rule %d (%s %s)", role.GetKind(), role.GetName(), i+1, strings.Join(rule.Verbs, ","), strings.Join(rule.Resources, ",")),
				Reviews: ruleReviews(rule, role.GetNamespace()),
			})
		}
	}
	return out
}

// ruleReviews expands a rule into one review per verb, group, resource
// and name.
func ruleReviews(rule rbacv1.PolicyRule, ns string) []authorizationv1.ResourceAttributes {
	names := rule.ResourceNames
	if len(names) == 0 {
		names = []string{""}
	}
	var out []authorizationv1.ResourceAttributes
	for _, verb := range rule.Verbs {
		for _, group := range rule.APIGroups {
			for _, res := range rule.Resources {
				resource, sub, _ := strings.Cut(res, "/")
				for _, name := range names {
					out = append(out, authorizationv1.ResourceAttributes{Verb: verb, Group: group, Resource: resource, Subresource: sub, Name: name, Namespace: ns})
				}
			}
		}
	}
	return out
}

// boundRoles returns the Roles and ClusterRoles of objs that the
// ServiceAccount syncd is bound to.
func boundRoles(objs []*unstructured.Unstructured) []*unstructured.Unstructured {
	bound := map[string]bool{}
	for _, o := range objs {
		if (o.GetKind() == "RoleBinding" || o.GetKind() == "ClusterRoleBinding") && bindsSyncd(o) {
			kind, _, _ := unstructured.NestedString(o.Object, "roleRef", "kind")
			name, _, _ := unstructured.NestedString(o.Object, "roleRef", "name")
			bound[kind+"/"+name] = true
		}
	}
	var out []*unstructured.Unstructured
	for _, o := range objs {
		aggregated := bound["ClusterRole/syncd-manager"] && o.GetLabels()["syncd.dev/aggregate-to-manager"] == "true"
		if (o.GetKind() == "Role" || o.GetKind() == "ClusterRole") && (bound[o.GetKind()+"/"+o.GetName()] || aggregated) {
			out = append(out, o)
		}
	}
	return out
}

func bindsSyncd(binding *unstructured.Unstructured) bool {
	subjects, _, _ := unstructured.NestedSlice(binding.Object, "subjects")
	for _, s := range subjects {
		if m, ok := s.(map[string]any); ok && m["kind"] == "ServiceAccount" && m["name"] == "syncd" {
			return true
		}
	}
	return false
}
