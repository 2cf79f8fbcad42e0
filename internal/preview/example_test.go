package preview

import (
	"encoding/base64"
	"errors"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	"syncd.dev/syncd/internal/applier"
	"syncd.dev/syncd/internal/inventory"
	"syncd.dev/syncd/internal/planner"
)

// The example pull request of docs/preview-example.md: app "shop" in
// namespace "shop", default manager syncd-shop, and a split that gives the
// web container's image to syncd-shop-release.
const (
	exNamespace = "shop"
	exDefault   = "syncd-shop"
	exRelease   = "syncd-shop-release"
)

// Secret values of the example, in the clear; the report must never show
// them, nor their base64 encoding.
var exSecretValues = []string{"hunter2-2025-rotate-me", "correct-horse-battery-staple"}

// exampleReport builds the report of a realistic pull request from the
// dry-run results applier.Preview would return for it (live objects with
// their managedFields, the dry-run results, each slice's outcome), through
// Build and Diff as syncd plan does:
//
//   - Secret db-credentials: the password is rotated (redacted in the diff);
//   - ConfigMap feature-flags: someone ran kubectl edit on .data.beta, the
//     pull request sets it back, and the policy is fail, so it is blocked;
//   - ConfigMap routes: new;
//   - ConfigMap web-config: a plain update;
//   - Service web: unchanged, and not dry-run (the inventory says it is
//     exactly as syncd last applied it);
//   - Deployment web: Git stops setting .spec.replicas (a handoff: the API
//     server would reset it to 1), the image moves to the release manager
//     by a new split and changes, and `kubectl set env` changed LOG_LEVEL,
//     which the policy forces back.
func exampleReport(t *testing.T) *Report {
	t.Helper()
	b64 := func(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }
	data := func(keys ...string) []fieldpath.Path {
		var out []fieldpath.Path
		for _, k := range keys {
			out = append(out, fieldpath.MakePathOrDie("data", k))
		}
		return out
	}

	// Secret db-credentials: the password is rotated.
	secretLive := exObject("v1", "Secret", "db-credentials", map[string]any{
		"type": "Opaque",
		"data": map[string]any{"username": b64("shop"), "password": b64(exSecretValues[0])},
	}, exManaged(exDefault, metav1.ManagedFieldsOperationApply, append(data("username", "password"), fieldpath.MakePathOrDie("type"))...))
	secretAfter := exObject("v1", "Secret", "db-credentials", map[string]any{
		"type": "Opaque",
		"data": map[string]any{"username": b64("shop"), "password": b64(exSecretValues[1])},
	})
	secret := exPlanObject("", "v1", "Secret", "db-credentials", exSlice(exDefault, append(data("username", "password"), fieldpath.MakePathOrDie("type"))...))

	// ConfigMap feature-flags: kubectl edit set beta to "true"; Git says
	// "false" and turns on checkout-v2. The dry run is forced to show what
	// Git wants; the conflict itself fails under the app's policy.
	flagsLive := exObject("v1", "ConfigMap", "feature-flags", map[string]any{
		"data": map[string]any{"beta": "true", "checkout-v2": "false"},
	}, exManaged(exDefault, metav1.ManagedFieldsOperationApply, data("checkout-v2")...),
		exManaged("kubectl-edit", metav1.ManagedFieldsOperationUpdate, data("beta")...))
	flagsAfter := exObject("v1", "ConfigMap", "feature-flags", map[string]any{
		"data": map[string]any{"beta": "false", "checkout-v2": "true"},
	})
	flags := exPlanObject("", "v1", "ConfigMap", "feature-flags", exSlice(exDefault, data("beta", "checkout-v2")...))

	// ConfigMap routes: new.
	routesAfter := exObject("v1", "ConfigMap", "routes", map[string]any{
		"data": map[string]any{"home": "web", "api": "api-v2"},
	})
	routes := exPlanObject("", "v1", "ConfigMap", "routes", exSlice(exDefault, data("home", "api")...))

	// ConfigMap web-config: a new color and a cache TTL.
	configLive := exObject("v1", "ConfigMap", "web-config", map[string]any{
		"data": map[string]any{"color": "blue", "size": "small"},
	}, exManaged(exDefault, metav1.ManagedFieldsOperationApply, data("color", "size")...))
	configAfter := exObject("v1", "ConfigMap", "web-config", map[string]any{
		"data": map[string]any{"color": "green", "size": "small", "cache-ttl": "60s"},
	})
	config := exPlanObject("", "v1", "ConfigMap", "web-config", exSlice(exDefault, data("color", "size", "cache-ttl")...))

	// Service web: unchanged.
	svcSpec := map[string]any{"spec": map[string]any{
		"selector": map[string]any{"app": "web"},
		"ports":    []any{map[string]any{"name": "http", "port": int64(80), "targetPort": int64(8080)}},
	}}
	svcFields := []fieldpath.Path{
		fieldpath.MakePathOrDie("spec", "selector", "app"),
		fieldpath.MakePathOrDie("spec", "ports", fieldpath.KeyByFields("port", 80, "protocol", "TCP"), "name"),
		fieldpath.MakePathOrDie("spec", "ports", fieldpath.KeyByFields("port", 80, "protocol", "TCP"), "port"),
		fieldpath.MakePathOrDie("spec", "ports", fieldpath.KeyByFields("port", 80, "protocol", "TCP"), "targetPort"),
	}
	svc := exPlanObject("", "v1", "Service", "web", exSlice(exDefault, svcFields...))
	svc.Desired = exObject("v1", "Service", "web", svcSpec)

	// Deployment web.
	deploy := func(replicas int64, image, logLevel, memory string) map[string]any {
		return map[string]any{"spec": map[string]any{
			"replicas": replicas,
			"selector": map[string]any{"matchLabels": map[string]any{"app": "web"}},
			"template": map[string]any{
				"metadata": map[string]any{"labels": map[string]any{"app": "web"}},
				"spec": map[string]any{"containers": []any{map[string]any{
					"name":      "app",
					"image":     image,
					"env":       []any{map[string]any{"name": "LOG_LEVEL", "value": logLevel}},
					"resources": map[string]any{"limits": map[string]any{"memory": memory}},
				}}},
			},
		}}
	}
	app := func(rest ...any) fieldpath.Path {
		return fieldpath.MakePathOrDie(append([]any{"spec", "template", "spec", "containers", fieldpath.KeyByFields("name", "app")}, rest...)...)
	}
	logLevel := func(f string) fieldpath.Path { return app("env", fieldpath.KeyByFields("name", "LOG_LEVEL"), f) }
	common := []fieldpath.Path{
		fieldpath.MakePathOrDie("spec", "selector", "matchLabels", "app"),
		fieldpath.MakePathOrDie("spec", "template", "metadata", "labels", "app"),
		app("name"), logLevel("name"), app("resources", "limits", "memory"),
	}
	deployLive := exObject("apps/v1", "Deployment", "web", deploy(3, "registry.example.com/shop/web:1.4.2", "debug", "256Mi"),
		exManaged(exDefault, metav1.ManagedFieldsOperationApply, append(common, fieldpath.MakePathOrDie("spec", "replicas"), app("image"))...),
		exManaged("kubectl-set", metav1.ManagedFieldsOperationUpdate, logLevel("value")))
	// The dry run keeps the held replicas at their live value, as the
	// real apply does.
	deployAfter := exObject("apps/v1", "Deployment", "web", deploy(3, "registry.example.com/shop/web:1.5.0", "info", "384Mi"))
	web := exPlanObject("apps", "v1", "Deployment", "web",
		exSlice(exDefault, append(common, logLevel("value"))...),
		// Key fields of list items are in every slice that holds a field
		// of the item, as the planner cuts them.
		exSlice(exRelease, app("name"), app("image")))

	previews := []applier.ObjectPreview{
		{Object: secret, Live: secretLive, After: secretAfter, Changes: exChanges(secret, applier.Configured)},
		{Object: flags, Live: flagsLive, After: flagsAfter, Changes: []applier.Change{{
			Object: flags.Ref, Manager: exDefault, Action: applier.Conflicted,
			Conflicts: applier.Conflicts{{Manager: "kubectl-edit", Path: ".data.beta", Operation: "Update"}},
			Err:       errors.New(`Apply failed with 1 conflict: conflict with "kubectl-edit" using v1: .data.beta`),
		}}},
		{Object: routes, After: routesAfter, Changes: exChanges(routes, applier.Created)},
		{Object: config, Live: configLive, After: configAfter, Changes: exChanges(config, applier.Configured)},
		// The pull request does not touch the Service, and it is as syncd
		// last applied it: it is not dry-run at all.
		{Object: svc},
		{Object: web, Live: deployLive, After: deployAfter, Changes: []applier.Change{
			{Object: web.Ref, Manager: exDefault, Action: applier.Forced,
				Resolved: &applier.Resolution{
					Forced: applier.Conflicts{{Manager: "kubectl-set", Path: `.spec.template.spec.containers[name="app"].env[name="LOG_LEVEL"].value`, Operation: "Update"}},
					Held:   []string{".spec.replicas"}}},
			{Object: web.Ref, Manager: exRelease, Action: applier.Configured},
		}},
	}
	r, err := Build("shop", "main@4f9c2e1", previews, Options{NotDryRun: func(o *planner.Object) bool { return o == svc }})
	if err != nil {
		t.Fatalf("build the example report: %v", err)
	}
	// The pull request also deletes a ConfigMap from Git. The blocking
	// conflict above means the apply would not complete, so the prune
	// after it is refused and the ConfigMap stays until the next sync.
	refusal := "not pruning: the apply did not complete (the preview predicts objects that would not be applied); pruning after a partial apply could delete what the failed objects need"
	legacy := planner.ObjectRef{Version: "v1", Kind: "ConfigMap", Namespace: exNamespace, Name: "legacy-banner"}
	r.AddPrune(&inventory.Report{
		App: "shop", DryRun: true,
		Refused: &inventory.Refusal{Reason: inventory.ReasonApplyIncomplete, Message: refusal},
		Spared:  []inventory.Spared{{Object: legacy, Reason: inventory.ReasonApplyIncomplete, Message: refusal}},
	})
	return r
}

