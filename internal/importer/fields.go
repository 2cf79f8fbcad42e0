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
// empty, and a value of another type a typeError.
func (im *importer) fields(d Document, path string) *fields {
	v := nested(d.Object.Object, strings.Split(path, ".")...)
	m, ok := v.(map[string]any)
	if !ok && v != nil {
		im.wrongType(path, mapType, v)
	}
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

// The accessors below return the zero value for a key that is absent,
// and for a value of another type than the tool's API gives the field
// (url: [a list]), which they record as a typeError: the object is then
// not imported (importer.document), as the tool's API server would not
// admit it either.

// str returns the string at key ("" when absent).
func (f *fields) str(key string) string {
	switch v := f.get(key).(type) {
	case nil:
		return ""
	case string:
		return v
	default:
		f.im.wrongType(f.field(key), stringType, v)
		return ""
	}
}

// boolean returns the boolean at key and whether it is set.
func (f *fields) boolean(key string) (value, set bool) {
	switch v := f.get(key).(type) {
	case nil:
		return false, false
	case bool:
		return v, true
	default:
		f.im.wrongType(f.field(key), boolType, v)
		return false, false
	}
}

// list returns the list at key.
func (f *fields) list(key string) []any {
	switch v := f.get(key).(type) {
	case nil:
		return nil
	case []any:
		return v
	default:
		f.im.wrongType(f.field(key), listType, v)
		return nil
	}
}

// strings returns the strings of the list at key.
func (f *fields) strings(key string) []string {
	var out []string
	for i, v := range f.list(key) {
		s, ok := v.(string)
		if !ok {
			f.im.wrongType(fmt.Sprintf("%s[%d]", f.field(key), i), stringType, v)
			continue
		}
		out = append(out, s)
	}
	return out
}

// mapAt marks key read and returns the map at it.
func (f *fields) mapAt(key string) map[string]any {
	f.used[key] = true
	return f.im.asMap(f.field(key), f.m[key])
}

// asMap is v when it is a map; nil when absent, and a typeError at
// field when of another type.
func (im *importer) asMap(field string, v any) map[string]any {
	m, ok := v.(map[string]any)
	if !ok && v != nil {
		im.wrongType(field, mapType, v)
	}
	return m
}

// sub marks key read and reads the map at it.
func (f *fields) sub(key string) *fields {
	return &fields{im: f.im, d: f.d, path: f.field(key), m: f.mapAt(key), used: map[string]bool{}}
}

// item reads the i-th map of the list at key (the list is marked read
// by the caller).
func (f *fields) item(key string, i int, v any) *fields {
	path := fmt.Sprintf("%s[%d]", f.field(key), i)
	m, ok := v.(map[string]any)
	if !ok {
		f.im.wrongType(path, mapType, v)
	}
	return &fields{im: f.im, d: f.d, path: path, m: m, used: map[string]bool{}}
}

// into decodes the value at key into out (a small struct of the
// importer's own); false when absent or of another shape, with a
// warning for the latter.
func (f *fields) into(key string, out any) bool {
	v := f.mapAt(key)
	if v == nil {
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
