package inventory

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/yaml"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"syncd.dev/syncd/internal/planner"
)

// TestSyncdOwn is the reserved-object rule, offline: what each rule
// covers, what installsSyncd lifts and what it does not.
func TestSyncdOwn(t *testing.T) {
	res := Reserved{Namespaces: []string{"syncd-system"}, InventoryNamespace: "syncd-inventory"}
	tests := map[string]struct {
		manifest  string
		installer bool
		want      ReservedRule
	}{
		"the config ConfigMap": {
			manifest: "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: syncd-config, namespace: syncd-system}\n",
			want:     RuleNamespace,
		},
		"any object in syncd's namespace": {
			manifest: "apiVersion: coordination.k8s.io/v1\nkind: Lease\nmetadata: {name: anything, namespace: syncd-system}\n",
			want:     RuleNamespace,
		},
		"a Secret in the inventory namespace": {
			manifest: "apiVersion: v1\nkind: Secret\nmetadata: {name: git-credentials, namespace: syncd-inventory}\n",
			want:     RuleNamespace,
		},
		"syncd's namespace itself": {
			manifest: "apiVersion: v1\nkind: Namespace\nmetadata: {name: syncd-system}\n",
			want:     RuleNamespace,
		},
		"the inventory namespace itself": {
			manifest: "apiVersion: v1\nkind: Namespace\nmetadata: {name: syncd-inventory}\n",
			want:     RuleNamespace,
		},
		"another app's inventory Secret": {
			manifest: "apiVersion: v1\nkind: Secret\nmetadata: {name: syncd-applyset-other, namespace: syncd-inventory}\n",
			want:     RuleInventory,
		},
		"an inventory-named Secret in any namespace": {
			manifest: "apiVersion: v1\nkind: Secret\nmetadata: {name: syncd-applyset-other, namespace: team-a}\n",
			want:     RuleInventory,
		},
		"an object labelled as an ApplySet parent": {
			manifest: "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: parent, namespace: team-a, labels: {applyset.kubernetes.io/id: applyset-x-v1}}\n",
			want:     RuleInventory,
		},
		"syncd's ClusterRoleBinding": {
			manifest: "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRoleBinding\nmetadata: {name: syncd-manager}\nroleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: syncd-manager}\nsubjects: []\n",
			want:     RuleRBAC,
		},
		"syncd's ClusterRole": {
			manifest: "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata: {name: syncd-metrics-reader}\n",
			want:     RuleRBAC,
		},
		"a ClusterRole named syncd": {
			manifest: "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata: {name: syncd}\n",
			want:     RuleRBAC,
		},
		"a RoleBinding granting syncd's ClusterRole": {
			manifest: "apiVersion: rbac.authorization.k8s.io/v1\nkind: RoleBinding\nmetadata: {name: mine, namespace: team-a}\nroleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: syncd-manager}\n",
			want:     RuleRBAC,
		},
		"a binding of a Role named syncd-manager is the app's own": {
			manifest: "apiVersion: rbac.authorization.k8s.io/v1\nkind: RoleBinding\nmetadata: {name: mine, namespace: team-a}\nroleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: syncd-manager}\n",
		},
		"labelled part of syncd": {
			manifest: "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x, namespace: team-a, labels: {app.kubernetes.io/part-of: syncd}}\n",
			want:     RuleLabel,
		},
		"labelled name syncd": {
			manifest: "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata: {name: x.example.com, labels: {app.kubernetes.io/name: syncd}}\n",
			want:     RuleLabel,
		},
		"syncd's App CRD": {
			manifest: "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata: {name: apps.syncd.dev}\n",
			want:     RuleCRD,
		},
		"syncd's GitSource CRD": {
			manifest: "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata: {name: gitsources.syncd.dev}\n",
			want:     RuleCRD,
		},
		"a CRD of another group ending in syncd.dev's letters": {
			manifest: "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata: {name: apps.notsyncd.dev}\n",
		},
		"a CRD of a group under syncd.dev (another API, not syncd's)": {
			manifest: "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata: {name: widgets.warn.e2e.syncd.dev}\n",
		},
		"a ClusterRole aggregated into syncd-manager": {
			manifest: "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata: {name: team-a-extra, labels: {syncd.dev/aggregate-to-manager: \"true\"}}\n",
			want:     RuleRBAC,
		},
		"a Role with the aggregation label is the app's own": {
			manifest: "apiVersion: rbac.authorization.k8s.io/v1\nkind: Role\nmetadata: {name: r, namespace: team-a, labels: {syncd.dev/aggregate-to-manager: \"true\"}}\n",
		},
		"installer: syncd's App CRD": {
			manifest:  "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata: {name: apps.syncd.dev}\n",
			installer: true,
		},
		"an app's ConfigMap": {
			manifest: "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: syncd-config, namespace: team-a}\n",
		},
		"a ClusterRole whose name only starts with the letters syncd": {
			manifest: "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata: {name: syncdemo}\n",
		},
		"a non-RBAC cluster object named syncd-*": {
			manifest: "apiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata: {name: syncd-high}\nvalue: 1\n",
		},
		"a Secret named syncd-applyset without the dash": {
			manifest: "apiVersion: v1\nkind: Secret\nmetadata: {name: syncd-applyset, namespace: team-a}\n",
		},
		"installer: syncd's namespace": {
			manifest:  "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: syncd-config, namespace: syncd-system}\n",
			installer: true,
		},
		"installer: syncd's ClusterRoleBinding": {
			manifest:  "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRoleBinding\nmetadata: {name: syncd-manager}\nroleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: syncd-manager}\n",
			installer: true,
		},
		"installer: labelled part of syncd": {
			manifest:  "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x, namespace: team-a, labels: {app.kubernetes.io/part-of: syncd}}\n",
			installer: true,
		},
		"installer: another app's inventory Secret stays refused": {
			manifest:  "apiVersion: v1\nkind: Secret\nmetadata: {name: syncd-applyset-other, namespace: syncd-inventory}\n",
			installer: true,
			want:      RuleInventory,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			target := TargetOf(object(t, tc.manifest))
			target.InstallsSyncd = tc.installer
			got, why := res.SyncdOwn(target)
			if got != tc.want {
				t.Errorf("SyncdOwn = %q (%s), want %q", got, why, tc.want)
			}
			if (got == "") != (why == "") {
				t.Errorf("SyncdOwn = %q with reason %q: a rule needs a reason and only a rule has one", got, why)
			}
		})
	}
}

