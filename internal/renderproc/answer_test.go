package renderproc

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"runtime"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"syncd.dev/syncd/internal/planner"
)

// configMaps returns n ConfigMap manifests whose data.v is value.
func configMaps(n int, value string) []planner.Manifest {
	ms := make([]planner.Manifest, n)
	for i := range ms {
		ms[i] = planner.Manifest{File: "cm.yaml", Index: i + 1, Object: &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "v1", "kind": "ConfigMap",
			"metadata": map[string]any{"name": fmt.Sprintf("cm-%d", i), "namespace": "ns"},
			"data":     map[string]any{"v": value},
		}}}
	}
	return ms
}

// TestReadAnswerHoldsNoWholeAnswer streams an answer from writeAnswer to
// readAnswer through a pipe, as a child's answer crosses, and samples the
// live heap while it is read: the parent holds the manifests decoded so
// far, not the answer's bytes (HTML characters are escaped as six bytes
// each, so the answer here is three times its objects' size).
func TestReadAnswerHoldsNoWholeAnswer(t *testing.T) {
	const n, size = 64, 64 << 10
	value := strings.Repeat("<>", size/2)
	pr, pw := io.Pipe()
	go func() { pw.CloseWithError(writeAnswer(pw, configMaps(n, value), nil)) }()
	base := liveHeap()
	peak := &peakReader{r: pr, every: 1 << 20}
	res := readAnswer(peak, DefaultOutput)
	if res.err != nil || res.over || res.renderErr != nil {
		t.Fatalf("readAnswer: %v (over: %v, render: %v)", res.err, res.over, res.renderErr)
	}
	if len(res.manifests) != n || res.manifests[n-1].Object.Object["data"].(map[string]any)["v"] != value {
		t.Fatalf("%d manifests, want %d with data.v as written", len(res.manifests), n)
	}
	answer, held := uint64(peak.read), peak.peak-base
	if held > answer/2 {
		t.Errorf("reading an answer of %d bytes held up to %d bytes of live heap, want at most half the answer (its %d bytes of objects and one manifest's encoding)", answer, held, n*size)
	}
}

// peakReader reads r and, after every every bytes, collects garbage and
// records the live heap: what the reader of the answer holds then.
type peakReader struct {
	r          io.Reader
	every      int64
	read, next int64
	peak       uint64
}

func (p *peakReader) Read(b []byte) (int, error) {
	n, err := p.r.Read(b)
	p.read += int64(n)
	if p.read >= p.next {
		p.next += p.every
		p.peak = max(p.peak, liveHeap())
	}
	return n, err
}

// liveHeap is the heap in use after a collection.
func liveHeap() uint64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// TestReadAnswerOutputLimit: an answer of exactly the output limit is
// read; one byte more is over it, and so is one the child does not end
// within the limit.
func TestReadAnswerOutputLimit(t *testing.T) {
	var answer bytes.Buffer
	if err := writeAnswer(&answer, configMaps(3, "v"), nil); err != nil {
		t.Fatal(err)
	}
	size := int64(answer.Len())
	tests := map[string]struct {
		max       int64
		trailing  string
		wantOver  bool
		wantCount int
	}{
		"exactly the limit":        {max: size, wantCount: 3},
		"one byte over":            {max: size - 1, wantOver: true},
		"trailing bytes past it":   {max: size + 10, trailing: strings.Repeat(" ", 11), wantOver: true},
		"trailing bytes within it": {max: size + 10, trailing: strings.Repeat(" ", 10), wantCount: 3},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			res := readAnswer(io.MultiReader(bytes.NewReader(answer.Bytes()), strings.NewReader(tc.trailing)), tc.max)
			if res.err != nil {
				t.Fatalf("readAnswer: %v", res.err)
			}
			if diff := cmp.Diff([2]any{tc.wantOver, tc.wantCount}, [2]any{res.over, len(res.manifests)}); diff != "" {
				t.Errorf("(over, manifests) (-want +got):\n%s", diff)
			}
		})
	}
}

// TestReadAnswerRefusesBrokenAnswers: an answer that ends early or is not
// an answer is a read error, never a partial render.
func TestReadAnswerRefusesBrokenAnswers(t *testing.T) {
	var answer bytes.Buffer
	if err := writeAnswer(&answer, configMaps(3, "v"), nil); err != nil {
		t.Fatal(err)
	}
	tests := map[string]string{
		"cut in a manifest": answer.String()[:answer.Len()/2],
		"cut after one":     answer.String()[:strings.Index(answer.String(), "},{")+1],
		"empty":             "",
		"not an object":     "[]",
		"unknown field":     `{"objects":[]}`,
		"bad object":        `{"manifests":[{"file":"a.yaml","index":1,"object":"x"}]}`,
	}
	for name, in := range tests {
		t.Run(name, func(t *testing.T) {
			res := readAnswer(strings.NewReader(in), DefaultOutput)
			if res.err == nil || res.manifests != nil {
				t.Errorf("readAnswer: %d manifests, error %v; want no manifests and an error", len(res.manifests), res.err)
			}
			if errors.Is(res.err, errOverOutput) || res.over {
				t.Errorf("over the output limit: %v", res.err)
			}
		})
	}
}
