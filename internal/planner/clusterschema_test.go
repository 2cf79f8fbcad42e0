package planner

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// TestStatusKinds reads status subresources from OpenAPI v3 documents in
// the shape the API server publishes for a CRD's group-version.
func TestStatusKinds(t *testing.T) {
	gv := schema.GroupVersion{Group: "example.com", Version: "v1"}
	tests := map[string]struct {
		doc  string
		want map[string]bool
	}{
		"status and scale subresources": {
			doc: `{"openapi": "3.0.0", "paths": {
  "/apis/example.com/v1/namespaces/{namespace}/routes/{name}": {"get": {"x-kubernetes-group-version-kind": {"group": "example.com", "version": "v1", "kind": "Route"}}},
  "/apis/example.com/v1/namespaces/{namespace}/routes/{name}/status": {"get": {"x-kubernetes-group-version-kind": {"group": "example.com", "version": "v1", "kind": "Route"}}},
  "/apis/example.com/v1/namespaces/{namespace}/gateways/{name}/scale": {"get": {"x-kubernetes-group-version-kind": {"group": "autoscaling", "version": "v1", "kind": "Scale"}}},
  "/apis/example.com/v1/namespaces/{namespace}/gateways/{name}": {"get": {"x-kubernetes-group-version-kind": {"group": "example.com", "version": "v1", "kind": "Gateway"}}}
}}`,
			want: map[string]bool{"Route": true},
		},
		"cluster-scoped kind, status known only from patch": {
			doc: `{"openapi": "3.0.0", "paths": {
  "/apis/example.com/v1/zones/{name}/status": {"patch": {"x-kubernetes-group-version-kind": {"group": "example.com", "version": "v1", "kind": "Zone"}}}
}}`,
			want: map[string]bool{"Zone": true},
		},
		"another version's kind is not this one's": {
			doc: `{"openapi": "3.0.0", "paths": {
  "/apis/example.com/v1/namespaces/{namespace}/routes/{name}/status": {"get": {"x-kubernetes-group-version-kind": {"group": "example.com", "version": "v2", "kind": "Route"}}}
}}`,
			want: map[string]bool{},
		},
		"no paths": {
			doc:  `{"openapi": "3.0.0"}`,
			want: map[string]bool{},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			doc, err := parseOpenAPI("apis/example.com/v1", []byte(tc.doc))
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, statusKinds(gv, doc)); diff != "" {
				t.Errorf("statusKinds (-want +got):\n%s", diff)
			}
		})
	}
}
