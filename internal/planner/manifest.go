package planner

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"path"
	"path/filepath"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

// Manifest is one object read from a file, with where it came from.
type Manifest struct {
	// File is the path of the file, relative to the directory read.
	File string
	// Index is the 1-based position of the document in its file.
	Index int
	// Object is the decoded object, exactly as written.
	Object *unstructured.Unstructured
}

// Origin returns "file#index", the place errors and reports point at.
func (m Manifest) Origin() string {
	return fmt.Sprintf("%s#%d", m.File, m.Index)
}

// ManifestError is a problem with one document of one file.
type ManifestError struct {
	File  string
	Index int // 1-based document index; 0 when the whole file is concerned
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
	if e.Object != "" {
		fmt.Fprintf(&b, " (%s)", e.Object)
	}
	fmt.Fprintf(&b, ": %v", e.Err)
	return b.String()
}

// Unwrap returns the underlying error.
func (e *ManifestError) Unwrap() error { return e.Err }

// ManifestErrors is every problem found in a directory; nothing from a
// directory with any of them may be applied.
type ManifestErrors []*ManifestError

// Error implements error.
func (es ManifestErrors) Error() string {
	lines := make([]string, len(es))
	for i, e := range es {
		lines[i] = e.Error()
	}
	return strings.Join(lines, "\n")
}

// Unwrap returns each problem, so errors.Is and errors.As see their causes
// (a cluster that could not be reached, say).
func (es ManifestErrors) Unwrap() []error {
	errs := make([]error, len(es))
	for i, e := range es {
		errs[i] = e
	}
	return errs
}

// manifestExt lists the file endings read as manifests.
var manifestExt = map[string]bool{".yaml": true, ".yml": true, ".json": true}

// ReadDir reads every .yaml, .yml and .json file below dir (recursively, in
// lexical order), splits multi-document files and decodes each document.
// Empty documents are skipped; directories whose name starts with "." are
// skipped. A kustomization file below dir is an error (ReadDir does not
// build kustomizations; Render does). A file larger than MaxFileSize, and a symlink that leads out of
// dir, are errors; symlinks to directories are not followed. Any problem in
// any document fails the whole directory: the returned error is a
// ManifestErrors listing all of them.
func ReadDir(dir string) ([]Manifest, error) {
	files, errs, err := walkTree(dir)
	if err != nil {
		return nil, err
	}
	var out []Manifest
	for _, f := range files {
		if isKustomizationName(path.Base(f.rel)) {
			errs = append(errs, &ManifestError{File: f.rel, Err: errors.New("a kustomization below a plain manifest directory is not built: point the app's path at its directory, or add a kustomization.yaml at the top that lists it under resources")})
			continue
		}
		if !manifestExt[strings.ToLower(filepath.Ext(f.rel))] {
			continue
		}
		ms, fileErrs := readFile(f)
		out = append(out, ms...)
		errs = append(errs, fileErrs...)
	}
	if len(errs) > 0 {
		return nil, errs
	}
	return out, nil
}

func readFile(f treeFile) ([]Manifest, ManifestErrors) {
	data, err := f.read()
	if err != nil {
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
		obj, err := decodeDocument(doc)
		if err != nil {
			errs = append(errs, &ManifestError{File: name, Index: index, Object: describe(obj), Err: err})
			continue
		}
		out = append(out, Manifest{File: name, Index: index, Object: obj})
	}
	return out, errs
}

// decodeDocument turns one YAML or JSON document into an object and checks
// what every manifest needs before it can be applied.
func decodeDocument(doc []byte) (*unstructured.Unstructured, error) {
	js, err := yaml.YAMLToJSONStrict(doc)
	if err != nil {
		return nil, fmt.Errorf("invalid YAML: %w", err)
	}
	if bytes.Equal(bytes.TrimSpace(js), []byte("null")) {
		return nil, errors.New("document is empty")
	}
	var content map[string]any
	// utiljson keeps integers as int64, as the API machinery expects.
	if err := utiljson.Unmarshal(js, &content); err != nil {
		return nil, fmt.Errorf("not a Kubernetes object (a YAML mapping is needed): %w", err)
	}
	obj := &unstructured.Unstructured{Object: content}
	if obj.GetKind() == "" {
		return obj, errors.New("kind is missing: add kind (e.g. ConfigMap, Deployment)")
	}
	if obj.IsList() {
		return obj, errors.New("lists are not supported: write each item as its own document")
	}
	if obj.GetAPIVersion() == "" {
		return obj, errors.New("apiVersion is missing: add apiVersion (e.g. v1, apps/v1)")
	}
	if obj.GetName() == "" {
		if obj.GetGenerateName() != "" {
			return obj, errors.New("metadata.generateName is not supported: GitOps objects need a fixed metadata.name")
		}
		return obj, errors.New("metadata.name is missing: add metadata.name")
	}
	if _, found, _ := unstructured.NestedFieldNoCopy(obj.Object, "metadata", "managedFields"); found {
		return obj, errors.New("metadata.managedFields must not be in Git: it records live ownership and the API server rejects it in apply requests; delete the field")
	}
	return obj, nil
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
