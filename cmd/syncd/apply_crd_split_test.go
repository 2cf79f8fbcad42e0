package main

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"sigs.k8s.io/yaml"
)

// TestApplySplitsInstalledCustomResource: an app splits a custom resource
// whose CRD is installed in the cluster but not part of the app's render
// (a Rollout, a Certificate): the planner reads the kind's schema from the
// cluster, and each manager owns its part.
func TestApplySplitsInstalledCustomResource(t *testing.T) {
	ctx := context.Background()
	ns := env.Namespace(t)
	group := ns + ".example.com"
	crdDoc := crdYAML(group, "rollouts", "Rollout", `
              replicas: {type: integer}
              containers:
                type: array
                x-kubernetes-list-type: map
                x-kubernetes-list-map-keys: [name]
                items:
                  type: object
                  required: [name]
                  properties:
                    name: {type: string}
                    image: {type: string}`) + "    subresources: {status: {}}\n"
	crdGVR := schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
	dyn := dynamic.NewForConfigOrDie(env.Config)
	crd := &unstructured.Unstructured{}
	if err := yaml.Unmarshal([]byte(crdDoc), &crd.Object); err != nil {
		t.Fatal(err)
	}
	if _, err := dyn.Resource(crdGVR).Create(ctx, crd, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = dyn.Resource(crdGVR).Delete(context.Background(), crd.GetName(), metav1.DeleteOptions{}) })
	gvr := schema.GroupVersionResource{Group: group, Version: "v1", Resource: "rollouts"}
	// Served, and its OpenAPI v3 document published (which lags a moment
	// behind the kind being served).
	dc := discovery.NewDiscoveryClientForConfigOrDie(env.Config)
	if err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		if _, err := dyn.Resource(gvr).Namespace(ns).List(ctx, metav1.ListOptions{}); err != nil {
			return false, nil
		}
		paths, err := dc.OpenAPIV3WithContext(ctx).PathsWithContext(ctx)
		if err != nil {
			return false, nil
		}
		_, ok := paths["apis/"+group+"/v1"]
		return ok, nil
	}); err != nil {
		t.Fatalf("CRD never served with its OpenAPI v3 document: %v", err)
	}

	cfg := planConfig(t, ns, "  split:\n  - manager: syncd-web-release\n    kinds: ["+group+"/Rollout]\n    paths: [\".spec.containers[*].image\"]\n")
	rollout := fmt.Sprintf("apiVersion: %s/v1\nkind: Rollout\nmetadata: {name: web}\nspec:\n  replicas: 2\n  containers:\n  - {name: app, image: example.com/web:1}\n", group)
	r := syncd(t, "apply", "--config", cfg, "--app", "web", "--path", writeFiles(t, map[string]string{"rollout.yaml": rollout}))
	if r.code != exitChanges && r.code != exitOK {
		t.Fatalf("apply: code %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if strings.Contains(r.stdout+r.stderr, "no schema is known") {
		t.Errorf("the planner fell back to a deduced schema:\n%s%s", r.stdout, r.stderr)
	}
	live, err := dyn.Resource(gvr).Namespace(ns).Get(ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	got := leafOwners(t, live.GetManagedFields())
	want := map[string][]string{
		"syncd-web": {
			".metadata.annotations.managers.syncd.dev/web",
			".metadata.labels.applyset.kubernetes.io/part-of",
			`.spec.containers[name="app"].name`,
			".spec.replicas",
		},
		"syncd-web-release": {
			`.spec.containers[name="app"].image`,
			`.spec.containers[name="app"].name`,
		},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("ownership (-want +got):\n%s", diff)
	}

	// The ad-hoc form (--path --manager, no config) reads the same
	// document from the cluster: it knows the kind serves status as a
	// subresource and strips the status Git carries, with a warning.
	adhoc := fmt.Sprintf("apiVersion: %s/v1\nkind: Rollout\nmetadata: {name: adhoc, namespace: %s}\nspec:\n  replicas: 1\nstatus:\n  ready: true\n", group, ns)
	r = syncd(t, "apply", "--path", writeFiles(t, map[string]string{"rollout.yaml": adhoc}), "--manager", "adhoc")
	if r.code != exitOK || !strings.Contains(r.stdout, "created") {
		t.Fatalf("ad-hoc apply: code %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if !strings.Contains(r.stdout, "status is set by controllers through the status subresource") {
		t.Errorf("ad-hoc apply kept the status of a kind that serves it as a subresource:\n%s%s", r.stdout, r.stderr)
	}
}
