package planner

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"path"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"

	"golang.org/x/sync/errgroup"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
	"sigs.k8s.io/yaml"

	"syncd.dev/syncd/internal/errlist"
	"syncd.dev/syncd/internal/redact"
)

// Manifest is one object read from a file, with where it came from.
type Manifest struct {
	// File is the path of the file, relative to the directory read.
	File string
	// Index is the 1-based position of the document in its file.
	Index int
	// Item is the 1-based position of the object in the items of a List
	// document (kind List or <Kind>List), 0 when the document is the
	// object itself.
	Item int
	// Object is the decoded object, exactly as written (SOPS-encrypted
	// values decrypted).
	Object *unstructured.Unstructured
	// Hook is where a Helm chart's hook object is applied (HookNone for
	// every other object).
	Hook Hook
	// Decrypted are the paths of Object's fields whose values the render
	// decrypted; every output hides them.
	Decrypted []fieldpath.Path
	// Secrets are the values the render decrypted that Object holds,
	// whole or inside a longer string (those of at least
	// redact.MinFragment bytes): every output masks them wherever they
	// appear (a kustomize replacement may embed one in a URL).
	Secrets []string
}

// Origin returns "file#index" (or "file#index item N" for an item of a
// List document), the place errors and reports point at; the file alone
// for an object of a kustomize build, which kustomize's origin names by
// its file only (Index 0).
func (m Manifest) Origin() string {
	if m.Index == 0 && m.Item == 0 {
		return m.File
	}
	if m.Item > 0 {
		return fmt.Sprintf("%s#%d item %d", m.File, m.Index, m.Item)
	}
	return fmt.Sprintf("%s#%d", m.File, m.Index)
}

// ManifestError is a problem with one document of one file.
type ManifestError struct {
	File  string
	Index int // 1-based document index; 0 when the whole file is concerned
	Item  int // 1-based item index in a List document; 0 for the document itself
	// Object names the object when it could be decoded ("apps/v1 Deployment web").
	Object string
	Err    error
}

// Error implements error.
func (e *ManifestError) Error() string {
	var b strings.Builder
	b.WriteString(e.File)
	if e.Index > 0 {
		fmt.Fprintf(&b, ": document %d", e.Index)
	}
	if e.Item > 0 {
		fmt.Fprintf(&b, ", item %d", e.Item)
	}
	if e.Object != "" {
		fmt.Fprintf(&b, " (%s)", e.Object)
	}
	fmt.Fprintf(&b, ": %v", e.Err)
	return b.String()
}

// Unwrap returns the underlying error.
func (e *ManifestError) Unwrap() error { return e.Err }

// ManifestErrors is every problem found in a directory; nothing from a
// directory with any of them may be applied. Its Error lists them one
// per line, and errors.Is and errors.As see each and its causes (a
// cluster that could not be reached, say).
type ManifestErrors = errlist.List[*ManifestError]

// manifestExt lists the file endings read as manifests.
var manifestExt = map[string]bool{".yaml": true, ".yml": true, ".json": true}

// ReadDir reads every .yaml, .yml and .json file below dir (recursively, in
// lexical order), splits multi-document files and decodes each document
// (as YAML; a JSON object as JSON, to the same object: decodeContent).
// A List document (kind List or <Kind>List, with items) stands for its
// items, in order, as with kubectl apply -f. Empty documents are skipped; directories whose name starts with "." are
// skipped. A kustomization file below dir is an error (ReadDir does not
// build kustomizations; Render does). A file larger than MaxFileSize, and a symlink that leads out of
// dir, are errors; symlinks to directories are not followed. Any problem in
// any document fails the whole directory: the returned error is a
// ManifestErrors listing all of them.
func ReadDir(dir string) ([]Manifest, error) {
	return readDir(dir, nil)
}

// readDir is ReadDir decrypting SOPS files with sec (nil refuses them).
// Files are read and decoded on every CPU at once (decoding YAML is most
// of a directory's render); the manifests and errors keep the files'
// order.
func readDir(dir string, sec *secrets) ([]Manifest, error) {
	files, errs, err := walkTree(dir)
	if err != nil {
		return nil, err
	}
	read := make([]fileRead, len(files))
	var g errgroup.Group
	g.SetLimit(runtime.GOMAXPROCS(0))
	for i, f := range files {
		g.Go(func() error {
			read[i] = readManifestFile(f, sec)
			return nil
		})
	}
	_ = g.Wait() // every file's problems are in read
	var out []Manifest
	for _, r := range read {
		out = append(out, r.manifests...)
		errs = append(errs, r.errs...)
	}
	if len(errs) > 0 {
		return nil, errs
	}
	return out, nil
}

// fileRead is what one file of a plain manifest directory holds.
type fileRead struct {
	manifests []Manifest
	errs      ManifestErrors
}

