package renderproc

import (
	"bytes"
	"encoding/gob"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	"syncd.dev/syncd/internal/decrypt"
	"syncd.dev/syncd/internal/planner"
)

// request is what a child renders. It crosses stdin as gob, which keeps
// the Go types of Helm values (an int64 stays an int64, as the template
// engine sees it in process); JSON would turn every number into a
// float64.
type request struct {
	Root, Dir string
	Helm      planner.HelmOptions
	// Keys is the app's keys file content (decrypt.Keys.Bytes); nil:
	// no keys.
	Keys []byte
	// Memory and Time are the limits the child sets on itself.
	Memory int64
	Time   time.Duration
}

func init() {
	// The types Helm values hold, decoded from YAML or JSON.
	gob.Register(map[string]any{})
	gob.Register([]any{})
	gob.Register(json.Number(""))
}

// newRequest is the request for a render of t under l.
func newRequest(t planner.Tree, l Limits) request {
	r := request{Root: t.Root, Dir: t.Dir, Helm: t.Helm, Memory: l.Memory, Time: l.Time}
	if t.Decryption != nil {
		r.Keys = t.Decryption.Bytes()
	}
	return r
}

// encode writes the request as gob.
func (r request) encode() ([]byte, error) {
	var b bytes.Buffer
	if err := gob.NewEncoder(&b).Encode(r); err != nil {
		return nil, fmt.Errorf("render request: %w", err)
	}
	return b.Bytes(), nil
}

// tree is the request's Tree, its keys parsed.
func (r request) tree() (planner.Tree, error) {
	t := planner.Tree{Root: r.Root, Dir: r.Dir, Helm: r.Helm}
	if r.Keys != nil {
		k, err := decrypt.ParseKeys(r.Keys)
		if err != nil {
			return t, fmt.Errorf("decryption keys: %w", err)
		}
		t.Decryption = k
	}
	return t, nil
}

// answer is what a child returns, as JSON: the manifests, or the error.
// It crosses as a stream (writeAnswer, answerDecoder): the child writes,
// and the parent decodes, one manifest at a time, so neither holds the
// whole answer's bytes beside the objects.
type answer struct {
	Manifests []manifest `json:"manifests,omitempty"`
	Error     *failure   `json:"error,omitempty"`
}

// manifest is a planner.Manifest on the wire.
type manifest struct {
	File   string          `json:"file"`
	Index  int             `json:"index"`
	Item   int             `json:"item,omitempty"`
	Object json.RawMessage `json:"object"`
	Hook   planner.Hook    `json:"hook,omitempty"`
	// Decrypted holds each path as a one-path field set's JSON.
	Decrypted []json.RawMessage `json:"decrypted,omitempty"`
	// Secrets are the decrypted values the object holds (planner.Manifest.Secrets).
	Secrets []string `json:"secrets,omitempty"`
}

// failure is a render's error on the wire: a planner.ManifestErrors when
// Problems is set, else an error with Message.
type failure struct {
	Message  string    `json:"message,omitempty"`
	Problems []problem `json:"problems,omitempty"`
}

// problem is a planner.ManifestError on the wire.
type problem struct {
	File    string `json:"file"`
	Index   int    `json:"index,omitempty"`
	Item    int    `json:"item,omitempty"`
	Object  string `json:"object,omitempty"`
	Message string `json:"message"`
}

// wireManifest is m on the wire.
func wireManifest(m planner.Manifest) (manifest, error) {
	obj, err := json.Marshal(m.Object.Object)
	if err != nil {
		return manifest{}, fmt.Errorf("%s: encode: %w", m.Origin(), err)
	}
	w := manifest{File: m.File, Index: m.Index, Item: m.Item, Object: obj, Hook: m.Hook, Secrets: m.Secrets}
	for _, p := range m.Decrypted {
		js, err := fieldpath.NewSet(p).ToJSON()
		if err != nil {
			return manifest{}, fmt.Errorf("%s: encode field %s: %w", m.Origin(), p, err)
		}
		w.Decrypted = append(w.Decrypted, js)
	}
	return w, nil
}

// failureOf is err on the wire.
func failureOf(err error) *failure {
	var list planner.ManifestErrors
	if !errors.As(err, &list) || len(list) == 0 {
		return &failure{Message: err.Error()}
	}
	f := &failure{}
	for _, e := range list {
		f.Problems = append(f.Problems, problem{File: e.File, Index: e.Index, Item: e.Item, Object: e.Object, Message: e.Err.Error()})
	}
	return f
}

// err is the error the failure stands for.
func (f *failure) err() error {
	if len(f.Problems) == 0 {
		return errors.New(f.Message)
	}
	list := make(planner.ManifestErrors, len(f.Problems))
	for i, p := range f.Problems {
		list[i] = &planner.ManifestError{File: p.File, Index: p.Index, Item: p.Item, Object: p.Object, Err: errors.New(p.Message)}
	}
	return list
}

// manifest is w as a planner.Manifest.
func (w manifest) manifest() (planner.Manifest, error) {
	m := planner.Manifest{File: w.File, Index: w.Index, Item: w.Item, Hook: w.Hook, Secrets: w.Secrets, Object: &unstructured.Unstructured{}}
	// utiljson decodes as the planner's own decoding does: whole numbers
	// as int64, others as float64.
	if err := utiljson.Unmarshal(w.Object, &m.Object.Object); err != nil {
		return m, fmt.Errorf("render answer: %s: %w", m.Origin(), err)
	}
	for _, js := range w.Decrypted {
		var s fieldpath.Set
		if err := s.FromJSON(bytes.NewReader(js)); err != nil {
			return m, fmt.Errorf("render answer: %s: decrypted field: %w", m.Origin(), err)
		}
		s.Iterate(func(p fieldpath.Path) { m.Decrypted = append(m.Decrypted, p.Copy()) })
	}
	return m, nil
}
