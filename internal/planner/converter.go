package planner

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/util/managedfields"
	"k8s.io/client-go/openapi"
	"k8s.io/kube-openapi/pkg/validation/spec"
)

// NewClusterConverter builds a type converter for Options.Converter from
// the OpenAPI v3 documents the API server publishes for its API groups
// (/openapi/v3/apis/<group>/<version> and /openapi/v3/api/v1), custom
// resources included. With it, the planner types every kind the server
// serves exactly as the server's field manager does, so Slice.Fields
// equals what the server will record.
//
// The result reflects the cluster when it was called: build a new one after
// CRDs change. Fetching every group-version is a few dozen requests.
func NewClusterConverter(ctx context.Context, client openapi.ClientWithContext) (managedfields.TypeConverter, error) {
	paths, err := client.PathsWithContext(ctx)
	if err != nil {
		return nil, fmt.Errorf("list OpenAPI v3 documents: %w", err)
	}
	names := make([]string, 0, len(paths))
	for p := range paths {
		if p == "api" || p == "apis" || strings.HasPrefix(p, "api/v1") || strings.HasPrefix(p, "apis/") {
			names = append(names, p)
		}
	}
	sort.Strings(names)
	models := map[string]*spec.Schema{}
	for _, p := range names {
		data, err := paths[p].SchemaWithContext(ctx, "application/json")
		if err != nil {
			return nil, fmt.Errorf("OpenAPI v3 document %s: %w", p, err)
		}
		doc, err := parseOpenAPI(p, data)
		if err != nil {
			return nil, err
		}
		for name, s := range openAPIModels(doc) {
			models[name] = s
		}
	}
	tc, err := managedfields.NewTypeConverter(models, false)
	if err != nil {
		return nil, fmt.Errorf("the cluster's OpenAPI v3 schemas: %w", err)
	}
	return tc, nil
}
