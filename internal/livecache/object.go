package livecache

import (
	"encoding/json"
	"fmt"
	"slices"
	"unique"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	utiljson "k8s.io/apimachinery/pkg/util/json"
)

// Object is what the cache keeps of a live object: its metadata, typed
// (managedFields as raw bytes, as a metadata-only informer keeps them),
// and its top-level fields but metadata and status, as JSON. Objects in
// the cache are shared: never modify one.
type Object struct {
	metav1.PartialObjectMetadata
	// content is the JSON of every top-level field but apiVersion, kind,
	// metadata and status (an object, its keys sorted). Held as nested
	// maps, a defaulted Deployment's spec takes several times its JSON,
	// and the cache holds every live object of every app; only the
	// drift watcher's judgement reads it, one object at a time
	// (Content).
	content []byte
}

var _ runtime.Object = (*Object)(nil)

// dropped are the top-level fields an Object does not keep as content:
// the type and metadata are kept typed, status is read by no consumer (the
// planner strips it from Git's objects, so drift never compares it).
var dropped = map[string]bool{"apiVersion": true, "kind": true, "metadata": true, "status": true}

// transform is an informer's transform: toObject, whose labels and
// annotations maps, managedFields' fieldsV1 and the entries' strings are
// shared with the informer's other objects that carry equal ones.
func (s *sharedMeta) transform(item any) (any, error) {
	out, err := toObject(item)
	if o, ok := out.(*Object); ok && o != item {
		o.Labels = s.share(o.Labels)
		o.Annotations = s.share(o.Annotations)
		o.Namespace = unique.Make(o.Namespace).Value()
		s.shareEntries(o.ManagedFields)
	}
	return out, err
}

// toObject is the informers' transform: a decoded object becomes an
// Object before it is stored. Anything else (an Object already, a
// tombstone) is kept as it is.
func toObject(item any) (any, error) {
	u, ok := item.(*unstructured.Unstructured)
	if !ok {
		return item, nil
	}
	content, err := encodeContent(u.Object)
	if err != nil {
		return nil, fmt.Errorf("%s %s/%s: encode the live cache's copy: %w", u.GetKind(), u.GetNamespace(), u.GetName(), err)
	}
	o := &Object{content: content}
	if md, ok := u.Object["metadata"].(map[string]any); ok {
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(md, &o.ObjectMeta); err != nil {
			return nil, fmt.Errorf("%s %s/%s: decode metadata for the live cache: %w", u.GetKind(), u.GetNamespace(), u.GetName(), err)
		}
	}
	o.APIVersion, o.Kind = u.GetAPIVersion(), u.GetKind()
	return o, nil
}

// encodeContent returns the JSON of obj's top-level fields but the
// dropped ones.
func encodeContent(obj map[string]any) ([]byte, error) {
	kept := make(map[string]any, len(obj))
	for k, v := range obj {
		if !dropped[k] {
			kept[k] = v
		}
	}
	return json.Marshal(kept)
}

// KeepsTyped reports whether the cache keeps the top-level field name of
// an object typed (apiVersion, kind, metadata) rather than in its
// Content: a reader of any other field finds it in Content, as it would
// in Unstructured's object.
func KeepsTyped(name string) bool {
	return name == "apiVersion" || name == "kind" || name == "metadata"
}

// Content decodes the object's top-level fields but apiVersion, kind,
// metadata and status, as the API server's JSON decodes into an
// unstructured object (integers as int64): a new map on each call, the
// caller's to keep. It costs a decode of the object's JSON, without its
// metadata; Unstructured builds the metadata too.
func (o *Object) Content() (map[string]any, error) {
	m := map[string]any{}
	if len(o.content) == 0 {
		return m, nil
	}
	if err := utiljson.Unmarshal(o.content, &m); err != nil {
		return nil, fmt.Errorf("%s %s/%s: decode the live cache's copy: %w", o.Kind, o.Namespace, o.Name, err)
	}
	return m, nil
}

// Metadata returns the object's metadata (shared: never modify it).
func (o *Object) Metadata() *metav1.PartialObjectMetadata { return &o.PartialObjectMetadata }

// Unstructured returns a new unstructured object of the cached fields,
// metadata included (status is not cached). Its nested values are shared
// with the cache: read them, never modify them.
func (o *Object) Unstructured() (*unstructured.Unstructured, error) {
	return o.unstructured(&o.ObjectMeta)
}

// UnstructuredWithoutManagedFields is Unstructured without
// metadata.managedFields, for a reader that decodes ownership from
// Metadata().ManagedFields itself: turning the raw fieldsV1 of every entry
// into nested maps is most of the cost of Unstructured.
func (o *Object) UnstructuredWithoutManagedFields() (*unstructured.Unstructured, error) {
	meta := o.ObjectMeta // a shallow copy: ToUnstructured only reads it
	meta.ManagedFields = nil
	return o.unstructured(&meta)
}

// unstructured builds the object of the cached content and meta.
func (o *Object) unstructured(meta *metav1.ObjectMeta) (*unstructured.Unstructured, error) {
	md, err := runtime.DefaultUnstructuredConverter.ToUnstructured(meta)
	if err != nil {
		return nil, fmt.Errorf("%s %s/%s: encode cached metadata: %w", o.Kind, o.Namespace, o.Name, err)
	}
	m, err := o.Content()
	if err != nil {
		return nil, err
	}
	m["metadata"] = md
	if o.APIVersion != "" {
		m["apiVersion"] = o.APIVersion
	}
	if o.Kind != "" {
		m["kind"] = o.Kind
	}
	return &unstructured.Unstructured{Object: m}, nil
}

// DeepCopyObject returns a deep copy of o.
func (o *Object) DeepCopyObject() runtime.Object {
	c := &Object{content: slices.Clone(o.content)}
	o.PartialObjectMetadata.DeepCopyInto(&c.PartialObjectMetadata)
	return c
}
