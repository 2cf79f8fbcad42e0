package config

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"

	yaml "go.yaml.in/yaml/v3"
	sigsjson "sigs.k8s.io/json"
)

// maxNodes bounds how many YAML nodes a config may expand to, counting
// every use of an alias. Real configs have a few hundred; the bound stops
// alias bombs ("billion laughs") before they cost memory or time.
const maxNodes = 1 << 16

// Empty returns a config with no sources, apps or alerts, as a file
// holding only apiVersion and kind loads: what syncd runs without a
// config file.
func Empty() *Config { return &Config{APIVersion: APIVersion, Kind: Kind} }

// Load reads the config file at path, decodes it strictly, validates it and
// returns it. Relative file names in the config (auth.tokenFile,
// auth.sshKeyFile, auth.knownHostsFile, verify.keysFile, urlFile,
// hmacKeyFile, substituteFrom[].file, decryption.keysFile,
// cluster.kubeconfigFile) are made absolute against the directory holding the config
// file; the files themselves are not read.
//
// An invalid file yields an Errors value listing every problem found, each
// with the file, line and field path.
func Load(path string) (*Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read config: %w", err)
	}
	cfg, err := Parse(data, path)
	if err != nil {
		return nil, err
	}
	dir, err := filepath.Abs(filepath.Dir(path))
	if err != nil {
		return nil, fmt.Errorf("%s: resolve the config directory: %w", path, err)
	}
	cfg.resolveFiles(dir)
	return cfg, nil
}

// Parse decodes and validates the content of a config file. file names the
// file in errors and is stored in Config.File; it is not opened. Relative
// file names in the config are returned as written (Load resolves them).
//
// Decoding is strict: unknown fields, fields set twice and values of the
// wrong type are errors. An invalid file yields an Errors value listing
// every problem found.
func Parse(data []byte, file string) (*Config, error) {
	root, errs := parseDocument(data, file)
	if root == nil {
		return nil, sortErrors(errs)
	}

	w := &walker{file: file, budget: maxNodes}
	w.walk(root, configType, "")
	errs = append(errs, w.errs...)
	if w.budget < 0 {
		return nil, sortErrors(errs)
	}

	loc := &locator{root: root}
	cfg, decodeErrs := decode(root, file, loc)
	errs = append(errs, decodeErrs...)
	if cfg == nil {
		return nil, sortErrors(errs)
	}

	v := &validator{file: file, loc: loc}
	v.config(cfg)
	for _, fe := range v.errs {
		if !underAny(fe.Field, w.rejected) {
			errs = append(errs, fe)
		}
	}
	if len(errs) > 0 {
		return nil, sortErrors(errs)
	}
	cfg.File = file
	return cfg, nil
}

var yamlLineRE = regexp.MustCompile(`^yaml: line (\d+): (.*)$`)

// yamlError turns a YAML parser error into a FieldError, taking the line
// out of the message when the parser put it there.
func yamlError(file string, err error) FieldError {
	msg := err.Error()
	if strings.Contains(msg, "did not find expected alphabetic or numeric character") {
		// The usual cause: an unquoted "*" (a pattern or "[*]" in a field
		// path) read as the start of a YAML alias.
		msg += ` (a "*" at the start of a value or inside [...] starts a YAML alias: put field paths and patterns in quotes)`
	}
	if m := yamlLineRE.FindStringSubmatch(msg); m != nil {
		line, _ := strconv.Atoi(m[1])
		return FieldError{File: file, Line: line, Message: "invalid YAML: " + m[2]}
	}
	return FieldError{File: file, Message: "invalid YAML: " + trimYAMLPrefix(msg)}
}

func trimYAMLPrefix(s string) string {
	return strings.TrimPrefix(s, "yaml: ")
}

