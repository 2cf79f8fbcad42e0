package inventory

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"

	"syncd.dev/syncd/internal/config"
	"syncd.dev/syncd/internal/planner"
)

// bigInventory returns n ConfigMap members of namespace ns shaped like the ones
// an apply records (a sha256 per slice, a resourceVersion), so that their
// compressed size is a real inventory's.
func bigInventory(app, id, ns string, n int) *Inventory {
	inv := &Inventory{App: app, ID: id, Version: FormatVersion, Members: make([]*Member, n)}
	for i := range n {
		sum := sha256.Sum256(fmt.Appendf(nil, "%s/%d", app, i))
		inv.Members[i] = &Member{
			Version: "v1", Kind: "ConfigMap", Namespace: ns, Name: fmt.Sprintf("cm-%06d", i), Stage: planner.StageNamespaced,
			Slices:          []SliceHash{{Manager: "syncd-" + app, Hash: hex.EncodeToString(sum[:])}},
			ResourceVersion: fmt.Sprint(100000 + 3*i),
		}
	}
	inv.Sort()
	return inv
}

// chunkNames lists the chunk Secrets labelled for the fixture's app.
func (f *fixture) chunkNames() []string {
	f.t.Helper()
	l, err := f.md.Resource(secrets).Namespace(f.m.Namespace()).List(context.Background(), metav1.ListOptions{LabelSelector: LabelChunkOf + "=" + f.m.ID(f.app.Name)})
	if err != nil {
		f.t.Fatal(err)
	}
	var out []string
	for _, c := range l.Items {
		out = append(out, c.Name)
	}
	slices.Sort(out)
	return out
}

// parentChunks returns the chunks the app's parent names, read afresh.
func (f *fixture) parentChunks() []string {
	f.t.Helper()
	l, err := f.m.store.load(context.Background(), f.app.Name)
	if err != nil {
		f.t.Fatal(err)
	}
	out := slices.Clone(l.chunks)
	slices.Sort(out)
	return out
}

// wantChunks is how many chunks an inventory needs.
func wantChunks(t *testing.T, inv *Inventory) int {
	t.Helper()
	blob, err := inv.Encode()
	if err != nil {
		t.Fatal(err)
	}
	if len(blob) <= DefaultChunkSize {
		return 0
	}
	return (len(blob) + DefaultChunkSize - 1) / DefaultChunkSize
}

