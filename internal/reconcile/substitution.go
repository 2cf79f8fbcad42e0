package reconcile

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"

	yaml "go.yaml.in/yaml/v3"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"syncd.dev/syncd/internal/config"
	"syncd.dev/syncd/internal/identity"
	"syncd.dev/syncd/internal/planner"
)

// substitution returns the planner's substitution for an app (nil when it
// substitutes nothing): the variables of substituteFrom in order, each
// source winning over the ones before it, then substitute over all of
// them, as Flux merges postBuild. The newlines a value ends with are
// removed; its other newlines stay (Flux removes them all, which breaks a
// multi-line value such as a certificate). Only files the config names and ConfigMaps and Secrets in
// syncd's namespace are read, never the app's repository.
//
// With Options.VariablesAsTenant the ConfigMaps and Secrets are read as
// the app's service account (when it has one), never as syncd.
func (r *Runner) substitution(ctx context.Context, app config.App) (*planner.Substitution, error) {
	vs := variableSources{dynamic: r.cluster.Dynamic, namespace: r.opts.Namespace, unread: errNoNamespace}
	if r.opts.VariablesAsTenant && readsCluster(app) {
		ten := TenantOf(app)
		if user := identity.User(ten); user != "" {
			cfg, err := identity.Config(r.cluster.Config, ten)
			if err != nil {
				return nil, err
			}
			if vs.dynamic, err = dynamic.NewForConfig(cfg); err != nil {
				return nil, fmt.Errorf("app %s: substituteFrom: client as %s: %w", app.Name, user, err)
			}
			vs.reader = user
		}
	}
	return vs.substitution(ctx, app)
}

// readsCluster reports whether an app's substituteFrom names a ConfigMap
// or a Secret (not only files).
func readsCluster(app config.App) bool {
	for _, src := range app.SubstituteFrom {
		if src.File == "" {
			return true
		}
	}
	return false
}

// errNoNamespace is why a Runner without syncd's namespace cannot read a
// substituteFrom ConfigMap or Secret.
var errNoNamespace = errors.New("ConfigMaps and Secrets are read from syncd's own namespace, which this command does not know; use a file")

// errOffline is why syncd render cannot read a substituteFrom ConfigMap
// or Secret, and what to run instead.
var errOffline = errors.New("syncd render does not read the cluster, where this ConfigMap or Secret is: " +
	"preview the app with `syncd plan --config`, which reads it in syncd's namespace, " +
	"or give render the variables in a file (substituteFrom[].file)")

// OfflineSubstitution is the substitution of an app for commands that do
// not talk to the cluster (syncd render): its files only; an app naming a
// ConfigMap or Secret fails.
func OfflineSubstitution(ctx context.Context, app config.App) (*planner.Substitution, error) {
	return variableSources{unread: errOffline}.substitution(ctx, app)
}

// variableSources reads substituteFrom: files, and ConfigMaps and Secrets
// in namespace (syncd's own) through dynamic.
type variableSources struct {
	dynamic   dynamic.Interface
	namespace string
	// unread is the error of a ConfigMap or Secret without a cluster or a
	// namespace to read it in.
	unread error
	// reader is the user dynamic reads as when it is not syncd (an App's
	// service account), for the error of a forbidden read.
	reader string
}

func (vs variableSources) substitution(ctx context.Context, app config.App) (*planner.Substitution, error) {
	if !app.Substitutes() {
		return nil, nil
	}
	vars := map[string]planner.Variable{}
	for i, src := range app.SubstituteFrom {
		where := fmt.Sprintf("app %s: substituteFrom[%d]", app.Name, i)
		values, err := vs.variablesFrom(ctx, src)
		if err != nil {
			return nil, fmt.Errorf("%s (%s): %w", where, describeSource(src, vs.namespace), err)
		}
		for name, v := range values {
			if !config.VariableNameRE.MatchString(name) {
				return nil, fmt.Errorf("%s (%s): %q is not a variable name: use letters, digits and underscores, not starting with a digit", where, describeSource(src, vs.namespace), name)
			}
			vars[name] = planner.Variable{Value: flatten(v), Sensitive: sensitiveSource(src), Source: describeSource(src, vs.namespace)}
		}
	}
	for name, v := range app.Substitute {
		vars[name] = planner.Variable{Value: flatten(string(v)), Source: "substitute"}
	}
	rules, err := SensitiveRules(app)
	if err != nil {
		return nil, err
	}
	s := &planner.Substitution{Variables: vars, Sensitive: rules}
	if !app.StrictSubstitution() {
		s.Unset = planner.UnsetEmpty
	}
	return s, nil
}