// parseDocument parses data into a YAML node tree and returns the node of
// the single document's top-level mapping, or nil and the reasons why
// there is none.
func parseDocument(data []byte, file string) (*yaml.Node, Errors) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, Errors{{File: file, Message: "the file is empty; start it with apiVersion: " + APIVersion + " and kind: " + Kind}}
		}
		return nil, Errors{yamlError(file, err)}
	}
	var errs Errors
	var next yaml.Node
	switch err := dec.Decode(&next); {
	case err == nil:
		errs = append(errs, FieldError{File: file, Line: next.Line,
			Message: "a second YAML document starts here; a config file holds exactly one document, remove the \"---\" separator and what follows or merge it into the first"})
	case errors.Is(err, io.EOF):
	default:
		errs = append(errs, yamlError(file, err))
	}

	if len(doc.Content) == 0 {
		return nil, append(errs, FieldError{File: file, Message: "the file is empty; start it with apiVersion: " + APIVersion + " and kind: " + Kind})
	}
	root := resolve(doc.Content[0])
	if isNull(root) {
		return nil, append(errs, FieldError{File: file, Line: root.Line, Message: "the file is empty; start it with apiVersion: " + APIVersion + " and kind: " + Kind})
	}
	if root.Kind != yaml.MappingNode {
		return nil, append(errs, FieldError{File: file, Line: root.Line,
			Message: fmt.Sprintf("the file must be a mapping of fields (apiVersion, kind, sources, apps, alerts), got %s", describe(root))})
	}
	return root, errs
}

// decode turns the checked node tree into a Config with the Kubernetes
// strict JSON decoder (the decoder sigs.k8s.io/yaml and apimachinery use),
// so JSON tags and metav1.Duration behave exactly as they do in Kubernetes
// objects. The walker has already removed unknown fields and values of the
// wrong type, so errors here are a safety net; they are reported with the
// best location available.
func decode(root *yaml.Node, file string, loc *locator) (*Config, Errors) {
	var generic any
	if err := root.Decode(&generic); err != nil {
		return nil, Errors{yamlError(file, err)}
	}
	data, err := json.Marshal(generic)
	if err != nil {
		return nil, Errors{{File: file, Line: root.Line, Message: fmt.Sprintf("cannot convert the document to JSON: %v", err)}}
	}
	var cfg Config
	strictErrs, err := sigsjson.UnmarshalStrict(data, &cfg)
	if err != nil {
		return nil, Errors{{File: file, Line: root.Line, Message: fmt.Sprintf("cannot decode the config: %v", err)}}
	}
	var errs Errors
	for _, se := range strictErrs {
		fe := FieldError{File: file, Line: root.Line, Message: se.Error()}
		var pe sigsjson.FieldError
		if errors.As(se, &pe) {
			fe.Field = pe.FieldPath()
			fe.Line = loc.line(fe.Field)
		}
		errs = append(errs, fe)
	}
	if len(errs) > 0 {
		return nil, errs
	}
	return &cfg, nil
}

// resolveFiles makes the relative file names in c absolute against dir.
func (c *Config) resolveFiles(dir string) {
	abs := func(p *string) {
		if *p != "" && !filepath.IsAbs(*p) {
			*p = filepath.Join(dir, *p)
		}
	}
	for i := range c.Sources {
		if o := c.Sources[i].OCI; o != nil {
			o.resolveFiles(abs)
		}
		c.Sources[i].resolveHelmFiles(abs)
		g := &c.Sources[i].Git
		if g.Auth != nil {
			abs(&g.Auth.TokenFile)
			abs(&g.Auth.SSHKeyFile)
			abs(&g.Auth.KnownHostsFile)
		}
		if g.Verify != nil {
			abs(&g.Verify.KeysFile)
		}
	}
	for i := range c.Apps {
		for j := range c.Apps[i].SubstituteFrom {
			abs(&c.Apps[i].SubstituteFrom[j].File)
		}
		if d := c.Apps[i].Decryption; d != nil {
			abs(&d.KeysFile)
		}
		if cl := c.Apps[i].Cluster; cl != nil {
			abs(&cl.KubeconfigFile)
		}
	}
	for i := range c.Alerts {
		abs(&c.Alerts[i].URLFile)
		abs(&c.Alerts[i].HMACKeyFile)
	}
}

// underAny reports whether field is one of parents or inside one of them.
func underAny(field string, parents []string) bool {
	for _, p := range parents {
		if field == p || strings.HasPrefix(field, p+".") || strings.HasPrefix(field, p+"[") {
			return true
		}
	}
	return false
}
