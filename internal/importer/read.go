package importer

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

// Stdin is the path that reads standard input.
const Stdin = "-"

// Read reads the documents of paths: files, directories (recursively,
// every .yaml, .yml and .json file, skipping directories whose name
// starts with a dot) and Stdin. A file that is not YAML is skipped, with
// a warning when it mentions a Flux or Argo CD API group (it may hold
// objects to import).
func Read(paths []string, stdin io.Reader) ([]Document, []Warning, error) {
	r := reader{stdin: stdin}
	for _, p := range paths {
		if err := r.path(p); err != nil {
			return nil, nil, err
		}
	}
	return r.docs, r.warnings, nil
}

// reader collects the documents and warnings of Read.
type reader struct {
	stdin    io.Reader
	docs     []Document
	warnings []Warning
}

// path reads one path argument.
func (r *reader) path(p string) error {
	if p == Stdin {
		data, err := io.ReadAll(r.stdin)
		if err != nil {
			return fmt.Errorf("standard input: %w", err)
		}
		r.data("<stdin>", data)
		return nil
	}
	info, err := os.Stat(p)
	if err != nil {
		return err
	}
	if !info.IsDir() {
		return r.file(p)
	}
	return filepath.WalkDir(p, func(path string, e fs.DirEntry, err error) error {
		switch {
		case err != nil:
			return err
		case e.IsDir() && path != p && strings.HasPrefix(e.Name(), "."):
			return filepath.SkipDir
		case e.IsDir() || !manifestFile(path):
			return nil
		}
		return r.file(path)
	})
}

// manifestFile reports whether path is a YAML or JSON file.
func manifestFile(path string) bool {
	switch strings.ToLower(filepath.Ext(path)) {
	case ".yaml", ".yml", ".json":
		return true
	}
	return false
}

// file reads one file's documents.
func (r *reader) file(path string) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	r.data(filepath.ToSlash(path), data)
	return nil
}

// data splits a file's content into documents and keeps those with an
// apiVersion and a kind.
func (r *reader) data(name string, data []byte) {
	yr := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	pos := 0
	for i := 0; ; i++ {
		doc, err := yr.Read()
		if errors.Is(err, io.EOF) {
			return
		}
		if err == nil {
			var line int
			line, pos = firstLine(data, pos, doc)
			err = r.document(name, doc, line)
		}
		if err != nil {
			r.unreadable(name, i, data, err)
			return
		}
	}
}

// firstLine finds doc in data from pos on: the line of the file it
// starts at (0 when not found), and the position after it.
func firstLine(data []byte, pos int, doc []byte) (line, next int) {
	i := bytes.Index(data[pos:], doc)
	if i < 0 || len(doc) == 0 {
		return 0, pos
	}
	return bytes.Count(data[:pos+i], []byte("\n")) + 1, pos + i + len(doc)
}

// document decodes one YAML document, which starts at line of the file;
// one without apiVersion or kind (a values file, an empty document) is
// not an object and is skipped. A key given twice is kept in the
// Document (Import does not import the object), which is decoded again
// leniently to name it.
func (r *reader) document(name string, doc []byte, line int) error {
	var m map[string]any
	var duplicates []problem
	if err := yaml.UnmarshalStrict(doc, &m); err != nil {
		if duplicates = duplicateKeys(err, line); len(duplicates) == 0 {
			return err
		}
		if err := yaml.Unmarshal(doc, &m); err != nil {
			return err
		}
	}
	u := &unstructured.Unstructured{Object: m}
	if m == nil || u.GetAPIVersion() == "" || u.GetKind() == "" {
		return nil
	}
	r.docs = append(r.docs, Document{File: name, Object: u, duplicates: duplicates})
	return nil
}

// unreadable warns about a file that does not parse when it may hold
// Flux or Argo CD objects; templates and other files are skipped.
func (r *reader) unreadable(name string, doc int, data []byte, err error) {
	if !bytes.Contains(data, []byte("fluxcd.io")) && !bytes.Contains(data, []byte("argoproj.io")) {
		return
	}
	r.warnings = append(r.warnings, Warning{File: name, Message: fmt.Sprintf("document %d and the rest of the file are not YAML (%v); nothing after it is imported", doc+1, err)})
}
