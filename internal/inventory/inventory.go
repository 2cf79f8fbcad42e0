package inventory

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"

	kjson "sigs.k8s.io/json"

	"syncd.dev/syncd/internal/applier"
	"syncd.dev/syncd/internal/planner"
)

// FormatVersion is the version of the inventory blob written in the
// parent's data; a reader refuses versions it does not know.
const FormatVersion = 1

// DataKey is the key of the parent Secret's data holding the inventory: a
// gzip-compressed JSON document (see Inventory).
const DataKey = "inventory.json.gz"

// maxBlob bounds what a reader inflates (a Secret holds at most 1 MiB
// compressed; 64 MiB of JSON is far beyond any real inventory).
const maxBlob = 64 << 20

// SliceHash is the hash of one manager's last applied slice.
type SliceHash struct {
	Manager string `json:"manager"`
	Hash    string `json:"hash"`
	// Owned is the fingerprint of the manager's managedFields entries
	// right after that apply (applier.Change.Owned); empty when recorded
	// by a syncd that did not record it.
	Owned string `json:"owned,omitempty"`
	// Yield is, when the apply yielded fields to other managers
	// (conflict policy yield), what they held right after it; nil when
	// it yielded nothing.
	Yield *Yield `json:"yield,omitempty"`
}

// Yield is the record of fields a slice's apply left to other managers:
// while each holds the same and the app's conflict policy is the one the
// yield was decided under, the object is as syncd left it.
type Yield struct {
	// Policy is the app's conflict policy (App.ConflictPolicy) the yield
	// was decided under.
	Policy string `json:"policy"`
	// To are the managers yielded to, with what each held
	// (applier.Resolution.YieldedTo), sorted by manager.
	To []Holder `json:"to"`
}

// Holder is a manager syncd yielded fields to and the digest of what it
// held (ownership.Holding).
type Holder struct {
	Manager string `json:"manager"`
	Fields  string `json:"fields"`
}

// sameSlice reports whether a and b record the same.
func sameSlice(a, b SliceHash) bool {
	return a.Manager == b.Manager && a.Hash == b.Hash && a.Owned == b.Owned && sameYield(a.Yield, b.Yield)
}

// sameYield reports whether a and b record the same yield (nil: none).
func sameYield(a, b *Yield) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.Policy == b.Policy && slices.Equal(a.To, b.To)
}

// Member is one object of an app's inventory.
type Member struct {
	Group     string        `json:"group,omitempty"`
	Version   string        `json:"version"`
	Kind      string        `json:"kind"`
	Namespace string        `json:"namespace,omitempty"`
	Name      string        `json:"name"`
	Stage     planner.Stage `json:"stage"`
	// Adopted is true when the object existed before syncd first applied
	// it; such objects are orphaned, not deleted, when they leave Git
	// (unless the app says adopted: delete).
	Adopted bool `json:"adopted,omitempty"`
	// Slices are the hashes of the slices syncd last applied, in the
	// plan's order; empty while an apply is pending.
	Slices []SliceHash `json:"slices,omitempty"`
	// ResourceVersion is the object's resourceVersion right after syncd's
	// last apply; empty while an apply is pending.
	ResourceVersion string `json:"resourceVersion,omitempty"`
	// Blocked says why the last prune left this object alone although it
	// left Git (a guard's reason); empty for objects still in Git.
	Blocked string `json:"blocked,omitempty"`
}

// Ref returns the member's object reference.
func (m *Member) Ref() planner.ObjectRef {
	return planner.ObjectRef{Group: m.Group, Version: m.Version, Kind: m.Kind, Namespace: m.Namespace, Name: m.Name}
}

// sameMember reports whether a and b record the same, as their encodings
// would: every field equal, no slices and empty slices alike.
func sameMember(a, b *Member) bool {
	return a.Group == b.Group && a.Version == b.Version && a.Kind == b.Kind &&
		a.Namespace == b.Namespace && a.Name == b.Name && a.Stage == b.Stage &&
		a.Adopted == b.Adopted && a.ResourceVersion == b.ResourceVersion &&
		a.Blocked == b.Blocked && slices.EqualFunc(a.Slices, b.Slices, sameSlice)
}

// Key identifies an object independently of its API version.
type Key struct {
	Group, Kind, Namespace, Name string
}

// KeyOf returns the key of a ref.
func KeyOf(r planner.ObjectRef) Key {
	return Key{Group: r.Group, Kind: r.Kind, Namespace: r.Namespace, Name: r.Name}
}

// Inventory is what an app's parent records: every object syncd applied
// for the app and not yet pruned.
type Inventory struct {
	// App is the app's name.
	App string `json:"app"`
	// ID is the ApplySet ID (also the parent's applyset.kubernetes.io/id
	// label and every member's part-of label).
	ID      string    `json:"id"`
	Version int       `json:"version"`
	Members []*Member `json:"members"`
	// Revision is the commit SHA last applied and pruned (the parent's
	// AnnotationRevision, not part of the blob); empty before the first.
	Revision string `json:"-"`
	// Owner is whom the inventory belongs to (the parent's
	// AnnotationOwner, not part of the blob); empty when none is
	// recorded.
	Owner string `json:"-"`
	// History is the app's last applies, oldest first (the parent's
	// AnnotationHistory, not part of the blob).
	History []HistoryEntry `json:"-"`
}

