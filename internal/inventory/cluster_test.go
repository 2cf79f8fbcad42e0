package inventory

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	metadatafake "k8s.io/client-go/metadata/fake"

	"syncd.dev/syncd/internal/livecache"
)

// TestNewClusterOfCache checks that a Manager watches in a live cache of
// its own cluster: the one it makes (named after Options.Cluster, syncd's
// own by default) or the one it is given, which must be that cluster's.
func TestNewClusterOfCache(t *testing.T) {
	tests := map[string]struct {
		cluster string
		cache   livecache.Informers
		want    string // the live cache's cluster; "" when New fails
	}{
		"own cache of syncd's own cluster":          {want: "local"},
		"own cache of a remote cluster":             {cluster: "second", want: "second"},
		"given cache of the same cluster":           {cluster: "second", cache: livecache.New("second"), want: "second"},
		"given cache of another cluster is refused": {cache: livecache.New("second")},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			dyn := dynamicfake.NewSimpleDynamicClient(runtime.NewScheme())
			md := metadatafake.NewSimpleMetadataClient(metadatafake.NewTestScheme())
			m, err := New(dyn, md, meta.NewDefaultRESTMapper(nil), Options{Namespace: "syncd", Cluster: tc.cluster, Cache: tc.cache})
			got := ""
			if err == nil {
				got = m.LiveCache().Cluster()
				if m.Cluster() != got {
					t.Errorf("Cluster() = %q, but the live cache is %q's", m.Cluster(), got)
				}
				m.Stop()
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("live cache's cluster (-want +got):\n%s\nerror: %v", diff, err)
			}
		})
	}
}
