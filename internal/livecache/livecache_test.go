package livecache

import (
	"context"
	"errors"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"
)

// TestAcquireShares: holders of one key (the selector spelt either way)
// share one informer, which runs until the last of them releases it; a
// stopped cache hands out none. The fake client only serves the list and
// watch: what is under test is the sharing.
func TestAcquireShares(t *testing.T) {
	gvr := schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	cm := mustObject(t, `{apiVersion: v1, kind: ConfigMap, metadata: {name: a, namespace: ns, labels: {app: x, tier: web}}, data: {k: v}}`)
	client := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{gvr: "ConfigMapList"}, cm)
	c := New("local")
	defer c.Stop()

	a, err := c.Acquire(Key{Cluster: "local", Resource: gvr, Namespace: "ns", LabelSelector: "tier=web,app=x"}, client)
	if err != nil {
		t.Fatal(err)
	}
	b, err := c.Acquire(Key{Cluster: "local", Resource: gvr, Namespace: "ns", LabelSelector: "app=x,tier=web"}, client)
	if err != nil {
		t.Fatal(err)
	}
	if a != b {
		t.Fatal("two holders of one key got two informers")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if !a.WaitForSync(ctx) {
		t.Fatal("informer did not sync")
	}
	if o, ok := a.Get("ns", "a"); !ok || o.GetName() != "a" {
		t.Fatalf("Get(ns, a) = %v, %v; want the ConfigMap", o, ok)
	}

	c.Release(a)
	if again, _ := c.Acquire(Key{Cluster: "local", Resource: gvr, Namespace: "ns", LabelSelector: "app=x,tier=web"}, client); again != a {
		t.Error("the informer stopped while it was still held")
	} else {
		c.Release(again)
	}
	c.Release(b)
	fresh, err := c.Acquire(Key{Cluster: "local", Resource: gvr, Namespace: "ns", LabelSelector: "app=x,tier=web"}, client)
	if err != nil {
		t.Fatal(err)
	}
	if fresh == a {
		t.Error("the informer was kept after its last holder released it")
	}
	c.Release(fresh)

	c.Stop()
	if _, err := c.Acquire(Key{Cluster: "local", Resource: gvr}, client); !errors.Is(err, ErrStopped) {
		t.Errorf("Acquire after Stop: %v, want ErrStopped", err)
	}
}

// TestAcquireRefusesOtherCluster: a Cache hands out informers of its own
// cluster only; a key of another cluster is refused before anything is
// listed, even when the cache runs the same resource, namespace and
// selector for its own cluster.
func TestAcquireRefusesOtherCluster(t *testing.T) {
	gvr := schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	client := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{gvr: "ConfigMapList"})
	c := New("local")
	defer c.Stop()
	own := Key{Cluster: "local", Resource: gvr, Namespace: "ns", LabelSelector: "app=x"}
	held, err := c.Acquire(own, client)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Release(held)

	other := own
	other.Cluster = "second"
	got, err := c.Acquire(other, client)
	if !errors.Is(err, ErrOtherCluster) || got != nil {
		t.Fatalf("Acquire(key of cluster second) = %v, %v; want no informer and ErrOtherCluster", got, err)
	}
	if c.Cluster() != "local" {
		t.Errorf("Cluster() = %q, want local", c.Cluster())
	}
}