// flatten removes the line breaks a value ends with (a file or a Secret
// often ends its value with one), keeping those inside it: substitution
// puts a value into its field byte for byte, so a multi-line value
// arrives whole.
func flatten(v string) string { return strings.TrimRight(v, "\r\n") }

// sensitiveSource reports whether a source's values are never printed.
func sensitiveSource(src config.SubstituteSource) bool {
	return src.Sensitive || src.Kind == config.SubstituteSecret
}

// describeSource names a source in errors: its file, or kind
// namespace/name (kind name when the namespace is not known).
func describeSource(src config.SubstituteSource, namespace string) string {
	switch {
	case src.File != "":
		return src.File
	case namespace == "":
		return src.Kind + " " + src.Name
	}
	return src.Kind + " " + namespace + "/" + src.Name
}

// variablesFrom reads one source; an optional one that does not exist
// gives no variables.
func (vs variableSources) variablesFrom(ctx context.Context, src config.SubstituteSource) (map[string]string, error) {
	if src.File != "" {
		return variablesFile(src)
	}
	if vs.namespace == "" || vs.dynamic == nil {
		return nil, vs.unread
	}
	obj, err := vs.dynamic.Resource(sourceResource(src.Kind)).Namespace(vs.namespace).Get(ctx, src.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) && src.Optional {
		return nil, nil
	}
	if apierrors.IsForbidden(err) && vs.reader != "" {
		return nil, fmt.Errorf("read as %s: %w: an App's substituteFrom is read as its serviceAccountName; grant that account get on it, or remove the entry", vs.reader, err)
	}
	if err != nil {
		return nil, fmt.Errorf("read: %w", err)
	}
	return objectVariables(obj, src.Kind)
}

// sourceResource is the resource of a source's kind.
func sourceResource(kind string) schema.GroupVersionResource {
	if kind == config.SubstituteSecret {
		return schema.GroupVersionResource{Version: "v1", Resource: "secrets"}
	}
	return schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
}

// objectVariables returns the data of a ConfigMap, or the decoded data of
// a Secret. Errors never hold a value.
func objectVariables(obj *unstructured.Unstructured, kind string) (map[string]string, error) {
	data, _, err := unstructured.NestedStringMap(obj.Object, "data")
	if err != nil {
		return nil, errors.New("data is not a map of strings")
	}
	if kind != config.SubstituteSecret {
		return data, nil
	}
	for k, v := range data {
		b, err := base64.StdEncoding.DecodeString(v)
		if err != nil {
			return nil, fmt.Errorf("data.%s is not base64", k)
		}
		data[k] = string(b)
	}
	return data, nil
}

// variablesFile reads a YAML file holding a mapping of names to values
// (scalars are taken as written). The YAML error of a sensitive file is
// not shown: it may quote a value.
func variablesFile(src config.SubstituteSource) (map[string]string, error) {
	b, err := os.ReadFile(src.File)
	if errors.Is(err, fs.ErrNotExist) && src.Optional {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var values map[string]string
	if err := yaml.Unmarshal(b, &values); err != nil {
		if src.Sensitive {
			return nil, errors.New("not a YAML mapping of variable names to values (the parser's message is not shown: the file is sensitive)")
		}
		return nil, fmt.Errorf("not a YAML mapping of variable names to values: %w", err)
	}
	return values, nil
}
