package planner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"regexp"

	"sigs.k8s.io/yaml"
)

// valuesOf returns the values a chart is rendered with (readValues),
// its values files read from opts.ValuesRoot when set (through a file
// system of its own, confined and limited as the tree's), from the tree's
// fsys otherwise.
func valuesOf(ctx context.Context, fsys *repoFS, opts HelmOptions) (map[string]any, error) {
	if opts.ValuesRoot == "" || len(opts.ValuesFiles) == 0 {
		return readValues(fsys, opts)
	}
	vfs, err := openRepoFS(opts.ValuesRoot, buildDeadline(ctx))
	if err != nil {
		return nil, ManifestErrors{{File: opts.ValuesFiles[0], Err: fmt.Errorf("helm.valuesFiles%s: %s", valuesWhere(opts), trimRepoRoot(err.Error()))}}
	}
	defer vfs.Close()
	return readValues(vfs, opts)
}

// valuesWhere is " in <ValuesFrom>", or nothing.
func valuesWhere(opts HelmOptions) string {
	if opts.ValuesFrom == "" {
		return ""
	}
	return " in " + opts.ValuesFrom
}

// readValues returns the values a chart is rendered with: opts'
// ValuesFiles (read through fsys) merged in order, then opts.Values over
// them (helm's -f files, then --set). Values are never printed: an error
// names the file and line, not the content.
func readValues(fsys *repoFS, opts HelmOptions) (map[string]any, error) {
	vals := map[string]any{}
	for i, f := range opts.ValuesFiles {
		name := path.Join(repoRoot, path.Clean(f))
		data, err := fsys.ReadFile(name)
		if err != nil {
			return nil, ManifestErrors{{File: f, Err: fmt.Errorf("helm.valuesFiles[%d]%s: %s", i, valuesWhere(opts), trimRepoRoot(err.Error()))}}
		}
		file, err := parseValues(data)
		if err != nil {
			return nil, ManifestErrors{{File: f, Err: fmt.Errorf("helm.valuesFiles[%d]%s: %w", i, valuesWhere(opts), err)}}
		}
		vals = mergeValues(vals, file)
	}
	inline, err := copyValues(opts.Values)
	if err != nil {
		return nil, ManifestErrors{{File: ".", Err: err}}
	}
	return mergeValues(vals, inline), nil
}

// yamlLine finds the line number in a YAML parser's message.
var yamlLine = regexp.MustCompile(`line \d+`)

// parseValues decodes a values file: a YAML mapping (or nothing). A
// parser's message may quote the file's content, so the error keeps only
// the line it names.
func parseValues(data []byte) (map[string]any, error) {
	var vals map[string]any
	if err := yaml.Unmarshal(data, &vals); err != nil {
		at := ""
		if loc := yamlLine.FindString(err.Error()); loc != "" {
			at = " at " + loc
		}
		return nil, fmt.Errorf("not a YAML mapping of values%s (the parser's message is not shown: it may quote values); fix the file so that `helm template -f` accepts it", at)
	}
	if vals == nil {
		vals = map[string]any{}
	}
	return vals, nil
}

// mergeValues merges src over dst, recursing into maps present in both
// (helm's merge of -f files); it changes and returns dst.
func mergeValues(dst, src map[string]any) map[string]any {
	for k, v := range src {
		sub, srcIsMap := v.(map[string]any)
		if prev, ok := dst[k].(map[string]any); ok && srcIsMap {
			dst[k] = mergeValues(prev, sub)
			continue
		}
		dst[k] = v
	}
	return dst
}

// copyValues returns a deep copy of vals with numbers as float64, as
// Helm's values files decode them (config decodes whole numbers as
// int64; a chart's kindIs "float64" must see what helm shows it), so a
// render never changes the caller's values either.
func copyValues(vals map[string]any) (map[string]any, error) {
	out := map[string]any{}
	if len(vals) == 0 {
		return out, nil
	}
	data, err := json.Marshal(vals)
	if err != nil {
		return nil, errors.New("helm.values cannot be encoded as JSON")
	}
	if err := json.Unmarshal(data, &out); err != nil {
		return nil, errors.New("helm.values cannot be decoded as JSON")
	}
	return out, nil
}