// TestChunkedInventoryRoundTrip writes inventories of 50,000, 30,000 and
// 10 members in turn to the API server and reads each back with a new
// Manager: equal, in as many chunks as their size needs, and the previous
// write's chunks gone.
func TestChunkedInventoryRoundTrip(t *testing.T) {
	f := newFixture(t, config.App{}, Options{})
	ctx := context.Background()
	id := f.m.ID(f.app.Name)
	for _, n := range []int{50000, 30000, 10} {
		inv := bigInventory(f.app.Name, id, f.ns, n)
		prev, err := f.m.store.load(ctx, f.app.Name)
		if err != nil {
			t.Fatal(err)
		}
		wrote, err := f.m.store.save(ctx, prev, inv)
		if err != nil || !wrote {
			t.Fatalf("%d members: save wrote %v: %v", n, wrote, err)
		}
		fresh := newFixture(t, config.App{Name: f.app.Name}, Options{Namespace: f.m.Namespace()})
		got, err := fresh.m.Load(ctx, f.app.Name)
		if err != nil {
			t.Fatalf("%d members: load: %v", n, err)
		}
		if diff := cmp.Diff(inv, got); diff != "" {
			t.Fatalf("%d members: read back (-want +got):\n%s", n, diff)
		}
		chunks := f.chunkNames()
		if len(chunks) != wantChunks(t, inv) {
			t.Errorf("%d members: %d chunk Secrets %v, want %d", n, len(chunks), chunks, wantChunks(t, inv))
		}
		if diff := cmp.Diff(chunks, f.parentChunks()); diff != "" {
			t.Errorf("%d members: chunk Secrets (-present +named by the parent):\n%s", n, diff)
		}
		// Saving the same inventory again writes nothing.
		again, err := f.m.store.load(ctx, f.app.Name)
		if err != nil {
			t.Fatal(err)
		}
		f.count.reset()
		f.count.on.Store(true)
		wrote, err = f.m.store.save(ctx, again, bigInventory(f.app.Name, id, f.ns, n))
		f.count.on.Store(false)
		if err != nil || wrote || f.count.total.Load() != 0 {
			t.Errorf("%d members: unchanged save wrote %v with %d requests: %v", n, wrote, f.count.total.Load(), err)
		}
	}
	// Ten members are inline again: format 1, which any syncd reads.
	u, err := f.dyn.Resource(secrets).Namespace(f.m.Namespace()).Get(ctx, ParentName(f.app.Name), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	enc := u.Object["data"].(map[string]any)[DataKey].(string)
	blob, _ := base64.StdEncoding.DecodeString(enc)
	if inv, err := Decode("parent", blob); err != nil || len(inv.Members) != 10 {
		t.Errorf("10 members: the parent's data is not a format-1 inventory of 10: %v", err)
	}
}

// TestChunkedParentIsKubectlsApplySet checks that kubectl finds exactly one
// ApplySet parent for a chunked app (the chunks carry no ApplySet label)
// and that it lists the members' group-kinds.
func TestChunkedParentIsKubectlsApplySet(t *testing.T) {
	f := newFixture(t, config.App{}, Options{})
	ctx := context.Background()
	id := f.m.ID(f.app.Name)
	prev, err := f.m.store.load(ctx, f.app.Name)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.m.store.save(ctx, prev, bigInventory(f.app.Name, id, f.ns, 40000)); err != nil {
		t.Fatal(err)
	}
	if len(f.chunkNames()) < 2 {
		t.Fatalf("40,000 members in %d chunks, want at least 2", len(f.chunkNames()))
	}
	out, err := kubectl(t, "get", "secrets", "-n", f.m.Namespace(), "-l", LabelID+"="+id,
		"-o", `jsonpath={range .items[*]}{.metadata.name} {.metadata.annotations.applyset\.kubernetes\.io/contains-group-kinds}{"\n"}{end}`)
	if err != nil {
		t.Fatalf("kubectl: %v\n%s", err, out)
	}
	if want := ParentName(f.app.Name) + " ConfigMap"; strings.TrimSpace(out) != want {
		t.Errorf("kubectl finds ApplySet parents %q, want %q", out, want)
	}
	// kubectl reads the chunked parent as an ApplySet and refuses it for
	// its tooling, exactly as an inline one.
	cmPath := filepath.Join(t.TempDir(), "cm.yaml")
	if err := os.WriteFile(cmPath, []byte(f.cm("probe")), 0o600); err != nil {
		t.Fatal(err)
	}
	out, err = kubectl(t, "apply", "--server-side", "--prune", "--applyset=secret/"+ParentName(f.app.Name), "-n", f.m.Namespace(), "--dry-run=server", "-f", cmPath)
	if err == nil || !strings.Contains(out, `managed by tooling "syncd"`) {
		t.Errorf("kubectl apply --applyset on the chunked parent: err %v, output %q; want a refusal naming tooling syncd", err, out)
	}
}

// TestSingleSecretInventoryMigrates reads a parent as syncd wrote it before
// chunks (format 1 in the parent's data, 15,000 members), then grows it to
// 50,000: the first write that does not fit moves it into chunks with every
// old member kept.
func TestSingleSecretInventoryMigrates(t *testing.T) {
	f := newFixture(t, config.App{}, Options{})
	ctx := context.Background()
	id := f.m.ID(f.app.Name)
	old := bigInventory(f.app.Name, id, f.ns, 15000)
	blob, err := old.Encode()
	if err != nil {
		t.Fatal(err)
	}
	// The parent exactly as the single-Secret syncd wrote it.
	body := fmt.Sprintf(`{"apiVersion":"v1","kind":"Secret","type":%q,"metadata":{"name":%q,"namespace":%q,"labels":{%q:%q},"annotations":{%q:"syncd/v0.9.0",%q:"ConfigMap"}},"data":{%q:%q}}`,
		SecretType, ParentName(f.app.Name), f.m.Namespace(), LabelID, id, AnnotationTooling, AnnotationGroupKinds, DataKey, base64.StdEncoding.EncodeToString(blob))
	force := true
	if _, err := f.dyn.Resource(secrets).Namespace(f.m.Namespace()).Patch(ctx, ParentName(f.app.Name), types.ApplyPatchType, []byte(body), metav1.PatchOptions{FieldManager: StoreManager, Force: &force}); err != nil {
		t.Fatal(err)
	}
	got, err := f.m.Load(ctx, f.app.Name)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(old, got); diff != "" {
		t.Fatalf("single-Secret inventory read (-want +got):\n%s", diff)
	}

	// The first 15,000 of these are the old members.
	grown := bigInventory(f.app.Name, id, f.ns, 50000)
	prev, err := f.m.store.load(ctx, f.app.Name)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.m.store.save(ctx, prev, grown); err != nil {
		t.Fatal(err)
	}
	got, err = newFixture(t, config.App{Name: f.app.Name}, Options{Namespace: f.m.Namespace()}).m.Load(ctx, f.app.Name)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(grown, got); diff != "" {
		t.Fatalf("migrated inventory (-want +got):\n%s", diff)
	}
	if n := len(f.parentChunks()); n != wantChunks(t, grown) {
		t.Errorf("migrated into %d chunks, want %d", n, wantChunks(t, grown))
	}
}

// failing fails, with errInjected, every request fail matches once after
// matches of it reached after (so after: 1 lets the first through).
type failing struct {
	match func(*http.Request) bool
	after int64
	seen  atomic.Int64
}

var errInjected = errors.New("injected: connection lost")

func (fl *failing) wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripper(func(req *http.Request) (*http.Response, error) {
		if fl.match(req) && fl.seen.Add(1) > fl.after {
			return nil, errInjected
		}
		return rt.RoundTrip(req)
	})
}

