package inventory

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"

	"syncd.dev/syncd/internal/identity"
)

// encodingRecorder is an API server that answers every list with an
// empty ConfigMapList and records the Accept-Encoding of each request.
type encodingRecorder struct {
	mu        sync.Mutex
	encodings []string
}

func (r *encodingRecorder) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	r.mu.Lock()
	r.encodings = append(r.encodings, req.Header.Get("Accept-Encoding"))
	r.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write([]byte(`{"apiVersion":"v1","kind":"ConfigMapList","metadata":{"resourceVersion":"1"},"items":[]}`))
}

func (r *encodingRecorder) last() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.encodings) == 0 {
		return "(no request)"
	}
	return r.encodings[len(r.encodings)-1]
}

// TestMembersAreWatchedWithoutGzip: the client the live cache lists and
// watches an app's members through, syncd's own and a tenant's, does
// not ask for gzip (a watch holds its decompressor as long as it runs),
// while the Manager's other clients, made by the caller, still do.
func TestMembersAreWatchedWithoutGzip(t *testing.T) {
	rec := &encodingRecorder{}
	srv := httptest.NewServer(rec)
	defer srv.Close()
	cfg := &rest.Config{Host: srv.URL, Proxy: http.ProxyFromEnvironment}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	md, err := metadata.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	m, err := New(dyn, md, meta.NewDefaultRESTMapper(nil), Options{Namespace: "syncd", Config: cfg})
	if err != nil {
		t.Fatal(err)
	}
	configMaps := schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	list := func(c dynamic.Interface) string {
		t.Helper()
		if _, err := c.Resource(configMaps).Namespace("apps").List(context.Background(), metav1.ListOptions{}); err != nil {
			t.Fatal(err)
		}
		return rec.last()
	}

	if got := list(dyn); got != "gzip" {
		t.Fatalf("the caller's client asked for %q, want gzip: the recorder cannot tell the difference", got)
	}
	for _, app := range []App{
		{Name: "own"},
		{Name: "tenant", Tenant: identity.Tenant{App: "tenant", Namespace: "apps", ServiceAccount: "deployer"}},
	} {
		c, err := m.clientsOf(app)
		if err != nil {
			t.Fatal(err)
		}
		if got := list(c.dyn); got != "" {
			t.Errorf("app %s: its members are listed and watched with Accept-Encoding %q, want none", app.Name, got)
		}
	}
}
