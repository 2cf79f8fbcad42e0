package planner

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"k8s.io/client-go/openapi"
	"k8s.io/kube-openapi/pkg/spec3"
	"k8s.io/kube-openapi/pkg/validation/spec"
)

// ClusterSchemas types the kinds the planner knows no schema for offline
// (custom resources whose CRD is installed in the cluster but not part of
// the render) with the API server's own OpenAPI v3 document of the kind's
// group-version. Unlike NewClusterConverter it fetches only what a plan
// needs: one request to list the documents when a plan meets such a kind,
// then each group-version's document once, cached by its URL, which
// carries a content hash (a changed CRD is fetched again). Safe for
// concurrent use; one is meant to live as long as the process.
type ClusterSchemas struct {
	client openapi.ClientWithContext

	mu     sync.Mutex
	byPath map[string]cachedSchema
}

// cachedSchema is the converter of one document at one content hash.
type cachedSchema struct {
	url string // with the hash
	tc  managedfields.TypeConverter
}

// NewClusterSchemas returns a ClusterSchemas reading from client, e.g.
// discovery.NewDiscoveryClientForConfig(cfg).OpenAPIV3WithContext(ctx).
func NewClusterSchemas(client openapi.ClientWithContext) *ClusterSchemas {
	return &ClusterSchemas{client: client, byPath: map[string]cachedSchema{}}
}

// schemaLookup finds converters for the group-versions of one plan,
// listing the cluster's documents at most once.
type schemaLookup struct {
	c     *ClusterSchemas
	paths map[string]openapi.GroupVersionWithContext
	err   error
	done  map[schema.GroupVersion]managedfields.TypeConverter
}

// converter returns the cluster's converter for gv, nil when the cluster
// publishes no document for it.
func (l *schemaLookup) converter(ctx context.Context, gv schema.GroupVersion) (managedfields.TypeConverter, error) {
	if tc, ok := l.done[gv]; ok {
		return tc, nil
	}
	if l.paths == nil && l.err == nil {
		l.paths, l.err = l.c.client.PathsWithContext(ctx)
		if l.err != nil {
			l.err = fmt.Errorf("list the cluster's OpenAPI v3 documents: %w", l.err)
		}
	}
	if l.err != nil {
		return nil, l.err
	}
	path := "apis/" + gv.Group + "/" + gv.Version
	if gv.Group == "" {
		path = "api/" + gv.Version
	}
	doc, ok := l.paths[path]
	if !ok {
		l.done[gv] = nil
		return nil, nil
	}
	url := doc.ServerRelativeURL()
	l.c.mu.Lock()
	cached, ok := l.c.byPath[path]
	l.c.mu.Unlock()
	tc := cached.tc
	if !ok || cached.url != url {
		data, err := doc.SchemaWithContext(ctx, "application/json")
		if err != nil {
			return nil, fmt.Errorf("OpenAPI v3 document %s: %w", path, err)
		}
		models, err := openAPIModels(path, data)
		if err != nil {
			return nil, err
		}
		if tc, err = managedfields.NewTypeConverter(models, false); err != nil {
			return nil, fmt.Errorf("OpenAPI v3 document %s: %w", path, err)
		}
		// Replaces the converter of an older hash of the same document.
		l.c.mu.Lock()
		l.c.byPath[path] = cachedSchema{url: url, tc: tc}
		l.c.mu.Unlock()
	}
	l.done[gv] = tc
	return tc, nil
}

// openAPIModels returns the component schemas of an OpenAPI v3 document.
func openAPIModels(path string, data []byte) (map[string]*spec.Schema, error) {
	var doc spec3.OpenAPI
	if err := json.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("OpenAPI v3 document %s: %w", path, err)
	}
	models := map[string]*spec.Schema{}
	if doc.Components != nil {
		for name, s := range doc.Components.Schemas {
			models[name] = s
		}
	}
	return models, nil
}