// TestInterruptedChunkedWrite cuts a write of 50,000 members at each step
// (after the first chunk, at the parent, at the deletion of the old chunks)
// over a previous inventory that was inline or chunked: the parent then
// names a complete inventory, the previous one until the parent was
// written, every member readable, and the next write leaves only the
// chunks the parent names.
func TestInterruptedChunkedWrite(t *testing.T) {
	isChunkWrite := func(app string) func(*http.Request) bool {
		return func(r *http.Request) bool {
			return r.Method == http.MethodPatch && strings.Contains(r.URL.Path, "/secrets/"+ParentName(app)+"-")
		}
	}
	isParentWrite := func(app string) func(*http.Request) bool {
		return func(r *http.Request) bool {
			return r.Method == http.MethodPatch && strings.HasSuffix(r.URL.Path, "/secrets/"+ParentName(app))
		}
	}
	isDelete := func(string) func(*http.Request) bool {
		return func(r *http.Request) bool { return r.Method == http.MethodDelete }
	}
	tests := map[string]struct {
		prev  int
		match func(app string) func(*http.Request) bool
		after int64
		// newRead: the parent names the new inventory after the cut.
		newRead bool
	}{
		"inline, after the first chunk":  {prev: 15000, match: isChunkWrite, after: 1},
		"chunked, after the first chunk": {prev: 30000, match: isChunkWrite, after: 1},
		"chunked, at the parent":         {prev: 30000, match: isParentWrite, after: 0},
		"chunked, at the old chunks":     {prev: 30000, match: isDelete, after: 0, newRead: true},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			f := newFixture(t, config.App{}, Options{})
			ctx := context.Background()
			id := f.m.ID(f.app.Name)
			prevInv := bigInventory(f.app.Name, id, f.ns, tc.prev)
			l, err := f.m.store.load(ctx, f.app.Name)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := f.m.store.save(ctx, l, prevInv); err != nil {
				t.Fatal(err)
			}

			// The cut writer: the same store on a client that fails.
			fl := &failing{match: tc.match(f.app.Name), after: tc.after}
			cfg := envConfigWith(fl.wrap)
			cut := *f.m.store
			if cut.dyn, err = dynamic.NewForConfig(cfg); err != nil {
				t.Fatal(err)
			}
			if cut.md, err = metadata.NewForConfig(cfg); err != nil {
				t.Fatal(err)
			}
			next := bigInventory(f.app.Name, id, f.ns, 50000)
			l, err = cut.load(ctx, f.app.Name)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := cut.save(ctx, l, next); !errors.Is(err, errInjected) {
				t.Fatalf("cut save: %v, want the injected error", err)
			}

			want := prevInv
			if tc.newRead {
				want = next
			}
			got, err := newFixture(t, config.App{Name: f.app.Name}, Options{Namespace: f.m.Namespace()}).m.Load(ctx, f.app.Name)
			if err != nil {
				t.Fatalf("read after the cut: %v", err)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Fatalf("inventory after the cut (-want +got):\n%s", diff)
			}

			// The next write (after the grace) cleans up what the cut left.
			f.m.store.grace = 0
			after := bigInventory(f.app.Name, id, f.ns, 45000)
			l, err = f.m.store.load(ctx, f.app.Name)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := f.m.store.save(ctx, l, after); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(f.parentChunks(), f.chunkNames()); diff != "" {
				t.Errorf("chunk Secrets after the next write (-named by the parent +present):\n%s", diff)
			}
		})
	}
}

