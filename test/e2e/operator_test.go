package e2e

import (
	"fmt"
	"strings"
	"testing"

	"syncd.dev/syncd/internal/testenv/gitserver"
)

// operatorRepo is an operator's install in the layout kubebuilder
// generates (config/default building ../crd, ../rbac, ../manager and
// ../webhook with a namespace, a name prefix, a patch and replacements
// that write the webhook Service's namespace and name into an annotation
// with a delimiter), with its CRD guarded by the operator's own
// ValidatingAdmissionPolicy (a bundle-version annotation check, as the
// Gateway API's safe-upgrades policy does).
func operatorRepo(tag string) map[string][]byte {
	return map[string][]byte{
		"config/default/kustomization.yaml": []byte(`namespace: widget-system
namePrefix: widget-
labels:
  - pairs: {app.kubernetes.io/name: widget-operator}
resources: [../crd, ../rbac, ../manager, ../webhook]
patches:
  - path: manager_webhook_patch.yaml
    target: {kind: Deployment, name: controller-manager}
replacements:
  - source: {kind: Service, version: v1, name: webhook-service, fieldPath: .metadata.namespace}
    targets:
      - select: {kind: ValidatingWebhookConfiguration}
        fieldPaths:
          - metadata.annotations.[widgets.example.com/serving-from]
        options: {delimiter: /, index: 0, create: true}
  - source: {kind: Service, version: v1, name: webhook-service, fieldPath: .metadata.name}
    targets:
      - select: {kind: ValidatingWebhookConfiguration}
        fieldPaths:
          - metadata.annotations.[widgets.example.com/serving-from]
        options: {delimiter: /, index: 1, create: true}
`),
		"config/default/manager_webhook_patch.yaml": []byte(`apiVersion: apps/v1
kind: Deployment
metadata: {name: controller-manager, namespace: system}
spec:
  template:
    spec:
      containers:
        - name: manager
          ports: [{containerPort: 9443, name: webhook-server, protocol: TCP}]
`),
		"config/crd/kustomization.yaml": []byte(`resources: [bases/widgets.example.com_widgets.yaml, safe_upgrades.yaml]
commonAnnotations:
  widgets.example.com/bundle-version: v1.2.0
`),
		"config/crd/bases/widgets.example.com_widgets.yaml": []byte(`apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.widgets.example.com}
spec:
  group: widgets.example.com
  names: {kind: Widget, listKind: WidgetList, plural: widgets, singular: widget}
  scope: Namespaced
  versions:
    - name: v1
      served: true
      storage: true
      subresources: {status: {}}
      schema:
        openAPIV3Schema:
          type: object
          properties:
            spec:
              type: object
              properties:
                size: {type: integer, minimum: 1}
            status:
              type: object
              x-kubernetes-preserve-unknown-fields: true
`),
		"config/crd/safe_upgrades.yaml": []byte(`apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata: {name: safe-upgrades.widgets.example.com}
spec:
  failurePolicy: Fail
  matchConstraints:
    resourceRules:
      - apiGroups: [apiextensions.k8s.io]
        apiVersions: [v1]
        operations: [CREATE, UPDATE]
        resources: [customresourcedefinitions]
  validations:
    - expression: "object.spec.group != 'widgets.example.com' || (has(object.metadata.annotations) && 'widgets.example.com/bundle-version' in object.metadata.annotations && !object.metadata.annotations['widgets.example.com/bundle-version'].startsWith('v0'))"
      message: "widget CRDs need a released bundle-version annotation"
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata: {name: safe-upgrades.widgets.example.com}
spec:
  policyName: safe-upgrades.widgets.example.com
  validationActions: [Deny]
`),
		"config/rbac/kustomization.yaml": []byte("resources: [service_account.yaml, role.yaml, role_binding.yaml, leader_election_role.yaml]\n"),
		"config/rbac/service_account.yaml": []byte(`apiVersion: v1
kind: ServiceAccount
metadata: {name: controller-manager, namespace: system}
`),
		"config/rbac/role.yaml": []byte(`apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: manager-role}
rules:
  - apiGroups: [widgets.example.com]
    resources: [widgets, widgets/status]
    verbs: [get, list, watch, update, patch]
`),
		"config/rbac/role_binding.yaml": []byte(`apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: manager-rolebinding}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: manager-role}
subjects:
  - {kind: ServiceAccount, name: controller-manager, namespace: system}
`),
		"config/rbac/leader_election_role.yaml": []byte(`apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: leader-election-role, namespace: system}
rules:
  - apiGroups: [coordination.k8s.io]
    resources: [leases]
    verbs: [get, list, watch, create, update, patch, delete]
`),
		"config/manager/kustomization.yaml": []byte(fmt.Sprintf(`resources: [manager.yaml]
images:
  - name: controller
    newName: ghcr.io/example/widget-operator
    newTag: %q
`, tag)),
		"config/manager/manager.yaml": []byte(`apiVersion: v1
kind: Namespace
metadata: {name: system, labels: {control-plane: controller-manager}}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: controller-manager, namespace: system, labels: {control-plane: controller-manager}}
spec:
  replicas: 1
  selector: {matchLabels: {control-plane: controller-manager}}
  template:
    metadata: {labels: {control-plane: controller-manager}}
    spec:
      serviceAccountName: controller-manager
      containers:
        - name: manager
          image: controller:latest
          args: [--leader-elect]
`),
		"config/webhook/kustomization.yaml": []byte("resources: [manifests.yaml, service.yaml]\n"),
		"config/webhook/service.yaml": []byte(`apiVersion: v1
kind: Service
metadata: {name: webhook-service, namespace: system}
spec:
  ports: [{port: 443, protocol: TCP, targetPort: 9443}]
  selector: {control-plane: controller-manager}
`),
		"config/webhook/manifests.yaml": []byte(`apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingWebhookConfiguration
metadata: {name: validating-webhook-configuration}
webhooks:
  - name: vwidget.widgets.example.com
    admissionReviewVersions: [v1]
    sideEffects: None
    failurePolicy: Fail
    clientConfig:
      service: {name: webhook-service, namespace: system, path: /validate-widgets-example-com-v1-widget}
    rules:
      - apiGroups: [widgets.example.com]
        apiVersions: [v1]
        operations: [CREATE, UPDATE]
        resources: [widgets]
`),
	}
}

