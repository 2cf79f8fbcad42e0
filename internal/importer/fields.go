package importer

import (
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/runtime"
)

// fields reads one map of an imported object (its spec, or a map inside
// it) and accounts for every key: each is read by a mapping, named by a
// warning (none), or warned about by done as having no equivalent.
type fields struct {
	im   *importer
	d    Document
	path string
	m    map[string]any
	used map[string]bool
}

// fields starts reading the map at path ("spec") of d; a missing map is
// empty.
func (im *importer) fields(d Document, path string) *fields {
	m, _ := nested(d.Object.Object, strings.Split(path, ".")...).(map[string]any)
	return &fields{im: im, d: d, path: path, m: m, used: map[string]bool{}}
}

// nested returns the value at keys of m (nil when absent).
func nested(m map[string]any, keys ...string) any {
	var v any = m
	for _, k := range keys {
		mm, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = mm[k]
	}
	return v
}

// field is the full name of key, for warnings.
func (f *fields) field(key string) string { return f.path + "." + key }

// has reports whether key is set.
func (f *fields) has(key string) bool {
	_, ok := f.m[key]
	return ok
}

// get marks key read and returns its value.
func (f *fields) get(key string) any {
	f.used[key] = true
	return f.m[key]
}

// str returns the string at key ("" when absent; a number or a boolean
// is printed).
func (f *fields) str(key string) string {
	switch v := f.get(key).(type) {
	case nil:
		return ""
	case string:
		return v
	default:
		return fmt.Sprint(v)
	}
}

// boolean returns the boolean at key and whether it is set.
func (f *fields) boolean(key string) (value, set bool) {
	v, ok := f.get(key).(bool)
	return v, ok
}

// list returns the list at key.
func (f *fields) list(key string) []any {
	l, _ := f.get(key).([]any)
	return l
}

// strings returns the strings of the list at key.
func (f *fields) strings(key string) []string {
	var out []string
	for _, v := range f.list(key) {
		if s, ok := v.(string); ok {
			out = append(out, s)
		}
	}
	return out
}

// sub marks key read and reads the map at it.
func (f *fields) sub(key string) *fields {
	f.used[key] = true
	m, _ := f.m[key].(map[string]any)
	return &fields{im: f.im, d: f.d, path: f.field(key), m: m, used: map[string]bool{}}
}

// item reads the i-th map of the list at key (the list is marked read
// by the caller).
func (f *fields) item(key string, i int, v any) *fields {
	m, _ := v.(map[string]any)
	return &fields{im: f.im, d: f.d, path: fmt.Sprintf("%s[%d]", f.field(key), i), m: m, used: map[string]bool{}}
}

// into decodes the value at key into out (a small struct of the
// importer's own); false when absent or of another shape, with a
// warning for the latter.
func (f *fields) into(key string, out any) bool {
	v, ok := f.get(key).(map[string]any)
	if !ok {
		return false
	}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(v, out); err != nil {
		f.warn(key, "cannot be read (%v); not imported", err)
		return false
	}
	return true
}

// warn records a warning about key.
func (f *fields) warn(key, format string, args ...any) {
	f.im.warn(f.d, f.field(key), format, args...)
}

// none warns, when key is set, that it has no equivalent, saying what
// to do instead.
func (f *fields) none(key, format string, args ...any) {
	if !f.has(key) {
		return
	}
	f.get(key)
	f.warn(key, format, args...)
}

// done warns about every key no mapping read: it has no syncd
// equivalent the importer knows.
func (f *fields) done() {
	var keys []string
	for k := range f.m {
		if !f.used[k] {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	for _, k := range keys {
		f.warn(k, "has no syncd equivalent the importer knows; not imported")
	}
}

// skipRest marks every key read: the object they belong to is not
// imported, which a warning already says.
func (f *fields) skipRest() {
	for k := range f.m {
		f.used[k] = true
	}
}
