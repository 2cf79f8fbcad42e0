package controller

import (
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"syncd.dev/syncd/internal/api/v1alpha1"
	"syncd.dev/syncd/internal/reconcile"
)

// staleMapper answers like a discovery cache filled before syncd's CRDs
// were installed: it knows their kinds only once Reset.
type staleMapper struct {
	meta.RESTMapper
	fresh bool
}

func (m *staleMapper) KindFor(gvr schema.GroupVersionResource) (schema.GroupVersionKind, error) {
	if !m.fresh {
		return schema.GroupVersionKind{}, &meta.NoResourceMatchError{PartialResource: gvr}
	}
	return gvr.GroupVersion().WithKind("Alert"), nil
}

func (m *staleMapper) Reset() { m.fresh = true }

var _ meta.ResettableRESTMapper = (*staleMapper)(nil)

// TestServedAfterCRDsInstalled checks that a controller built after the
// CRDs were installed sees them through a mapper whose discovery cache
// predates them (the daemon's, filled at start): else Apps send no
// alerts until syncd restarts.
func TestServedAfterCRDsInstalled(t *testing.T) {
	tests := map[string]struct {
		mapper meta.RESTMapper
		want   bool
	}{
		"stale cache, resettable": {mapper: &staleMapper{}, want: true},
		"not served":              {mapper: meta.NewDefaultRESTMapper(nil), want: false},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			c := &Controller{opts: Options{Cluster: reconcile.Cluster{Mapper: tc.mapper}}}
			if got := c.served(v1alpha1.AlertResource); got != tc.want {
				t.Errorf("served(%s) = %v, want %v", v1alpha1.AlertResource, got, tc.want)
			}
		})
	}
}
