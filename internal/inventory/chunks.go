package inventory

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
)

// An inventory whose compressed blob fits in DefaultChunkSize lives in the
// parent's data (format 1, as syncd always wrote it). A larger one is cut
// into pieces of at most DefaultChunkSize bytes, each in a chunk Secret,
// and the parent's data holds a format-2 index naming the chunks in order
// with their sizes and hashes. A syncd that reads only format 1 refuses a
// format-2 parent instead of taking it for an empty inventory.
const ChunkedVersion = 2

// LabelChunkOf marks a chunk Secret; its value is the ApplySet ID of the app
// whose inventory it holds a piece of. It is not an applyset.kubernetes.io
// label: a chunk is neither a parent nor a member, so kubectl neither
// takes it for a parent nor prunes it.
const LabelChunkOf = "syncd.dev/inventory-of"

// ChunkType is the type of chunk Secrets.
const ChunkType = "syncd.dev/applyset-chunk"

// ChunkKey is the data key of a chunk Secret: its piece of the compressed
// inventory.
const ChunkKey = "part"

// DefaultChunkSize is the most compressed inventory bytes one Secret
// holds. A Secret's data may hold 1 MiB (1048576 bytes); 768 KiB keeps a
// chunk's request, base64-encoded, well under etcd's 1.5 MiB request
// limit. At about 46 bytes a member, one chunk holds some 17,000 members.
const DefaultChunkSize = 768 << 10

// chunkGrace is how old a chunk that no parent names must be before a
// write deletes it: a younger one may belong to a write in progress.
const chunkGrace = 10 * time.Minute

// errChunkMissing says a chunk the parent names does not exist (a
// concurrent write replaced it, or someone deleted it).
var errChunkMissing = errors.New("chunk Secret not found")

// chunkIndex is the parent's data of a chunked inventory.
type chunkIndex struct {
	App     string `json:"app"`
	ID      string `json:"id"`
	Version int    `json:"version"`
	// MemberCount is how many members the chunks hold.
	MemberCount int `json:"memberCount"`
	// Size and SHA256 are the length and hex sha256 of the compressed
	// inventory: the chunks' pieces concatenated in order.
	Size   int        `json:"size"`
	SHA256 string     `json:"sha256"`
	Chunks []chunkRef `json:"chunks"`
}

// chunkRef names one chunk Secret and what its piece must be.
type chunkRef struct {
	Name   string `json:"name"`
	Size   int    `json:"size"`
	SHA256 string `json:"sha256"`
}

// ChunkName returns the name of the i-th chunk of app's inventory whose
// compressed blob has the hex sha256 sum. Names depend on the content, so
// a write never overwrites a chunk the parent still names with other
// content, and a retried write of the same inventory reuses its chunks.
func ChunkName(app, sum string, i int) string {
	return fmt.Sprintf("%s-%s-%d", ParentName(app), sum[:10], i)
}

