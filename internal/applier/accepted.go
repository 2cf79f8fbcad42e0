package applier

import (
	"crypto/sha256"
	"encoding/json"
	"sync"

	"syncd.dev/syncd/internal/planner"
)

// Accepted remembers the validation dry runs the API server accepted for
// one app, so that a later Apply of the app does not dry-run again what
// has a known outcome: the same object, sent as the same body by the same
// manager, against the same live resourceVersion (none, for an object
// that does not exist) as an accepted dry run. Such an object can only
// still have something to write when its write never happened: its stage
// was refused because of another object, or the run was cancelled. So
// after a refused stage, the next sync dry-runs only what changed in Git
// or in the cluster, and the objects refused before, instead of the whole
// stage again.
//
// It keeps the outcomes of the last two Apply calls only (the entries an
// Apply found or added, and those of the one before), so its size stays
// that of the app's plan. The zero value is not usable: use NewAccepted.
// One Accepted belongs to one app on one cluster under one identity: an
// outcome says nothing of what another identity or cluster would answer.
type Accepted struct {
	mu         sync.Mutex
	prev, next map[acceptedKey]struct{}
}

// acceptedKey is one dry run: the object, its manager, the sha256 of the
// body sent and the live resourceVersion the server judged it against.
type acceptedKey struct {
	ref     planner.ObjectRef
	manager planner.FieldManager
	body    [sha256.Size]byte
	rv      string
}

// NewAccepted returns an empty record of accepted dry runs.
func NewAccepted() *Accepted {
	return &Accepted{prev: map[acceptedKey]struct{}{}, next: map[acceptedKey]struct{}{}}
}

// known reports whether k is an accepted dry run of this Apply or the one
// before, carrying it over to the next Apply's record when it is.
func (a *Accepted) known(k acceptedKey) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	if _, ok := a.next[k]; ok {
		return true
	}
	if _, ok := a.prev[k]; ok {
		a.next[k] = struct{}{}
		return true
	}
	return false
}

// accept records an accepted dry run.
func (a *Accepted) accept(k acceptedKey) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.next[k] = struct{}{}
}

// rotate ends one Apply: its outcomes become the ones an Apply looks back
// to, and the older ones are dropped.
func (a *Accepted) rotate() {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.prev, a.next = a.next, map[acceptedKey]struct{}{}
}

// dryRunKey is the key of the validation dry run of t sending s, and the
// encoded body it hashed, which the dry run then sends.
func dryRunKey(t *target, s planner.Slice) (acceptedKey, []byte, error) {
	body, err := json.Marshal(s.Object.Object)
	if err != nil {
		return acceptedKey{}, nil, err
	}
	k := acceptedKey{ref: t.obj.Ref, manager: s.Manager, body: sha256.Sum256(body)}
	if t.live != nil {
		k.rv = t.live.GetResourceVersion()
	}
	return k, body, nil
}