// Index returns the members by key.
func (inv *Inventory) Index() map[Key]*Member {
	out := make(map[Key]*Member, len(inv.Members))
	for _, m := range inv.Members {
		out[KeyOf(m.Ref())] = m
	}
	return out
}

// Sort orders the members by stage, then group, kind, namespace and name:
// the plan's apply order.
func (inv *Inventory) Sort() {
	sort.SliceStable(inv.Members, func(i, j int) bool {
		a, b := inv.Members[i], inv.Members[j]
		if a.Stage != b.Stage {
			return a.Stage < b.Stage
		}
		return a.Ref().Less(b.Ref())
	})
}

// GroupKinds returns the contains-group-kinds annotation value: the
// members' "<Kind>.<group>" ("<Kind>" for the core group), sorted, unique.
func (inv *Inventory) GroupKinds() string {
	seen := map[string]bool{}
	for _, m := range inv.Members {
		gk := m.Kind
		if m.Group != "" {
			gk += "." + m.Group
		}
		seen[gk] = true
	}
	return joinSorted(seen)
}

// Namespaces returns the additional-namespaces annotation value: the
// members' namespaces other than parentNS, sorted, unique.
func (inv *Inventory) Namespaces(parentNS string) string {
	seen := map[string]bool{}
	for _, m := range inv.Members {
		if m.Namespace != "" && m.Namespace != parentNS {
			seen[m.Namespace] = true
		}
	}
	return joinSorted(seen)
}

func joinSorted(set map[string]bool) string {
	out := make([]string, 0, len(set))
	for k := range set {
		out = append(out, k)
	}
	slices.Sort(out)
	return strings.Join(out, ",")
}

