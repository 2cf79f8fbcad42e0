package planner

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
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
// group-version, and tells from the same document whether such a kind
// serves status as a subresource (the document has a ".../{name}/status"
// path for it), so that the planner strips status from its apply
// configuration as it does for built-in kinds. Unlike NewClusterConverter
// it fetches only what a plan needs: one request to list the documents when a plan meets such a kind,
// then each group-version's document once, cached by its URL, which
// carries a content hash (a changed CRD is fetched again). Safe for
// concurrent use; one is meant to live as long as the process.
type ClusterSchemas struct {
	client openapi.ClientWithContext

	mu     sync.Mutex
	byPath map[string]cachedSchema
}

// cachedSchema is what one document tells at one content hash.
type cachedSchema struct {
	url string // with the hash
	doc *gvDocument
}

// gvDocument is what the planner reads from the OpenAPI v3 document of one
// group-version.
type gvDocument struct {
	tc managedfields.TypeConverter
	// status holds the kinds of the group-version that serve status as a
	// subresource.
	status map[string]bool
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
	done  map[schema.GroupVersion]*gvDocument
}

// converter returns the cluster's converter for gv, nil when the cluster
// publishes no document for it.
func (l *schemaLookup) converter(ctx context.Context, gv schema.GroupVersion) (managedfields.TypeConverter, error) {
	doc, err := l.document(ctx, gv)
	if doc == nil {
		return nil, err
	}
	return doc.tc, nil
}

// statusSubresource reports whether the cluster serves status of gvk as a
// subresource. It is false when the cluster cannot tell (no document for
// the group-version, or an error, which converter reports again).
func (l *schemaLookup) statusSubresource(ctx context.Context, gvk schema.GroupVersionKind) bool {
	doc, _ := l.document(ctx, gvk.GroupVersion())
	return doc != nil && doc.status[gvk.Kind]
}

// document returns what the cluster's document for gv tells, nil when the
// cluster publishes no document for it.
func (l *schemaLookup) document(ctx context.Context, gv schema.GroupVersion) (*gvDocument, error) {
	if d, ok := l.done[gv]; ok {
		return d, nil
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
	gvDoc, ok := l.paths[path]
	if !ok {
		l.done[gv] = nil
		return nil, nil
	}
	url := gvDoc.ServerRelativeURL()
	l.c.mu.Lock()
	cached, ok := l.c.byPath[path]
	l.c.mu.Unlock()
	d := cached.doc
	if !ok || cached.url != url {
		data, err := gvDoc.SchemaWithContext(ctx, "application/json")
		if err != nil {
			return nil, fmt.Errorf("OpenAPI v3 document %s: %w", path, err)
		}
		doc, err := parseOpenAPI(path, data)
		if err != nil {
			return nil, err
		}
		d = &gvDocument{status: statusKinds(gv, doc)}
		if d.tc, err = managedfields.NewTypeConverter(openAPIModels(doc), false); err != nil {
			return nil, fmt.Errorf("OpenAPI v3 document %s: %w", path, err)
		}
		// Replaces what an older hash of the same document told.
		l.c.mu.Lock()
		l.c.byPath[path] = cachedSchema{url: url, doc: d}
		l.c.mu.Unlock()
	}
	l.done[gv] = d
	return d, nil
}

// parseOpenAPI decodes the OpenAPI v3 document at path.
func parseOpenAPI(path string, data []byte) (*spec3.OpenAPI, error) {
	var doc spec3.OpenAPI
	if err := json.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("OpenAPI v3 document %s: %w", path, err)
	}
	return &doc, nil
}

// openAPIModels returns the component schemas of an OpenAPI v3 document.
func openAPIModels(doc *spec3.OpenAPI) map[string]*spec.Schema {
	models := map[string]*spec.Schema{}
	if doc.Components != nil {
		for name, s := range doc.Components.Schemas {
			models[name] = s
		}
	}
	return models
}

// statusKinds returns the kinds of gv that the document of gv serves with
// a status subresource: those named by the x-kubernetes-group-version-kind
// of an operation on a path ending in "/{name}/status" (the API server
// publishes such a path for every kind whose status is a subresource,
// built-in or custom).
func statusKinds(gv schema.GroupVersion, doc *spec3.OpenAPI) map[string]bool {
	out := map[string]bool{}
	if doc.Paths == nil {
		return out
	}
	for p, item := range doc.Paths.Paths {
		if item == nil || !strings.HasSuffix(p, "/{name}/status") {
			continue
		}
		for _, op := range []*spec3.Operation{item.Get, item.Put, item.Patch} {
			if op == nil {
				continue
			}
			var gvk struct{ Group, Version, Kind string }
			if err := op.Extensions.GetObject("x-kubernetes-group-version-kind", &gvk); err != nil {
				continue // not the API server's shape: no answer from this operation
			}
			if gvk.Group == gv.Group && gvk.Version == gv.Version && gvk.Kind != "" {
				out[gvk.Kind] = true
			}
		}
	}
	return out
}
