package drift

import (
	"cmp"
	"errors"
	"sort"
	"strings"
	"sync"
	"time"

	"k8s.io/utils/clock"

	"syncd.dev/syncd/internal/planner"
)

// FlapOptions configure a FlapDetector.
type FlapOptions struct {
	// Flips is how many owner changes within Window make a field
	// flapping; default 4 (two full rounds of a fight). At least 2.
	Flips int
	// Window is how far back flips count; default 10 minutes.
	Window time.Duration
	// Clock gives the time of an Observe call made with a zero time;
	// default the real clock.
	Clock clock.PassiveClock
}

// FlapDetector notices fields whose owner keeps flipping between syncd
// and another manager: two writers forcing different values in turn. Once
// a field crossed the threshold it stays flapping until Forget or Reset
// (the daemon calls Reset when the app's config changes), so the applier
// can stop forcing it and the alert stays up until a human decides. It is
// safe for concurrent use.
type FlapDetector struct {
	opts FlapOptions
	mu   sync.Mutex
	keys map[flapKey]*flapState
}

type flapKey struct {
	obj  objKey
	path string
}

type flapState struct {
	owner    string
	seen     map[string]bool // every owner observed
	flips    []time.Time
	flapping bool
}

// NewFlapDetector returns a FlapDetector; it checks opts.
func NewFlapDetector(opts FlapOptions) (*FlapDetector, error) {
	opts.Flips = cmp.Or(opts.Flips, 4)
	opts.Window = cmp.Or(opts.Window, 10*time.Minute)
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	if opts.Flips < 2 {
		return nil, errors.New("flap detector: flips must be at least 2: one owner change is an ordinary take-over")
	}
	if opts.Window < 0 {
		return nil, errors.New("flap detector: window must be positive")
	}
	return &FlapDetector{opts: opts, keys: map[flapKey]*flapState{}}, nil
}

// Observe records that owner owns the field at path of object at time at
// (the clock's time when at is zero) and reports whether the field is now
// flapping. owner names the manager or managers owning the field (callers
// join several with ","); an unchanged owner is not a flip. Observations
// must come in time order per field.
func (d *FlapDetector) Observe(object planner.ObjectRef, path, owner string, at time.Time) bool {
	if at.IsZero() {
		at = d.opts.Clock.Now()
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	k := flapKey{keyOf(object), path}
	st := d.keys[k]
	if st == nil {
		d.keys[k] = &flapState{owner: owner, seen: map[string]bool{owner: true}}
		return false
	}
	if st.owner == owner {
		return st.flapping
	}
	st.owner = owner
	st.seen[owner] = true
	st.flips = append(st.flips, at)
	cut := 0
	for cut < len(st.flips) && at.Sub(st.flips[cut]) > d.opts.Window {
		cut++
	}
	st.flips = st.flips[cut:]
	if len(st.flips) >= d.opts.Flips {
		st.flapping = true
	}
	return st.flapping
}

// Flapping reports whether the field at path of object crossed the
// threshold since the last Forget or Reset.
func (d *FlapDetector) Flapping(object planner.ObjectRef, path string) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	st := d.keys[flapKey{keyOf(object), path}]
	return st != nil && st.flapping
}

// Owners returns every owner observed on the field since the last Forget
// or Reset, sorted; owners observed together (joined with ",") are split.
func (d *FlapDetector) Owners(object planner.ObjectRef, path string) []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	st := d.keys[flapKey{keyOf(object), path}]
	if st == nil {
		return nil
	}
	set := map[string]bool{}
	for o := range st.seen {
		for _, m := range strings.Split(o, ",") {
			if m != "" {
				set[m] = true
			}
		}
	}
	out := make([]string, 0, len(set))
	for m := range set {
		out = append(out, m)
	}
	sort.Strings(out)
	return out
}

// Forget drops what is known about one field.
func (d *FlapDetector) Forget(object planner.ObjectRef, path string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	delete(d.keys, flapKey{keyOf(object), path})
}

// Reset drops everything, e.g. when the app's config changed.
func (d *FlapDetector) Reset() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.keys = map[flapKey]*flapState{}
}
