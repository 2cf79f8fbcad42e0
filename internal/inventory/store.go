package inventory

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/metadata"
)

// SecretType is the type of the parent Secrets syncd writes.
const SecretType = "syncd.dev/applyset"

// StoreManager is the field manager syncd writes parent Secrets as.
const StoreManager = "syncd-inventory"

var secrets = schema.GroupVersionResource{Version: "v1", Resource: "secrets"}

// store reads and writes the parent Secrets of one syncd namespace, and
// the chunk Secrets of the inventories too large for their parent.
type store struct {
	dyn       dynamic.Interface
	md        metadata.Interface
	namespace string
	tooling   string
	// chunkSize is the most compressed bytes a Secret holds (default
	// DefaultChunkSize).
	chunkSize int
	// grace is how old a chunk no parent names must be before a write
	// deletes it (New sets chunkGrace).
	grace time.Duration
}

// loaded is an inventory as read, with what is needed to tell whether a
// save would change anything.
type loaded struct {
	inv    *Inventory
	exists bool
	// blob is the compressed inventory (format 1), inline or reassembled
	// from the chunks.
	blob []byte
	ann  map[string]string
	// uid is the parent's, which its chunks name as their owner.
	uid types.UID
	// chunks names the chunk Secrets the parent names, in order; empty
	// for an inline inventory.
	chunks []string
	// rv is the parent's resourceVersion as read or last written: every
	// write of the parent is conditional on it (see errChanged).
	rv string
	// blobOf is the inventory blob is the encoding of, when that is
	// known: the one read from a blob of this FormatVersion that names
	// the app and ID the parent does, until save writes another. nil
	// when not known: save then compares encodings.
	blobOf *Inventory
}

// records reports whether the parent already holds inv, judged without
// encoding inv: blobOf has the same app, ID and members, field for field.
// Encoding every member and compressing it, only to find the bytes the
// same, was most of the inventory's work in a no-op sync.
func (l *loaded) records(inv *Inventory) bool {
	was := l.blobOf
	if !l.exists || was == nil || was.App != inv.App || was.ID != inv.ID || len(was.Members) != len(inv.Members) {
		return false
	}
	for i, m := range inv.Members {
		if !sameMember(m, was.Members[i]) {
			return false
		}
	}
	return true
}

func (s *store) where(app string) string {
	return fmt.Sprintf("inventory of app %s (Secret %s/%s)", app, s.namespace, ParentName(app))
}

// loadAttempts bounds the re-reads of a parent whose chunk vanished while
// it was read (a concurrent write replaced it).
const loadAttempts = 3

// load reads an app's inventory; a missing parent is an empty inventory.
// A chunked inventory costs one GET more per chunk.
func (s *store) load(ctx context.Context, app string) (*loaded, error) {
	var err error
	for range loadAttempts {
		var l *loaded
		if l, err = s.loadOnce(ctx, app); !errors.Is(err, errChunkMissing) {
			return l, err
		}
	}
	return nil, err
}