// TestRefuse: every reserved object of a plan is listed, each naming its
// origin, the object and what to do; the others are not.
func TestRefuse(t *testing.T) {
	res := Reserved{Namespaces: []string{"syncd-system"}, InventoryNamespace: "syncd-system"}
	plan := &planner.Plan{App: "web"}
	for i, m := range []string{
		"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: web, namespace: team-a}\n",
		"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: syncd-config, namespace: syncd-system}\n",
		"apiVersion: v1\nkind: Secret\nmetadata: {name: syncd-applyset-other, namespace: syncd-system}\n",
	} {
		obj := object(t, m)
		plan.Objects = append(plan.Objects, planner.Object{Ref: planner.RefOf(obj), Origin: "app.yaml#" + string(rune('1'+i)), Desired: obj})
	}
	if err := res.Refuse(App{Name: "web"}, &planner.Plan{App: "web", Objects: plan.Objects[:1]}); err != nil {
		t.Errorf("Refuse of an app's own ConfigMap: %v", err)
	}
	err := res.Refuse(App{Name: "web"}, plan)
	var errs ReservedErrors
	if !errors.As(err, &errs) {
		t.Fatalf("Refuse = %v, want ReservedErrors", err)
	}
	type got struct {
		Object string
		Rule   ReservedRule
	}
	var gots []got
	for _, e := range errs {
		gots = append(gots, got{e.Object.String(), e.Rule})
	}
	want := []got{{"ConfigMap syncd-system/syncd-config", RuleNamespace}, {"Secret syncd-system/syncd-applyset-other", RuleInventory}}
	if diff := cmp.Diff(want, gots); diff != "" {
		t.Errorf("refused (-want +got):\n%s", diff)
	}
	msg := err.Error()
	for _, s := range []string{
		"app.yaml#2: ConfigMap syncd-system/syncd-config is syncd's own object (it is in namespace syncd-system, syncd's namespace and the inventory namespace)",
		"remove it from app web's manifests, or, if app web installs syncd itself, set installsSyncd: true",
		"app.yaml#3: Secret syncd-system/syncd-applyset-other is syncd's own object (a Secret named syncd-applyset-* is an app's inventory, written only by syncd): no app may create, change or delete it; remove it from app web's manifests\n",
	} {
		if !strings.Contains(msg+"\n", s) {
			t.Errorf("error does not say %q:\n%s", s, msg)
		}
	}
	// An App object cannot set installsSyncd: its refusal does not offer it.
	objErr := res.Refuse(App{Name: "team-a-web", Owner: "App team-a/web"}, &planner.Plan{Objects: plan.Objects[1:2]})
	if objErr == nil || strings.Contains(objErr.Error(), "set installsSyncd") || !strings.Contains(objErr.Error(), "an App object cannot install syncd") {
		t.Errorf("Refuse for an App object: %v; want a refusal without the installsSyncd hint", objErr)
	}
	if err := res.Refuse(App{Name: "syncd", InstallsSyncd: true}, &planner.Plan{Objects: plan.Objects[:2]}); err != nil {
		t.Errorf("Refuse for the app that installs syncd: %v", err)
	}
}

func object(t *testing.T, manifest string) *unstructured.Unstructured {
	t.Helper()
	obj := &unstructured.Unstructured{}
	if err := yaml.Unmarshal([]byte(manifest), &obj.Object); err != nil {
		t.Fatal(err)
	}
	return obj
}
