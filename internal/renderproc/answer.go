package renderproc

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"syncd.dev/syncd/internal/planner"
)

// writeAnswer writes a render's result to w as an answer: {"error": …}
// for a failed render, else {"manifests": […]} written one manifest at a
// time, each cleared from ms once written, so that the child holds the
// render or its encoding, never both whole.
func writeAnswer(w io.Writer, ms []planner.Manifest, renderErr error) error {
	bw := bufio.NewWriter(w)
	enc := json.NewEncoder(bw)
	if renderErr != nil {
		if err := enc.Encode(answer{Error: failureOf(renderErr)}); err != nil {
			return err
		}
		return bw.Flush()
	}
	bw.WriteString(`{"manifests":[`)
	for i := range ms {
		if i > 0 {
			bw.WriteByte(',')
		}
		wm, err := wireManifest(ms[i])
		if err != nil {
			return err
		}
		ms[i] = planner.Manifest{}
		if err := enc.Encode(wm); err != nil {
			return err
		}
	}
	bw.WriteString("]}\n")
	return bw.Flush()
}

// errOverOutput is the error of reading an answer past the output limit.
var errOverOutput = errors.New("the answer is larger than the output limit")

// outputReader reads at most left bytes of r: reading more fails with
// errOverOutput.
type outputReader struct {
	r    io.Reader
	left int64
}

func (o *outputReader) Read(p []byte) (int, error) {
	if o.left < 0 {
		return 0, errOverOutput
	}
	// One byte more than is left tells an answer of exactly the limit
	// from a larger one.
	if int64(len(p)) > o.left+1 {
		p = p[:o.left+1]
	}
	n, err := o.r.Read(p)
	o.left -= int64(n)
	if o.left < 0 {
		return n, errOverOutput
	}
	return n, err
}

// readAnswer decodes a child's answer from r as it arrives, reading at
// most max bytes, and then reads r to its end (a child blocked on a full
// pipe would only stop at its time limit).
func readAnswer(r io.Reader, max int64) readResult {
	or := &outputReader{r: r, left: max}
	d := answerDecoder{dec: json.NewDecoder(or), strings: newInternTable()}
	res := d.decode()
	if _, err := io.Copy(io.Discard, or); res.err == nil {
		res.err = err
	}
	if errors.Is(res.err, errOverOutput) {
		return readResult{over: true}
	}
	return res
}

// answerDecoder decodes an answer token by token: each manifest becomes
// a planner.Manifest as soon as it is read, and its bytes are dropped.
type answerDecoder struct {
	dec *json.Decoder
	// strings are the keys and short values of the objects so far.
	strings internTable
}

// decode reads one answer.
func (d answerDecoder) decode() readResult {
	var res readResult
	if err := d.delim('{'); err != nil {
		return readResult{err: err}
	}
	for d.dec.More() {
		tok, err := d.dec.Token()
		if err != nil {
			return readResult{err: err}
		}
		switch tok {
		case "manifests":
			res.manifests, err = d.manifests()
		case "error":
			var f failure
			err = d.dec.Decode(&f)
			res.renderErr = f.err()
		default:
			err = fmt.Errorf("unknown field %v", tok)
		}
		if err != nil {
			return readResult{err: err}
		}
	}
	if err := d.delim('}'); err != nil {
		return readResult{err: err}
	}
	return res
}

// manifests reads the manifests' array.
func (d answerDecoder) manifests() ([]planner.Manifest, error) {
	if err := d.delim('['); err != nil {
		return nil, err
	}
	var out []planner.Manifest
	for d.dec.More() {
		var w manifest
		if err := d.dec.Decode(&w); err != nil {
			return nil, err
		}
		m, err := w.manifest()
		if err != nil {
			return nil, err
		}
		m.File = d.strings.of(m.File)
		d.strings.intern(m.Object.Object)
		out = append(out, m)
	}
	return out, d.delim(']')
}

// delim reads the delimiter want.
func (d answerDecoder) delim(want json.Delim) error {
	tok, err := d.dec.Token()
	if err != nil {
		return err
	}
	if tok != want {
		return fmt.Errorf("read %v where %v was expected", tok, want)
	}
	return nil
}