// envConfigWith returns the control plane's client config with wrap around
// its transport.
func envConfigWith(wrap func(http.RoundTripper) http.RoundTripper) *rest.Config {
	cfg := rest.CopyConfig(env.Config)
	cfg.WrapTransport = wrap
	return cfg
}

// BenchmarkInventoryStore measures writing an inventory of 10,000 and
// 50,000 members to the API server (every member's resourceVersion moved,
// as after an apply that changed them all) and reading it back:
//
//	go test -run '^$' -bench InventoryStore -benchtime 5x ./internal/inventory/
func BenchmarkInventoryStore(b *testing.B) {
	for _, n := range []int{10000, 50000} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			ns := env.Namespace(b)
			dyn, err := dynamic.NewForConfig(env.Config)
			if err != nil {
				b.Fatal(err)
			}
			md, err := metadata.NewForConfig(env.Config)
			if err != nil {
				b.Fatal(err)
			}
			s := &store{dyn: dyn, md: md, namespace: ns, tooling: "syncd/bench", grace: chunkGrace}
			ctx := context.Background()
			app := fmt.Sprintf("bench-%d", n)
			id := AppID(app, ns)
			var blob int
			b.ResetTimer()
			for i := range b.N {
				b.StopTimer()
				inv := bigInventory(app, id, "bench", n)
				for _, mem := range inv.Members {
					mem.ResourceVersion += fmt.Sprint(i)
				}
				b.StartTimer()
				prev, err := s.load(ctx, app)
				if err != nil {
					b.Fatal(err)
				}
				if wrote, err := s.save(ctx, prev, inv); err != nil || !wrote {
					b.Fatalf("save wrote %v: %v", wrote, err)
				}
				blob = len(prev.blob)
			}
			b.StopTimer()
			start := time.Now()
			if _, err := s.load(ctx, app); err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(float64(time.Since(start).Microseconds())/1000, "read_ms")
			b.ReportMetric(float64(blob)/float64(n), "B/member")
			chunks := 0
			if blob > DefaultChunkSize {
				chunks = (blob + DefaultChunkSize - 1) / DefaultChunkSize
			}
			b.ReportMetric(float64(chunks), "chunks")
		})
	}
}

// TestDamagedChunk reads a chunked inventory one of whose chunks was
// deleted, edited or relabelled outside syncd: the read fails naming the
// chunk and what to do, instead of returning fewer members.
func TestDamagedChunk(t *testing.T) {
	tests := map[string]struct {
		damage func(f *fixture, name string) error
		want   string
	}{
		"deleted": {
			damage: func(f *fixture, name string) error {
				return f.dyn.Resource(secrets).Namespace(f.m.Namespace()).Delete(context.Background(), name, metav1.DeleteOptions{})
			},
			want: "chunk Secret not found",
		},
		"edited": {
			damage: func(f *fixture, name string) error {
				_, err := f.dyn.Resource(secrets).Namespace(f.m.Namespace()).Patch(context.Background(), name, types.MergePatchType,
					[]byte(`{"data":{"`+ChunkKey+`":"`+base64.StdEncoding.EncodeToString([]byte("not the piece"))+`"}}`), metav1.PatchOptions{})
				return err
			},
			want: "is not the piece the parent names",
		},
		"relabelled": {
			damage: func(f *fixture, name string) error {
				_, err := f.dyn.Resource(secrets).Namespace(f.m.Namespace()).Patch(context.Background(), name, types.MergePatchType,
					[]byte(`{"metadata":{"labels":{"`+LabelChunkOf+`":"someone-else"}}}`), metav1.PatchOptions{})
				return err
			},
			want: `has label ` + LabelChunkOf + `="someone-else"`,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			f := newFixture(t, config.App{}, Options{})
			ctx := context.Background()
			l, err := f.m.store.load(ctx, f.app.Name)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := f.m.store.save(ctx, l, bigInventory(f.app.Name, f.m.ID(f.app.Name), f.ns, 40000)); err != nil {
				t.Fatal(err)
			}
			chunk := l.chunks[1]
			if err := tc.damage(f, chunk); err != nil {
				t.Fatal(err)
			}
			_, err = f.m.Load(ctx, f.app.Name)
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "chunk "+chunk) || !strings.Contains(err.Error(), "delete the parent Secret") {
				t.Errorf("load: %v\nwant an error naming chunk %s, saying %q and what to do", err, chunk, tc.want)
			}
		})
	}
}