// exObject returns an object of the example namespace carrying the app's
// managers annotation, with server bookkeeping that Diff strips.
func exObject(apiVersion, kind, name string, fields map[string]any, managed ...metav1.ManagedFieldsEntry) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": apiVersion, "kind": kind}}
	for k, v := range fields {
		u.Object[k] = v
	}
	u.SetName(name)
	u.SetNamespace(exNamespace)
	u.SetAnnotations(map[string]string{applier.ManagersAnnotationPrefix + "shop": exDefault + "," + exRelease})
	u.SetResourceVersion("4711")
	u.SetUID("0c6e5f3a-7d1b-4a57-9d53-2f1b8f0c9e11")
	if managed != nil {
		u.SetManagedFields(managed)
	}
	return u
}

func exManaged(manager string, op metav1.ManagedFieldsOperationType, paths ...fieldpath.Path) metav1.ManagedFieldsEntry {
	raw, err := fieldpath.NewSet(paths...).ToJSON()
	if err != nil {
		panic(err)
	}
	return metav1.ManagedFieldsEntry{Manager: manager, Operation: op, FieldsType: "FieldsV1", FieldsV1: &metav1.FieldsV1{Raw: raw}}
}

func exSlice(manager string, paths ...fieldpath.Path) planner.Slice {
	return planner.Slice{Manager: planner.FieldManager(manager), Fields: fieldpath.NewSet(paths...)}
}

func exPlanObject(group, version, kind, name string, slices ...planner.Slice) *planner.Object {
	return &planner.Object{Ref: planner.ObjectRef{Group: group, Version: version, Kind: kind, Namespace: exNamespace, Name: name}, Slices: slices}
}

// exChanges gives every slice of o the same outcome.
func exChanges(o *planner.Object, a applier.Action) []applier.Change {
	out := make([]applier.Change, len(o.Slices))
	for i, s := range o.Slices {
		out[i] = applier.Change{Object: o.Ref, Manager: s.Manager, Action: a}
	}
	return out
}
