package planner

import (
	"sync"

	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
)

// sharedSets keeps one copy of each distinct field set of a plan's
// slices. Objects of one shape (the same keys and list items, whatever
// their values) own the same fields, and a field set is a tree of nodes
// and path elements, several hundred bytes for a ConfigMap and a few
// kilobytes for a Deployment: at 50,000 objects the slices' sets were
// about 25 MB of the first sync's peak heap. Field sets are never
// modified once a slice holds one (every consumer's Union, Difference
// and Intersection returns a new set), so slices can share them. The
// table lives as long as the plan run.
type sharedSets struct {
	mu   sync.Mutex
	sets map[string]*fieldpath.Set
}

// share makes the slices' field sets the run's copies.
func (s *sharedSets) share(slices []Slice) {
	for i := range slices {
		slices[i].Fields = s.one(slices[i].Fields)
	}
}

// one returns the run's copy of set, keeping set as that copy when the
// run has none; keyed by its JSON, which lists its paths in order.
func (s *sharedSets) one(set *fieldpath.Set) *fieldpath.Set {
	if set == nil {
		return nil
	}
	key, err := set.ToJSON()
	if err != nil {
		return set
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if held, ok := s.sets[string(key)]; ok {
		return held
	}
	if s.sets == nil {
		s.sets = map[string]*fieldpath.Set{}
	}
	s.sets[string(key)] = set
	return set
}
