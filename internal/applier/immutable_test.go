package applier

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
)

// TestImmutableCauses: what the real API server returns when a change
// touches an immutable field, for the kinds where that happens in
// practice. isImmutable and immutableFields read only the error's causes:
// whenever the server calls a field immutable, a cause says so and names
// the field, so the error text adds nothing. A Service's clusterIP is
// refused as "may not change once set", which is not recognised (neither
// from the causes nor from the text): changing it stays a failure that
// names the field.
func TestImmutableCauses(t *testing.T) {
	tests := map[string]struct {
		gvr       schema.GroupVersionResource
		name      string
		create    string
		change    string
		wantField string
		// notImmutable: the server refuses the change in words
		// other than "immutable"; syncd does not recreate for it.
		notImmutable bool
	}{
		"ConfigMap immutable: true, data changed": {
			gvr: configMaps, name: "frozen",
			create:    "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: frozen\nimmutable: true\ndata:\n  k: v1\n",
			change:    "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: frozen\nimmutable: true\ndata:\n  k: v2\n",
			wantField: "data",
		},
		"Secret immutable: true, data changed": {
			gvr: secrets, name: "frozen",
			create:    "apiVersion: v1\nkind: Secret\nmetadata:\n  name: frozen\nimmutable: true\nstringData:\n  k: v1\n",
			change:    "apiVersion: v1\nkind: Secret\nmetadata:\n  name: frozen\nimmutable: true\nstringData:\n  k: v2\n",
			wantField: "data",
		},
		"Service clusterIP changed": {
			gvr: schema.GroupVersionResource{Version: "v1", Resource: "services"}, name: "svc",
			create: "apiVersion: v1\nkind: Service\nmetadata:\n  name: svc\nspec:\n  ports:\n  - port: 80\n",
			change: "apiVersion: v1\nkind: Service\nmetadata:\n  name: svc\nspec:\n  clusterIP: 10.0.0.99\n  clusterIPs: [10.0.0.99]\n  ports:\n  - port: 80\n",
			// "spec.clusterIPs[0]: Invalid value: ...: may not change once set"
			notImmutable: true,
		},
		"Deployment selector changed": {
			gvr: deployments, name: "web",
			create:    deployment("web", 1, "nginx:1.27"),
			change:    strings.ReplaceAll(strings.Replace(deployment("web", 1, "nginx:1.27"), "matchLabels:\n      app: web", "matchLabels:\n      app: web2", 1), "labels:\n        app: web", "labels:\n        app: web2"),
			wantField: "spec.selector",
		},
		"Job template changed": {
			gvr: schema.GroupVersionResource{Group: "batch", Version: "v1", Resource: "jobs"}, name: "once",
			create:    "apiVersion: batch/v1\nkind: Job\nmetadata:\n  name: once\nspec:\n  template:\n    spec:\n      restartPolicy: Never\n      containers:\n      - name: c\n        image: busybox:1\n",
			change:    "apiVersion: batch/v1\nkind: Job\nmetadata:\n  name: once\nspec:\n  template:\n    spec:\n      restartPolicy: Never\n      containers:\n      - name: c\n        image: busybox:2\n",
			wantField: "spec.template",
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			c := newCluster(t, env.Config)
			ns := env.Namespace(t)
			ri := c.resource(t, tc.gvr, ns)
			send := func(doc string) error {
				data, err := json.Marshal(object(t, doc).Object)
				if err != nil {
					t.Fatal(err)
				}
				force := true
				_, err = ri.Patch(context.Background(), tc.name, types.ApplyPatchType, data, metav1.PatchOptions{FieldManager: "probe", Force: &force})
				return err
			}
			if err := send(tc.create); err != nil {
				t.Fatalf("create: %v", err)
			}
			err := send(tc.change)
			if err == nil {
				t.Fatal("the API server accepted the change")
			}
			t.Logf("%s: %v", name, err)
			if tc.notImmutable {
				if isImmutable(err) || immutableFields(err) != nil {
					t.Errorf("isImmutable = %v, immutableFields = %v for %v, want false and none", isImmutable(err), immutableFields(err), err)
				}
				return
			}
			if !isImmutable(err) {
				t.Fatalf("isImmutable = false for %v", err)
			}
			fields := immutableFields(err)
			found := false
			for _, f := range fields {
				if f == tc.wantField {
					found = true
				}
			}
			if !found {
				t.Errorf("immutableFields = %v, want it to name %s", fields, tc.wantField)
			}
		})
	}
}