func (s *store) loadOnce(ctx context.Context, app string) (*loaded, error) {
	id := AppID(app, s.namespace)
	where := s.where(app)
	u, err := s.dyn.Resource(secrets).Namespace(s.namespace).Get(ctx, ParentName(app), metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return &loaded{inv: &Inventory{App: app, ID: id, Version: FormatVersion}}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("%s: read: %w", where, err)
	}
	ann := u.GetAnnotations()
	tool, ok := ann[AnnotationTooling]
	switch {
	case !ok:
		return nil, fmt.Errorf("%s: exists without the %s annotation, so it is not syncd's; rename the app or delete that Secret", where, AnnotationTooling)
	case toolName(tool) != ToolName:
		return nil, fmt.Errorf("%s: the ApplySet is managed by %q, not %s; syncd does not change another tool's ApplySet: rename the app or hand the objects over by deleting that Secret", where, tool, ToolName)
	}
	if got := u.GetLabels()[LabelID]; got != id {
		return nil, fmt.Errorf("%s: label %s is %q, want %q; fix or delete the label (syncd restores it)", where, LabelID, got, id)
	}
	l := &loaded{exists: true, ann: ann, uid: u.GetUID(), rv: u.GetResourceVersion()}
	defer func() {
		if l.inv != nil {
			l.inv.Revision = ann[AnnotationRevision]
			l.inv.Owner = ann[AnnotationOwner]
			l.inv.History = decodeHistory(ann[AnnotationHistory])
		}
	}()
	enc, _, _ := unstructured.NestedString(u.Object, "data", DataKey)
	if enc == "" {
		l.inv = &Inventory{App: app, ID: id, Version: FormatVersion}
		return l, nil
	}
	data, err := base64.StdEncoding.DecodeString(enc)
	if err != nil {
		return nil, fmt.Errorf("%s: data[%s] is not base64: %w", where, DataKey, err)
	}
	raw, err := inflate(where, data)
	if err != nil {
		return nil, err
	}
	version, err := parentVersion(where, raw)
	if err != nil {
		return nil, err
	}
	if version != ChunkedVersion {
		// Format 1: the inventory itself, as every syncd wrote it
		// before chunks (decodeMembers refuses unknown versions).
		if l.inv, err = decodeMembers(where, raw); err != nil {
			return nil, err
		}
		l.blob = data
		l.noteBlobOf(app, id)
		return l, nil
	}
	idx, err := decodeIndex(where, raw)
	if err != nil {
		return nil, err
	}
	if l.blob, err = s.readChunks(ctx, app, id, idx); err != nil {
		return nil, err
	}
	if l.inv, err = Decode(where, l.blob); err != nil {
		return nil, err
	}
	if len(l.inv.Members) != idx.MemberCount {
		return nil, fmt.Errorf("%s: the chunks hold %d members, the parent says %d; restore the chunks or delete the parent Secret (syncd rebuilds the inventory from the next apply, without pruning)", where, len(l.inv.Members), idx.MemberCount)
	}
	for _, c := range idx.Chunks {
		l.chunks = append(l.chunks, c.Name)
	}
	l.noteBlobOf(app, id)
	return l, nil
}

// noteBlobOf sets the decoded inventory's app and ID to the parent's, and
// notes it as what the blob encodes when the blob, at this FormatVersion,
// named the same.
func (l *loaded) noteBlobOf(app, id string) {
	if l.inv.App == app && l.inv.ID == id && l.inv.Version == FormatVersion {
		l.blobOf = l.inv
	}
	l.inv.App, l.inv.ID = app, id
}

// save writes inv unless it equals what prev holds; it reports whether
// it wrote.
//
// An inventory that fits in one Secret is written into the parent, as
// always. A larger one is written so that a crash (or a failed request)
// at any point leaves a parent that names a complete inventory, the old
// one or the new one:
//
//  1. only if the parent does not exist yet: the parent, with its labels
//     and annotations and no data (an empty inventory, as before), for
//     the UID its chunks name as their owner;
//  2. the new chunks, each a new Secret (names depend on the content), so
//     the chunks the parent names are untouched;
//  3. the parent, naming the new chunks: the one write that switches from
//     the old inventory to the new;
//  4. the chunks the old parent named, and, after chunkGrace, any other
//     chunk of the app no parent names (left by an interrupted write):
//     deleted.
//
// Deleting the parent deletes its chunks (garbage collection of
// dependents).
func (s *store) save(ctx context.Context, prev *loaded, inv *Inventory) (bool, error) {
	inv.Sort()
	ann := s.annotations(inv)
	if prev != nil && prev.records(inv) && sameAnnotations(prev.ann, ann) {
		return false, nil
	}
	blob, err := inv.Encode()
	if err != nil {
		return false, err
	}
	if prev != nil && prev.exists && bytes.Equal(prev.blob, blob) && sameAnnotations(prev.ann, ann) {
		return false, nil
	}
	if prev == nil {
		prev = &loaded{}
	}
	data := blob
	var chunks []string
	if s.chunked(blob) {
		uid := prev.uid
		if !prev.exists || uid == "" {
			u, err := s.applyParent(ctx, inv, ann, nil, prev.rv)
			if err != nil {
				return false, err
			}
			uid, prev.rv = u.GetUID(), u.GetResourceVersion()
		}
		idx, err := s.writeChunks(ctx, inv, blob, uid)
		if err != nil {
			return false, err
		}
		if data, err = encodeIndex(idx); err != nil {
			return false, err
		}
		for _, c := range idx.Chunks {
			chunks = append(chunks, c.Name)
		}
	}
	u, err := s.applyParent(ctx, inv, ann, data, prev.rv)
	if err != nil {
		return false, err
	}
	old := prev.chunks
	// blobOf is not kept: holding Begin's superset (every member) for
	// the whole apply, to spare Finish one encoding after a write, cost
	// more memory than the encoding costs time.
	prev.exists, prev.blob, prev.blobOf, prev.ann, prev.uid, prev.chunks, prev.rv = true, blob, nil, ann, u.GetUID(), chunks, u.GetResourceVersion()
	if len(old) == 0 && len(chunks) == 0 {
		return true, nil
	}
	keep := map[string]bool{}
	for _, c := range chunks {
		keep[c] = true
	}
	return true, s.deleteStale(ctx, inv.App, inv.ID, old, keep)
}

