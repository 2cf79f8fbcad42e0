package applier

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"

	"syncd.dev/syncd/internal/planner"
)

// MetadataClient is the metadata client syncd's drivers give an Applier
// (Options.Metadata): client-go's, plus the dry-run create client-go's
// cannot send, whose answer is not read at all. With it, the validation
// dry run of an object that does not exist is a create (dryRunsAsCreate).
type MetadataClient struct {
	metadata.Interface
	rest rest.Interface
}

// NewMetadataClient returns the MetadataClient of cfg's cluster and
// identity. Both of its clients share one HTTP client (one connection).
func NewMetadataClient(cfg *rest.Config) (*MetadataClient, error) {
	mcfg := metadata.ConfigFor(cfg)
	h, err := rest.HTTPClientFor(mcfg)
	if err != nil {
		return nil, fmt.Errorf("metadata client: %w", err)
	}
	md, err := metadata.NewForConfigAndClient(mcfg, h)
	if err != nil {
		return nil, fmt.Errorf("metadata client: %w", err)
	}
	// The REST client only builds requests by absolute path, as
	// client-go's metadata client does.
	mcfg.GroupVersion = &schema.GroupVersion{}
	mcfg.APIPath = "/unused"
	rc, err := rest.RESTClientForConfigAndClient(mcfg, h)
	if err != nil {
		return nil, fmt.Errorf("metadata client: %w", err)
	}
	return &MetadataClient{Interface: md, rest: rc}, nil
}

// creator sends dry-run creates of one resource, in one namespace for a
// namespaced one.
type creator struct {
	rest      rest.Interface
	resource  schema.GroupVersionResource
	namespace string
}

// creator returns the creator of mapping's resource for ref, nil when
// the Applier's metadata client is not a MetadataClient.
func (a *Applier) creator(mapping *meta.RESTMapping, ref planner.ObjectRef) *creator {
	mc, ok := a.meta.(*MetadataClient)
	if !ok {
		return nil
	}
	c := &creator{rest: mc.rest, resource: mapping.Resource}
	if mapping.Scope.Name() == meta.RESTScopeNameNamespace {
		c.namespace = ref.Namespace
	}
	return c
}

// metadataAnswer is the Accept header of a dry-run create: the answer as
// metadata (in protobuf when the server can), which is never decoded, so
// that the server encodes no whole object either.
const metadataAnswer = "application/vnd.kubernetes.protobuf;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json"

// dryRunCreate sends body (an object's JSON) as a dry-run create as
// manager, with fieldValidation=Strict (a field the schema does not
// declare is refused, as an apply refuses it), and returns the server's
// refusal.
func (c *creator) dryRunCreate(ctx context.Context, body []byte, manager string) error {
	opts := metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}, FieldManager: manager, FieldValidation: metav1.FieldValidationStrict}
	return c.rest.Post().
		AbsPath(c.path()...).
		SetHeader("Content-Type", "application/json").
		SetHeader("Accept", metadataAnswer).
		SpecificallyVersionedParams(&opts, metav1.ParameterCodec, schema.GroupVersion{Version: "v1"}).
		Body(body).
		Do(ctx).
		Error()
}

// path is the collection's path: /api/v1 or /apis/GROUP/VERSION, the
// namespace, the resource.
func (c *creator) path() []string {
	p := []string{"apis", c.resource.Group, c.resource.Version}
	if c.resource.Group == "" {
		p = []string{"api", c.resource.Version}
	}
	if c.namespace != "" {
		p = append(p, "namespaces", c.namespace)
	}
	return append(p, c.resource.Resource)
}
