package drift

import (
	"cmp"
	"errors"
	"slices"
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
	// fields are the observed fields of each object, sorted by path.
	// The watcher observes every declared field of every object it
	// watches, nearly all of which never change owner: one small record
	// each, and one map entry per object rather than per field.
	fields map[objKey][]flapField
}

// flapField is what is known of one field: its path, its owner at the
// last observation and, once the owner changed, its history.
type flapField struct {
	path  string
	owner string
	// changed is nil until the owner first changes: every owner
	// observed is then owner.
	changed *flapHistory
}

// flapHistory is the history of a field whose owner changed.
type flapHistory struct {
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
	return &FlapDetector{opts: opts, fields: map[objKey][]flapField{}}, nil
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
	k := keyOf(object)
	fs := d.fields[k]
	i, found := findFlapField(fs, path)
	if !found {
		d.fields[k] = slices.Insert(fs, i, flapField{path: path, owner: owner})
		return false
	}
	f := &fs[i]
	if f.owner == owner {
		return f.changed != nil && f.changed.flapping
	}
	if f.changed == nil {
		f.changed = &flapHistory{seen: map[string]bool{f.owner: true}}
	}
	f.owner = owner
	h := f.changed
	h.seen[owner] = true
	h.flips = append(h.flips, at)
	cut := 0
	for cut < len(h.flips) && at.Sub(h.flips[cut]) > d.opts.Window {
		cut++
	}
	h.flips = h.flips[cut:]
	if len(h.flips) >= d.opts.Flips {
		h.flapping = true
	}
	return h.flapping
}

// findFlapField returns where the field at path is, or would be inserted,
// in fs (sorted by path).
func findFlapField(fs []flapField, path string) (int, bool) {
	return slices.BinarySearchFunc(fs, path, func(f flapField, p string) int { return strings.Compare(f.path, p) })
}

// field returns the record of the field at path of the object k, nil when
// none. d.mu is held.
func (d *FlapDetector) field(k objKey, path string) *flapField {
	fs := d.fields[k]
	if i, ok := findFlapField(fs, path); ok {
		return &fs[i]
	}
	return nil
}

// Flapping reports whether the field at path of object crossed the
// threshold since the last Forget or Reset.
func (d *FlapDetector) Flapping(object planner.ObjectRef, path string) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	f := d.field(keyOf(object), path)
	return f != nil && f.changed != nil && f.changed.flapping
}

// Owners returns every owner observed on the field since the last Forget
// or Reset, sorted; owners observed together (joined with ",") are split.
func (d *FlapDetector) Owners(object planner.ObjectRef, path string) []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	f := d.field(keyOf(object), path)
	if f == nil {
		return nil
	}
	seen := map[string]bool{f.owner: true}
	if f.changed != nil {
		seen = f.changed.seen
	}
	set := map[string]bool{}
	for o := range seen {
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
	k := keyOf(object)
	fs := d.fields[k]
	i, ok := findFlapField(fs, path)
	if !ok {
		return
	}
	if fs = slices.Delete(fs, i, i+1); len(fs) == 0 {
		delete(d.fields, k)
		return
	}
	d.fields[k] = fs
}

// Reset drops everything, e.g. when the app's config changed.
func (d *FlapDetector) Reset() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.fields = map[objKey][]flapField{}
}

// owner returns the owner last observed on the field at path of object;
// ok is false when it was never observed.
func (d *FlapDetector) owner(object planner.ObjectRef, path string) (owner string, ok bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if f := d.field(keyOf(object), path); f != nil {
		return f.owner, true
	}
	return "", false
}