// annotations are the parent's annotations that record inv.
func (s *store) annotations(inv *Inventory) map[string]string {
	ann := map[string]string{
		AnnotationTooling:    s.tooling,
		AnnotationGroupKinds: inv.GroupKinds(),
	}
	if ns := inv.Namespaces(s.namespace); ns != "" {
		ann[AnnotationNamespaces] = ns
	}
	if inv.Revision != "" {
		ann[AnnotationRevision] = inv.Revision
	}
	if inv.Owner != "" {
		ann[AnnotationOwner] = inv.Owner
	}
	if len(inv.History) > 0 {
		ann[AnnotationHistory] = encodeHistory(inv.History)
	}
	return ann
}

// chunked reports whether a compressed inventory is too large for its
// parent.
func (s *store) chunked(blob []byte) bool {
	size := s.chunkSize
	if size <= 0 {
		size = DefaultChunkSize
	}
	return len(blob) > size
}

// applyParent writes the parent with its labels and annotations and, when
// data is not nil, data as its DataKey. With rv set the write is
// conditional on it: a parent another writer changed since fails with
// errChanged.
func (s *store) applyParent(ctx context.Context, inv *Inventory, ann map[string]string, data []byte, rv string) (*unstructured.Unstructured, error) {
	annAny := map[string]any{}
	for k, v := range ann {
		annAny[k] = v
	}
	obj := map[string]any{
		"apiVersion": "v1",
		"kind":       "Secret",
		"metadata": map[string]any{
			"name":        ParentName(inv.App),
			"namespace":   s.namespace,
			"labels":      map[string]any{LabelID: inv.ID},
			"annotations": annAny,
		},
		"type": SecretType,
	}
	if rv != "" {
		obj["metadata"].(map[string]any)["resourceVersion"] = rv
	}
	if data != nil {
		obj["data"] = map[string]any{DataKey: base64.StdEncoding.EncodeToString(data)}
	}
	u, err := s.apply(ctx, ParentName(inv.App), obj)
	if apierrors.IsConflict(err) {
		return nil, fmt.Errorf("%s: write: %w (%v)", s.where(inv.App), errChanged, err)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: write: %w", s.where(inv.App), err)
	}
	return u, nil
}

// errChanged says the parent changed since this writer read it: another
// writer (a second replica during a re-shard, a syncd apply by hand) wrote
// the inventory. The writer re-reads it and decides again.
var errChanged = errors.New("the inventory changed since it was read (another writer)")

// saveAttempts bounds the re-reads and re-decisions of a write that found
// the parent changed.
const saveAttempts = 5

// changedSince reports whether the parent is no longer the one prev read
// or last wrote (one metadata GET).
func (s *store) changedSince(ctx context.Context, app string, prev *loaded) (bool, error) {
	pom, err := s.md.Resource(secrets).Namespace(s.namespace).Get(ctx, ParentName(app), metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return prev.exists, nil
	}
	if err != nil {
		return false, fmt.Errorf("%s: read before prune: %w", s.where(app), err)
	}
	return !prev.exists || pom.ResourceVersion != prev.rv, nil
}

// apply server-side applies a Secret of the store's namespace as
// StoreManager.
func (s *store) apply(ctx context.Context, name string, obj map[string]any) (*unstructured.Unstructured, error) {
	body, err := json.Marshal(obj)
	if err != nil {
		return nil, err
	}
	force := true
	return s.dyn.Resource(secrets).Namespace(s.namespace).Patch(ctx, name, types.ApplyPatchType, body, metav1.PatchOptions{FieldManager: StoreManager, Force: &force})
}

func sameAnnotations(live, want map[string]string) bool {
	for k, v := range want {
		if live[k] != v {
			return false
		}
	}
	_, liveNS := live[AnnotationNamespaces]
	_, wantNS := want[AnnotationNamespaces]
	return liveNS == wantNS
}

// toolName returns the tool part of "<tool>/<version>".
func toolName(tooling string) string {
	for i := len(tooling) - 1; i >= 0; i-- {
		if tooling[i] == '/' {
			return tooling[:i]
		}
	}
	return tooling
}