// TestJourneyOperatorLayout: an operator installed from its kubebuilder
// layout (sibling directories, name prefix, replacements with a
// delimiter), its CRD under its own admission policy, which the API
// server's type checker writes the status of: render, apply, re-applies
// that write nothing although the API server wrote the CRD's and the
// policy's status in between, plan, a new image tag.
func TestJourneyOperatorLayout(t *testing.T) {
	w := newWorkspace(t)
	srv := gitserver.StartTest(t)
	repo := srv.NewTestRepo(t, "widget-operator")
	if _, err := repo.Commit("operator 1.2.0", operatorRepo("1.2.0")); err != nil {
		t.Fatal(err)
	}
	w.writeConfig(fmt.Sprintf(`apiVersion: syncd/v1alpha1
kind: Config
sources:
  - name: operator
    git: {url: %s, branch: main, interval: 1m}
apps:
  - name: widget-operator
    source: operator
    path: config/default
    namespace: widget-system
`, repo.URL))
	cl := newCluster(t)
	j := &journey{
		w: w, app: "widget-operator",
		render: []string{"--path", repo.Work + "/config/default"},
		rendered: []string{
			"name: widget-controller-manager",
			"image: ghcr.io/example/widget-operator:1.2.0",
			"widgets.example.com/serving-from: widget-system/widget-webhook-service",
			"name: widget-webhook-service",
			"kind: ValidatingAdmissionPolicy",
		},
		change: func() func(*testing.T) {
			if _, err := repo.Commit("operator 1.3.0", operatorRepo("1.3.0")); err != nil {
				t.Fatal(err)
			}
			return func(t *testing.T) {
				d, err := cl.get(objectRef{group: "apps", kind: "Deployment", namespace: "widget-system", name: "widget-controller-manager"})
				if err != nil {
					t.Fatal(err)
				}
				if got := fmt.Sprint(d.Object["spec"]); !strings.Contains(got, "ghcr.io/example/widget-operator:1.3.0") {
					t.Errorf("Deployment widget-system/widget-controller-manager after the change: %s, want image 1.3.0", got)
				}
			}
		},
		planned: []string{"widget-controller-manager"},
	}
	j.run(t)
}
