package livecache

import (
	"encoding/binary"
	"maps"
	"slices"
	"sync"
	"unique"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// maxShared bounds the maps and the fieldsV1 one informer keeps to share
// (each kind its own count): past it the table starts again empty.
// Objects keep what they were given, so starting again only stops
// sharing with them, and a table that is cleared holds at most this many
// values no object holds any more.
const maxShared = 256

// sharedMeta gives the objects of one informer one copy of each distinct
// labels or annotations map and each distinct managedFields entry's
// fieldsV1 they carry. An app's objects of one kind mostly carry the same
// labels (the part-of label, the app's own), the same annotations
// (syncd's managers annotation) and, when they have the same shape, the
// same fields owned by each manager; decoded, each map is a map of its
// own, about 300 bytes even for one entry (7 MB of a cache of 10,000
// objects), and each fieldsV1 a copy of its JSON. Cached objects are
// never modified, so they can share them. The zero value is ready.
type sharedMeta struct {
	mu     sync.Mutex
	maps   map[string]map[string]string
	fields map[string]*metav1.FieldsV1
}

// share returns the map equal to m the table holds, keeping m as that map
// when it holds none.
func (s *sharedMeta) share(m map[string]string) map[string]string {
	if len(m) == 0 {
		return m
	}
	key := mapKey(m)
	s.mu.Lock()
	defer s.mu.Unlock()
	if held, ok := s.maps[key]; ok {
		return held
	}
	if s.maps == nil || len(s.maps) >= maxShared {
		s.maps = map[string]map[string]string{}
	}
	s.maps[key] = m
	return m
}

// shareFields returns the fieldsV1 with f's JSON the table holds, keeping
// f as that one when it holds none.
func (s *sharedMeta) shareFields(f *metav1.FieldsV1) *metav1.FieldsV1 {
	if f == nil || len(f.Raw) == 0 {
		return f
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if held, ok := s.fields[string(f.Raw)]; ok {
		return held
	}
	if s.fields == nil || len(s.fields) >= maxShared {
		s.fields = map[string]*metav1.FieldsV1{}
	}
	s.fields[string(f.Raw)] = f
	return f
}

// shareEntries shares what the managedFields entries of one object hold
// in common with other objects': each fieldsV1 (shareFields), and the
// manager, operation, apiVersion and fieldsType strings, which every
// object managed the same way repeats (unique keeps one copy of each
// process-wide, dropped once no object holds it).
func (s *sharedMeta) shareEntries(entries []metav1.ManagedFieldsEntry) {
	for i := range entries {
		e := &entries[i]
		e.FieldsV1 = s.shareFields(e.FieldsV1)
		e.Manager = unique.Make(e.Manager).Value()
		e.Operation = metav1.ManagedFieldsOperationType(unique.Make(string(e.Operation)).Value())
		e.APIVersion = unique.Make(e.APIVersion).Value()
		e.FieldsType = unique.Make(e.FieldsType).Value()
	}
}

// mapKey is m's entries in key order, each key and value prefixed by its
// length, so that two maps have the same key exactly when they are equal.
func mapKey(m map[string]string) string {
	var b []byte
	for _, k := range slices.Sorted(maps.Keys(m)) {
		b = binary.AppendUvarint(b, uint64(len(k)))
		b = append(b, k...)
		v := m[k]
		b = binary.AppendUvarint(b, uint64(len(v)))
		b = append(b, v...)
	}
	return string(b)
}
