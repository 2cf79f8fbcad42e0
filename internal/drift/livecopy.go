package drift

import (
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	"syncd.dev/syncd/internal/directive"
	"syncd.dev/syncd/internal/livecache"
	"syncd.dev/syncd/internal/ownership"
)

// liveCopy is a live object to judge and its decoded ownership: either an
// object read whole (obj: Detect's reads, a GET) or the live cache's
// copy, read in place (cached). The watcher judges every object of a plan
// when it starts and after a sync; building a whole unstructured object
// of each cached one (its metadata turned into nested maps) only to read
// a few leaves of it was most of the garbage of that judgement.
type liveCopy struct {
	obj    *unstructured.Unstructured
	cached *livecache.Object
	// built is cached as livecache.Object.Unstructured builds it,
	// managedFields left out, made only when a path the cache does not
	// answer in place is looked up (metadata but its labels and
	// annotations, apiVersion, kind); err is why it could not be built.
	built *unstructured.Unstructured
	// content is the cached object's top-level fields, decoded once, when
	// a path under them is first looked up (the cache holds them as
	// JSON).
	content map[string]any
	err     error
	own     ownership.Ownership
}

// liveOf is the liveCopy of a live object read whole (nil: deleted).
func liveOf(live *unstructured.Unstructured) *liveCopy {
	if live == nil {
		return nil
	}
	return &liveCopy{obj: live, own: ownership.Decode(live)}
}

// cachedCopy is the liveCopy of a cached object, its ownership decoded
// from the cache's typed managedFields (never turned into nested maps).
// The object is read, never modified.
func cachedCopy(o *livecache.Object) *liveCopy {
	return &liveCopy{cached: o, own: ownership.DecodeEntries(o.GetManagedFields())}
}

// metadata returns the object's labels and annotations.
func (l *liveCopy) metadata() directive.Metadata {
	if l.obj != nil {
		return l.obj
	}
	return l.cached
}

// annotations returns the object's annotations (never modify them).
func (l *liveCopy) annotations() map[string]string {
	return l.metadata().GetAnnotations()
}

// lookup is lookupLive on the object: what it holds at path.
func (l *liveCopy) lookup(path fieldpath.Path, secret bool) (any, bool) {
	if l.obj != nil {
		return lookupLive(l.obj.Object, path, secret)
	}
	if v, ok, answered := l.cachedLabel(path); answered {
		return v, ok
	}
	if len(path) > 0 && path[0].FieldName != nil && !livecache.KeepsTyped(*path[0].FieldName) {
		// The object's own fields: the cache's content is what the
		// built object would hold under them.
		content := l.decodedContent()
		if content == nil {
			return nil, false
		}
		return lookupLive(content, path, secret)
	}
	u := l.whole()
	if u == nil {
		return nil, false
	}
	return lookupLive(u.Object, path, secret)
}

// cachedLabel answers a lookup of one label or annotation of a cached
// object from its typed metadata, as the built object's nested map would
// hold it (a string, or nothing); answered is false for any other path.
func (l *liveCopy) cachedLabel(path fieldpath.Path) (v any, ok, answered bool) {
	if len(path) != 3 || path[0].FieldName == nil || *path[0].FieldName != "metadata" ||
		path[1].FieldName == nil || path[2].FieldName == nil {
		return nil, false, false
	}
	var m map[string]string
	switch *path[1].FieldName {
	case "labels":
		m = l.cached.Labels
	case "annotations":
		m = l.cached.Annotations
	default:
		return nil, false, false
	}
	s, ok := m[*path[2].FieldName]
	if !ok {
		return nil, false, true
	}
	return s, true, true
}

// decodedContent returns the cached object's top-level fields, decoded
// once; nil when they cannot be decoded (err says why).
func (l *liveCopy) decodedContent() map[string]any {
	if l.content == nil && l.err == nil {
		l.content, l.err = l.cached.Content()
	}
	return l.content
}

// whole returns the cached object built whole (without managedFields),
// once; nil when it cannot be built (err says why).
func (l *liveCopy) whole() *unstructured.Unstructured {
	if l.built == nil && l.err == nil {
		l.built, l.err = l.cached.UnstructuredWithoutManagedFields()
	}
	return l.built
}