// readManifestFile reads one file of a plain manifest directory: a
// manifest file's objects, nothing for a file of another kind, an error
// for a kustomization.
func readManifestFile(f treeFile, sec *secrets) fileRead {
	if isKustomizationName(path.Base(f.rel)) {
		return fileRead{errs: ManifestErrors{{File: f.rel, Err: errors.New("a kustomization below a plain manifest directory is not built: point the app's path (or --path, which replaces it) at that kustomization's directory, or add a kustomization.yaml at the top that lists it under resources")}}}
	}
	if !manifestExt[strings.ToLower(filepath.Ext(f.rel))] {
		return fileRead{}
	}
	ms, errs := readFile(f, sec)
	return fileRead{manifests: ms, errs: errs}
}

func readFile(f treeFile, sec *secrets) ([]Manifest, ManifestErrors) {
	data, err := f.read()
	if err != nil {
		return nil, ManifestErrors{{File: f.rel, Err: err}}
	}
	if data, err = sec.open(f.rel, data); err != nil {
		return nil, ManifestErrors{{File: f.rel, Err: err}}
	}
	return decodeStream(bytes.NewReader(data), f.rel)
}

// decodeStream splits r into YAML documents and decodes each.
func decodeStream(r io.Reader, name string) ([]Manifest, ManifestErrors) {
	reader := utilyaml.NewYAMLReader(bufio.NewReader(r))
	var out []Manifest
	var errs ManifestErrors
	for index := 1; ; index++ {
		doc, err := reader.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			errs = append(errs, &ManifestError{File: name, Index: index, Err: fmt.Errorf("cannot split documents: %w", err)})
			break
		}
		if len(bytes.TrimSpace(stripComments(doc))) == 0 {
			index--
			continue
		}
		ms, docErrs := decodeManifests(doc, name, index)
		out = append(out, ms...)
		errs = append(errs, docErrs...)
	}
	return out, errs
}

// decodeManifests decodes one document of file name into its objects: the
// document itself, or each item of a List document, in order, the way
// kubectl apply -f reads it. Every object is checked like a document of
// its own; an error names the document and the item.
func decodeManifests(doc []byte, name string, index int) ([]Manifest, ManifestErrors) {
	obj, err := parseDocument(doc)
	if err != nil {
		return nil, ManifestErrors{{File: name, Index: index, Object: describe(obj), Err: err}}
	}
	if !isListDocument(obj) {
		if err := checkObject(obj); err != nil {
			return nil, ManifestErrors{{File: name, Index: index, Object: describe(obj), Err: err}}
		}
		return []Manifest{{File: name, Index: index, Object: obj}}, nil
	}
	items, err := listItems(obj)
	if err != nil {
		return nil, ManifestErrors{{File: name, Index: index, Object: describe(obj), Err: err}}
	}
	var out []Manifest
	var errs ManifestErrors
	for i, item := range items {
		if err := checkListItem(item); err != nil {
			errs = append(errs, &ManifestError{File: name, Index: index, Item: i + 1, Object: describe(item), Err: err})
			continue
		}
		out = append(out, Manifest{File: name, Index: index, Item: i + 1, Object: item})
	}
	return out, errs
}

// isListDocument reports whether a document is a list to expand: its kind
// is List or ends in List, and it has items. A kind ending in List without
// items is an object like any other (its kind is then checked by the
// cluster's discovery).
func isListDocument(obj *unstructured.Unstructured) bool {
	if !strings.HasSuffix(obj.GetKind(), "List") {
		return false
	}
	_, found := obj.Object["items"]
	return found
}

// listItems returns the objects of a List document's items.
func listItems(list *unstructured.Unstructured) ([]*unstructured.Unstructured, error) {
	raw, ok := list.Object["items"].([]any)
	if !ok {
		if list.Object["items"] == nil {
			return nil, nil // "items:" with nothing: an empty list
		}
		return nil, errors.New("items must be a list of objects")
	}
	out := make([]*unstructured.Unstructured, len(raw))
	for i, it := range raw {
		m, ok := it.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("items[%d] is not an object (a YAML mapping is needed)", i)
		}
		out[i] = &unstructured.Unstructured{Object: m}
	}
	return out, nil
}

// checkListItem checks one item of a List document: an object like any
// document, and not a list itself (kubectl does not expand nested lists).
func checkListItem(item *unstructured.Unstructured) error {
	if isListDocument(item) {
		return errors.New("a list inside a list is not expanded: move its items up into the outer list")
	}
	return checkObject(item)
}

// decodeDocument turns one YAML or JSON document into a single object and
// checks what every manifest needs before it can be applied. A List
// document is an error here: decodeManifests expands lists.
func decodeDocument(doc []byte) (*unstructured.Unstructured, error) {
	obj, err := parseDocument(doc)
	if err != nil {
		return obj, err
	}
	if obj.IsList() {
		return obj, errors.New("a list where one object was expected: write each item as its own document")
	}
	return obj, checkObject(obj)
}