func hexSum(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// parentVersion reads the format version of a parent's inflated data.
func parentVersion(where string, raw []byte) (int, error) {
	var v struct {
		Version int `json:"version"`
	}
	if err := json.Unmarshal(raw, &v); err != nil {
		return 0, fmt.Errorf("%s: data[%s]: %w", where, DataKey, err)
	}
	return v.Version, nil
}

// encodeIndex returns the gzip-compressed JSON of idx.
func encodeIndex(idx *chunkIndex) ([]byte, error) {
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	if err := json.NewEncoder(zw).Encode(idx); err != nil {
		return nil, fmt.Errorf("inventory %s: encode chunk index: %w", idx.App, err)
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// decodeIndex reads a format-2 parent's inflated data.
func decodeIndex(where string, raw []byte) (*chunkIndex, error) {
	idx, err := decodeStrict[chunkIndex](raw)
	if err != nil {
		return nil, fmt.Errorf("%s: data[%s]: chunk index: %w", where, DataKey, err)
	}
	if len(idx.Chunks) == 0 || len(idx.SHA256) < 10 {
		return nil, fmt.Errorf("%s: data[%s]: chunk index names no chunks or no sha256; restore the parent or delete it (syncd rebuilds the inventory from the next apply, without pruning)", where, DataKey)
	}
	return idx, nil
}

// readChunks reads the chunks idx names and returns their pieces
// concatenated, checking each against the index.
func (s *store) readChunks(ctx context.Context, app, id string, idx *chunkIndex) ([]byte, error) {
	where := s.where(app)
	fix := "restore it or delete the parent Secret (syncd rebuilds the inventory from the next apply, without pruning)"
	blob := make([]byte, 0, idx.Size)
	for _, c := range idx.Chunks {
		u, err := s.dyn.Resource(secrets).Namespace(s.namespace).Get(ctx, c.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return nil, fmt.Errorf("%s: chunk %s: %w; %s", where, c.Name, errChunkMissing, fix)
		}
		if err != nil {
			return nil, fmt.Errorf("%s: read chunk %s: %w", where, c.Name, err)
		}
		if got := u.GetLabels()[LabelChunkOf]; got != id {
			return nil, fmt.Errorf("%s: chunk %s has label %s=%q, want %q; %s", where, c.Name, LabelChunkOf, got, id, fix)
		}
		enc, _, _ := unstructured.NestedString(u.Object, "data", ChunkKey)
		part, err := base64.StdEncoding.DecodeString(enc)
		if err != nil {
			return nil, fmt.Errorf("%s: chunk %s: data[%s] is not base64: %w; %s", where, c.Name, ChunkKey, err, fix)
		}
		if len(part) != c.Size || hexSum(part) != c.SHA256 {
			return nil, fmt.Errorf("%s: chunk %s: data[%s] is not the piece the parent names (%d bytes, want %d, or another sha256): it was changed outside syncd; %s", where, c.Name, ChunkKey, len(part), c.Size, fix)
		}
		blob = append(blob, part...)
	}
	if len(blob) != idx.Size || hexSum(blob) != idx.SHA256 {
		return nil, fmt.Errorf("%s: the chunks' pieces do not add up to the inventory the parent names (%d bytes, want %d, or another sha256); %s", where, len(blob), idx.Size, fix)
	}
	return blob, nil
}

// writeChunks writes blob as chunk Secrets owned by the parent (uid) and
// returns the index naming them.
func (s *store) writeChunks(ctx context.Context, inv *Inventory, blob []byte, uid types.UID) (*chunkIndex, error) {
	sum := hexSum(blob)
	idx := &chunkIndex{App: inv.App, ID: inv.ID, Version: ChunkedVersion, MemberCount: len(inv.Members), Size: len(blob), SHA256: sum}
	size := s.chunkSize
	if size <= 0 {
		size = DefaultChunkSize
	}
	for i, off := 0, 0; off < len(blob); i, off = i+1, off+size {
		part := blob[off:min(off+size, len(blob))]
		name := ChunkName(inv.App, sum, i)
		obj := map[string]any{
			"apiVersion": "v1",
			"kind":       "Secret",
			"metadata": map[string]any{
				"name":      name,
				"namespace": s.namespace,
				"labels":    map[string]any{LabelChunkOf: inv.ID},
				"ownerReferences": []any{map[string]any{
					"apiVersion": "v1", "kind": "Secret", "name": ParentName(inv.App), "uid": string(uid),
				}},
			},
			"type": ChunkType,
			"data": map[string]any{ChunkKey: base64.StdEncoding.EncodeToString(part)},
		}
		if _, err := s.apply(ctx, name, obj); err != nil {
			return nil, fmt.Errorf("%s: write chunk %s: %w", s.where(inv.App), name, err)
		}
		idx.Chunks = append(idx.Chunks, chunkRef{Name: name, Size: len(part), SHA256: hexSum(part)})
	}
	return idx, nil
}

// deleteStale deletes the app's chunks the parent no longer names: those
// the previous parent named (prev) at once, and any other chunk labelled
// for the app (left by a write that did not finish) once it is older than
// chunkGrace.
func (s *store) deleteStale(ctx context.Context, app, id string, prev []string, keep map[string]bool) error {
	for _, name := range prev {
		if keep[name] {
			continue
		}
		err := s.md.Resource(secrets).Namespace(s.namespace).Delete(ctx, name, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("%s: the inventory is written, but deleting its stale chunk %s failed: %w; delete it by hand or let syncd delete secrets in %s", s.where(app), name, err, s.namespace)
		}
	}
	sel := labels.Set{LabelChunkOf: id}.AsSelector().String()
	ri := s.md.Resource(secrets).Namespace(s.namespace)
	return listAll(ctx, ri, sel, func(c *metav1.PartialObjectMetadata) error {
		if keep[c.Name] || time.Since(c.CreationTimestamp.Time) < s.grace {
			return nil
		}
		uid := c.UID
		err := ri.Delete(ctx, c.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
		if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
			return fmt.Errorf("%s: the inventory is written, but deleting the unused chunk %s failed: %w; delete it by hand or let syncd delete secrets in %s", s.where(app), c.Name, err, s.namespace)
		}
		return nil
	})
}
