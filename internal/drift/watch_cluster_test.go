package drift

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	dynamicfake "k8s.io/client-go/dynamic/fake"

	"syncd.dev/syncd/internal/livecache"
)

// TestNewWatcherClusterOfCache checks that a watcher takes its informers
// from a live cache of the cluster it watches: the one it makes (named
// after WatcherOptions.Cluster, syncd's own by default) or the one it is
// given, which must be that cluster's.
func TestNewWatcherClusterOfCache(t *testing.T) {
	tests := map[string]struct {
		cluster string
		cache   livecache.Informers
		want    string // the live cache's cluster; "" when NewWatcher fails
	}{
		"own cache of syncd's own cluster":          {want: "local"},
		"own cache of a remote cluster":             {cluster: "second", want: "second"},
		"given cache of the same cluster":           {cluster: "second", cache: livecache.New("second"), want: "second"},
		"given cache of another cluster is refused": {cluster: "second", cache: livecache.New("local")},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			client := dynamicfake.NewSimpleDynamicClient(runtime.NewScheme())
			w, err := NewWatcher(client, meta.NewDefaultRESTMapper(nil), WatcherOptions{
				OnChange: func(Delta) {}, Cluster: tc.cluster, Cache: tc.cache,
			})
			got := ""
			if err == nil {
				got = w.opts.Cache.Cluster()
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("live cache's cluster (-want +got):\n%s\nerror: %v", diff, err)
			}
		})
	}
}