// parseDocument turns one YAML or JSON document into a map, checking only
// that it is one and has a kind.
func parseDocument(doc []byte) (*unstructured.Unstructured, error) {
	content, err := decodeContent(doc)
	if err != nil {
		return nil, err
	}
	obj := &unstructured.Unstructured{Object: content}
	if obj.GetKind() == "" {
		return obj, errors.New("kind is missing: add kind (e.g. ConfigMap, Deployment)")
	}
	return obj, nil
}

// decodeContent decodes one YAML or JSON document into a map: a JSON
// object straight through a JSON decoder (decodeJSONObject), anything
// else through YAML.
func decodeContent(doc []byte) (map[string]any, error) {
	if content, ok := decodeJSONObject(doc); ok {
		return content, nil
	}
	return decodeYAMLDocument(doc)
}

// decodeYAMLDocument decodes one YAML document (or JSON, which is YAML)
// into a map, as sigs.k8s.io/yaml converts it to JSON: a key given twice
// is refused.
func decodeYAMLDocument(doc []byte) (map[string]any, error) {
	js, err := yaml.YAMLToJSONStrict(doc)
	if err != nil {
		return nil, fmt.Errorf("invalid YAML: %w", withholdYAMLQuotes(err))
	}
	if bytes.Equal(bytes.TrimSpace(js), []byte("null")) {
		return nil, errors.New("document is empty")
	}
	var content map[string]any
	// utiljson keeps integers as int64, as the API machinery expects.
	if err := utiljson.Unmarshal(js, &content); err != nil {
		return nil, fmt.Errorf("not a Kubernetes object (a YAML mapping is needed): %w", err)
	}
	return content, nil
}

// yamlQuote matches what the YAML decoders quote of a document's text:
// an anchor's name ('...'), a scalar that did not decode to its tag, or
// the start of one (`...`), which may be a secret's value or part of it
// (a password starting with "*" reads as an alias). A key they name in
// double quotes ("mapping key "color" already defined") stays: a key is
// a name, and it is what the author needs to find the line.
var yamlQuote = regexp.MustCompile("'[^'\\n]*'|`[^`]*`|invalid map key: .*")

// withheldYAML says what withholdYAMLQuotes took out and how to find it.
const withheldYAML = " (quoted text withheld: it may be part of a secret value)"

// withholdYAMLQuotes returns a YAML decoder's error with what it quotes
// of the document replaced by redact.Marker: the document may be a
// Secret's, and the values a chart was given reach its manifests.
func withholdYAMLQuotes(err error) error {
	msg := err.Error()
	scrubbed := yamlQuote.ReplaceAllStringFunc(msg, func(q string) string {
		if strings.HasPrefix(q, "invalid map key: ") {
			return "invalid map key: " + redact.Marker
		}
		return redact.Marker
	})
	if scrubbed == msg {
		return err
	}
	return errors.New(scrubbed + withheldYAML)
}

// checkObject checks what every object needs before it can be applied.
func checkObject(obj *unstructured.Unstructured) error {
	if obj.GetKind() == "" {
		return errors.New("kind is missing: add kind (e.g. ConfigMap, Deployment)")
	}
	if obj.GetAPIVersion() == "" {
		return errors.New("apiVersion is missing: add apiVersion (e.g. v1, apps/v1)")
	}
	if obj.GetName() == "" {
		if obj.GetGenerateName() != "" {
			return errors.New("metadata.generateName is not supported: GitOps objects need a fixed metadata.name")
		}
		return errors.New("metadata.name is missing: add metadata.name")
	}
	if _, found, _ := unstructured.NestedFieldNoCopy(obj.Object, "metadata", "managedFields"); found {
		return errors.New("metadata.managedFields must not be in Git: it records live ownership and the API server rejects it in apply requests; delete the field")
	}
	return nil
}

// describe names an object for error messages, as far as it decoded.
func describe(obj *unstructured.Unstructured) string {
	if obj == nil {
		return ""
	}
	parts := []string{}
	for _, p := range []string{obj.GetAPIVersion(), obj.GetKind(), obj.GetNamespace(), obj.GetName()} {
		if p != "" {
			parts = append(parts, p)
		}
	}
	return strings.Join(parts, " ")
}

// stripComments drops full-line YAML comments so a document holding only
// comments counts as empty.
func stripComments(doc []byte) []byte {
	var b bytes.Buffer
	for _, line := range bytes.Split(doc, []byte("\n")) {
		if t := bytes.TrimSpace(line); len(t) > 0 && t[0] == '#' {
			continue
		}
		b.Write(line)
		b.WriteByte('\n')
	}
	return b.Bytes()
}
