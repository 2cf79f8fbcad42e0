package planner

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strconv"
	"sync"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	"syncd.dev/syncd/internal/decrypt"
	"syncd.dev/syncd/internal/redact"
)

// errNoDecryption is a SOPS-encrypted file in an app that has no keys.
var errNoDecryption = errors.New("is encrypted with SOPS, and the app has no decryption keys: set decryption (provider: sops, keysFile) on the app in syncd.yaml")

// secrets decrypts the SOPS files of one render with the app's keys (nil
// keys, or a nil *secrets, refuse them) and remembers every value it decrypted, so the values can be found
// in the rendered objects and hidden. It is safe for concurrent use.
type secrets struct {
	keys *decrypt.Keys
	// decrypting is held while a file is decrypted: the files of a
	// directory are read at once (readDir), and SOPS does not say that
	// its decryption is safe for concurrent use.
	decrypting sync.Mutex

	mu     sync.Mutex
	values map[string]bool
}

func newSecrets(keys *decrypt.Keys) *secrets {
	return &secrets{keys: keys, values: map[string]bool{}}
}

// open returns data, a file named name, decrypted when SOPS encrypted it
// (judged by its name's ending and content); any other file is returned
// as it is. The error never quotes a value.
func (s *secrets) open(name string, data []byte) ([]byte, error) {
	format, ok := decrypt.FormatOf(name)
	if !ok || !decrypt.IsEncrypted(data, format) {
		return data, nil
	}
	if s == nil || s.keys == nil {
		return nil, errNoDecryption
	}
	s.decrypting.Lock()
	res, err := s.keys.Decrypt(data, format)
	s.decrypting.Unlock()
	if err != nil {
		return nil, fmt.Errorf("cannot be decrypted with SOPS: %w; nothing of the app is applied", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, v := range res.Values {
		s.values[v] = true
	}
	// A generator may take the whole file as one value (a
	// configMapGenerator's files:).
	s.values[string(res.Plain)] = true
	return res.Plain, nil
}

// mark records in each manifest the fields whose value is one the render
// decrypted, and the decrypted values it holds anywhere.
func (s *secrets) mark(ms []Manifest) {
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.values) == 0 {
		return
	}
	known := s.compiled()
	for i := range ms {
		ms[i].Decrypted = decryptedPaths(ms[i].Object, s.values)
		ms[i].Secrets = foundIn(ms[i].Object.Object, known)
	}
}

// compiled is the decrypted values as a redact.Secrets (s.mu held).
func (s *secrets) compiled() *redact.Secrets {
	return redact.NewSecrets(slices.Collect(maps.Keys(s.values)))
}

// mask hides the decrypted values in err's text: a kustomize error may
// quote a field that holds one. It returns err when there is nothing to
// hide.
func (s *secrets) mask(err error) error {
	if s == nil || err == nil {
		return err
	}
	s.mu.Lock()
	known := s.compiled()
	s.mu.Unlock()
	if msg := known.Mask(err.Error()); msg != err.Error() {
		return errors.New(msg)
	}
	return err
}

// foundIn returns the values of known that the strings of v hold.
func foundIn(v any, known *redact.Secrets) []string {
	if known == nil {
		return nil
	}
	seen := map[string]bool{}
	var walk func(v any)
	walk = func(v any) {
		switch t := v.(type) {
		case map[string]any:
			for _, c := range t {
				walk(c)
			}
		case []any:
			for _, c := range t {
				walk(c)
			}
		case string:
			for _, f := range known.Found(t) {
				seen[f] = true
			}
		}
	}
	walk(v)
	out := slices.Collect(maps.Keys(seen))
	slices.Sort(out)
	return out
}

// decryptedPaths returns the paths of obj's leaves whose value, as text,
// is one of values, in path order.
func decryptedPaths(obj *unstructured.Unstructured, values map[string]bool) []fieldpath.Path {
	var out []fieldpath.Path
	var walk func(v any, p fieldpath.Path)
	walk = func(v any, p fieldpath.Path) {
		switch t := v.(type) {
		case map[string]any:
			for k, c := range t {
				walk(c, append(p, fieldpath.PathElement{FieldName: &k}))
			}
		case []any:
			for i, c := range t {
				walk(c, append(p, fieldpath.PathElement{Index: &i}))
			}
		default:
			if text, ok := leafText(t); ok && values[text] {
				out = append(out, p.Copy())
			}
		}
	}
	walk(obj.Object, nil)
	sort.Slice(out, func(i, j int) bool { return out[i].String() < out[j].String() })
	return out
}

// leafText is a scalar's text as SOPS records a decrypted value.
func leafText(v any) (string, bool) {
	switch t := v.(type) {
	case string:
		return t, t != ""
	case bool:
		return strconv.FormatBool(t), true
	case int64:
		return strconv.FormatInt(t, 10), true
	case float64:
		return strconv.FormatFloat(t, 'f', -1, 64), true
	}
	return "", false
}

// knownSecrets are the plan's secret values: those the render decrypted
// (Manifest.Secrets), the values of the substitution's sensitive
// variables, and every value the objects hold at a field rules hide
// (redact.Rules.Collect: Secret data, sensitive paths, decrypted fields),
// except the app's and the objects' names and namespaces (see
// redact.NewSecretsExcept).
func knownSecrets(ms []Manifest, app App, subst *Substitution) *redact.Secrets {
	rules := app.Sensitive
	var values []string
	names := map[string]bool{}
	for _, m := range ms {
		values = append(values, m.Secrets...)
		if m.Object == nil {
			continue
		}
		redact.AddNames(names, m.Object.Object)
		gk := m.Object.GroupVersionKind().GroupKind()
		fields := make([]redact.Field, len(m.Decrypted))
		for i, p := range m.Decrypted {
			fields[i] = redact.Field{Kind: gk, Path: p}
		}
		values = append(values, rules.WithFields(fields).Collect(m.Object.Object)...)
	}
	names[app.Name], names[app.Namespace] = true, true
	if subst != nil {
		for _, v := range subst.Variables {
			if v.Sensitive {
				values = append(values, v.Value)
			}
		}
	}
	return redact.NewSecretsExcept(values, names)
}

// decryptedFields are the fields of the plan's objects that hold
// decrypted values, by kind, for redact.Rules.WithFields.
func decryptedFields(objs []Object) []redact.Field {
	var out []redact.Field
	for _, o := range objs {
		for _, p := range o.decrypted {
			out = append(out, redact.Field{Kind: o.Ref.GroupKind(), Path: p})
		}
	}
	return out
}