// Encode returns the gzip-compressed JSON of the inventory: the bytes
// json.NewEncoder(w).Encode would write of it at FormatVersion, written
// member by member (encodeJSON).
func (inv *Inventory) Encode() ([]byte, error) {
	var buf bytes.Buffer
	zw, err := gzip.NewWriterLevel(&buf, gzip.BestSpeed)
	if err != nil {
		return nil, err
	}
	if err := inv.encodeJSON(zw); err != nil {
		return nil, fmt.Errorf("inventory %s: encode: %w", inv.App, err)
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// encodeJSON writes the inventory's JSON at FormatVersion to w, as
// json.Encoder writes it (the same bytes, a newline after), one member at
// a time: encoding/json builds a whole value in memory before writing it
// (and keeps that buffer for reuse), which for 10,000 members was a
// buffer of megabytes at a no-op's peak heap, twice a sync.
func (inv *Inventory) encodeJSON(w io.Writer) error {
	head := struct {
		App     string `json:"app"`
		ID      string `json:"id"`
		Version int    `json:"version"`
	}{inv.App, inv.ID, FormatVersion}
	b, err := json.Marshal(head)
	if err != nil {
		return err
	}
	if inv.Members == nil {
		b = append(b[:len(b)-1], `,"members":null}`+"\n"...)
		_, err := w.Write(b)
		return err
	}
	b = append(b[:len(b)-1], `,"members":[`...)
	for i, m := range inv.Members {
		if i > 0 {
			b = append(b, ',')
		}
		mj, err := json.Marshal(m)
		if err != nil {
			return err
		}
		if _, err := w.Write(append(b, mj...)); err != nil {
			return err
		}
		b = b[:0]
	}
	_, err = w.Write(append(b, "]}\n"...))
	return err
}

// Decode reads an inventory written by Encode. where names the parent for
// error messages.
func Decode(where string, data []byte) (*Inventory, error) {
	raw, err := inflate(where, data)
	if err != nil {
		return nil, err
	}
	return decodeMembers(where, raw)
}

// inflate gunzips data, refusing more than maxBlob bytes.
func inflate(where string, data []byte) ([]byte, error) {
	zr, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		return nil, fmt.Errorf("%s: data[%s] is not gzip: %w; delete the key (syncd rebuilds the inventory from the next apply, without pruning) or restore it", where, DataKey, err)
	}
	buf := bytes.NewBuffer(make([]byte, 0, inflatedSize(data)+bytes.MinRead))
	if _, err := buf.ReadFrom(io.LimitReader(zr, maxBlob+1)); err != nil {
		return nil, fmt.Errorf("%s: data[%s]: %w", where, DataKey, err)
	}
	raw := buf.Bytes()
	if len(raw) > maxBlob {
		return nil, fmt.Errorf("%s: data[%s] inflates to more than %d MiB; it is not a syncd inventory", where, DataKey, maxBlob>>20)
	}
	return raw, nil
}

// inflatedSize is what gzip data says its content's size is (the ISIZE
// of its last member), at most maxBlob+1: a capacity to read it into at
// once instead of growing a buffer, and copying it, a dozen times.
func inflatedSize(data []byte) int {
	if len(data) < 4 {
		return 0
	}
	return int(min(binary.LittleEndian.Uint32(data[len(data)-4:]), maxBlob+1))
}

// decodeStrict decodes raw as JSON into a new T, refusing fields T does
// not declare, and keys given twice. It decodes raw where it is: a
// json.Decoder would first copy it into a buffer of its own, growing it
// by doubling (7 MB beside the 3 MB of an inventory of 10,000 objects,
// live at the daemon's peak, which is the reconcile that reads it).
func decodeStrict[T any](raw []byte) (*T, error) {
	v := new(T)
	strict, err := kjson.UnmarshalStrict(raw, v, kjson.DisallowUnknownFields, kjson.DisallowDuplicateFields)
	if err != nil {
		return nil, err
	}
	if len(strict) > 0 {
		return nil, errors.Join(strict...)
	}
	return v, nil
}

// decodeMembers reads the JSON of a format-1 inventory.
func decodeMembers(where string, raw []byte) (*Inventory, error) {
	inv, err := decodeStrict[Inventory](raw)
	if err != nil {
		return nil, fmt.Errorf("%s: data[%s]: %w", where, DataKey, err)
	}
	if inv.Version != FormatVersion {
		return nil, fmt.Errorf("%s: inventory format version %d, this syncd reads version %d; run a syncd that knows it", where, inv.Version, FormatVersion)
	}
	for i, m := range inv.Members {
		if m == nil || m.Kind == "" || m.Name == "" || m.Version == "" {
			return nil, fmt.Errorf("%s: data[%s]: members[%d] lacks version, kind or name", where, DataKey, i)
		}
	}
	return inv, nil
}

// sameApplied reports whether the member records exactly the slices of obj.
func sameApplied(m *Member, obj *planner.Object) bool {
	if len(m.Slices) != len(obj.Slices) {
		return false
	}
	for i, s := range obj.Slices {
		if m.Slices[i].Manager != string(s.Manager) || m.Slices[i].Hash != s.Hash {
			return false
		}
	}
	return true
}

// ownedHashes returns the slice hashes of a plan object with each
// manager's fingerprint and yield, as the apply x reported them. A slice
// whose fingerprint the apply did not report (the watch cache alone found
// it unchanged, and nothing was read) keeps the one prev recorded for the
// same slice, which the skip found still true.
func ownedHashes(obj *planner.Object, x *applyResult, prev *Member) []SliceHash {
	out := hashesOf(obj)
	for i := range out {
		m := out[i].Manager
		got := x.of(m)
		out[i].Owned, out[i].Yield = got.owned, got.yield
		if p := prevSlice(prev, i, out[i]); p != nil && out[i].Owned == "" {
			out[i].Owned = p.Owned
		}
	}
	return out
}

// forgetStaleYields makes every member of inv whose record holds a yield
// decided under another conflict policy than policy pending again (no
// fingerprints, no resourceVersion), so that no skip finds it as syncd
// left it and the next apply lets the policy now in force decide its
// conflicts (a yield changed to force takes the field). The member is
// replaced, not changed in place.
func forgetStaleYields(inv *Inventory, policy string) {
	for i, mem := range inv.Members {
		if !yieldsUnderOtherPolicy(mem, policy) {
			continue
		}
		c := *mem
		c.Slices, c.ResourceVersion = nil, ""
		inv.Members[i] = &c
	}
}

// yieldsUnderOtherPolicy reports whether a slice of mem records a yield
// decided under another conflict policy than policy.
func yieldsUnderOtherPolicy(mem *Member, policy string) bool {
	for _, s := range mem.Slices {
		if s.Yield != nil && s.Yield.Policy != policy {
			return true
		}
	}
	return false
}

// prevSlice returns prev's record of slice i when it is the same slice
// (manager and hash) as s, else nil.
func prevSlice(prev *Member, i int, s SliceHash) *SliceHash {
	if prev == nil || i >= len(prev.Slices) || prev.Slices[i].Manager != s.Manager || prev.Slices[i].Hash != s.Hash {
		return nil
	}
	return &prev.Slices[i]
}

// yieldOf is the inventory's record of the applier's holdings after a
// yield decided under conflict policy policy; nil when nothing was
// yielded.
func yieldOf(hs []applier.Holding, policy string) *Yield {
	if len(hs) == 0 {
		return nil
	}
	y := &Yield{Policy: policy}
	for _, h := range hs {
		y.To = append(y.To, Holder{Manager: h.Manager, Fields: h.Fields})
	}
	return y
}

// hashesOf returns the slice hashes of a plan object.
func hashesOf(obj *planner.Object) []SliceHash {
	out := make([]SliceHash, len(obj.Slices))
	for i, s := range obj.Slices {
		out[i] = SliceHash{Manager: string(s.Manager), Hash: s.Hash}
	}
	return out
}
