package planner

import (
	"crypto/sha256"
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
	sets map[[sha256.Size]byte]*fieldpath.Set
}

// share makes the slices' field sets the run's copies.
func (s *sharedSets) share(slices []Slice) {
	for i := range slices {
		slices[i].Fields = s.one(slices[i].Fields)
	}
}

// one returns the run's copy of set, keeping set as that copy when the
// run has none. Sets are keyed by the hash of their JSON, which lists
// their paths in order (the JSON itself would double the memory of a
// large set, a CustomResourceDefinition's, while the plan is made), and
// a set is shared only with one that Equals it.
func (s *sharedSets) one(set *fieldpath.Set) *fieldpath.Set {
	if set == nil {
		return nil
	}
	js, err := set.ToJSON()
	if err != nil {
		return set
	}
	key := sha256.Sum256(js)
	s.mu.Lock()
	defer s.mu.Unlock()
	if held, ok := s.sets[key]; ok && held.Equals(set) {
		return held
	}
	if s.sets == nil {
		s.sets = map[[sha256.Size]byte]*fieldpath.Set{}
	}
	s.sets[key] = set
	return set
}
