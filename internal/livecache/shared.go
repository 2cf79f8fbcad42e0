package livecache

import (
	"encoding/binary"
	"maps"
	"slices"
	"sync"
)

// maxSharedMaps bounds the maps one informer keeps to share: past it the
// table starts again empty. Objects keep the maps they were given, so
// starting again only stops sharing with them, and a table that is
// cleared holds at most this many maps no object holds any more.
const maxSharedMaps = 256

// sharedMaps gives the objects of one informer one copy of each distinct
// labels or annotations map they carry. An app's objects of one kind
// mostly carry the same labels (the part-of label, the app's own) and the
// same annotations (syncd's managers annotation); decoded, each is a map
// of its own, about 300 bytes even for one entry, which was 7 MB of a
// cache of 10,000 objects. Cached objects are never modified, so they
// can share them.
type sharedMaps struct {
	mu   sync.Mutex
	maps map[string]map[string]string
}

// share returns the map equal to m the table holds, keeping m as that map
// when it holds none.
func (s *sharedMaps) share(m map[string]string) map[string]string {
	if len(m) == 0 {
		return m
	}
	key := mapKey(m)
	s.mu.Lock()
	defer s.mu.Unlock()
	if held, ok := s.maps[key]; ok {
		return held
	}
	if s.maps == nil || len(s.maps) >= maxSharedMaps {
		s.maps = map[string]map[string]string{}
	}
	s.maps[key] = m
	return m
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
