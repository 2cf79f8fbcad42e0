package install

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path"
	"slices"
	"strings"

	"helm.sh/helm/v4/pkg/chart/common"
	commonutil "helm.sh/helm/v4/pkg/chart/common/util"
	"helm.sh/helm/v4/pkg/chart/loader/archive"
	chart "helm.sh/helm/v4/pkg/chart/v2"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	"helm.sh/helm/v4/pkg/engine"
	"helm.sh/helm/v4/pkg/strvals"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"

	syncdchart "syncd.dev/syncd/charts/syncd"
)

// DefaultNamespace is the namespace syncd is installed in unless told
// otherwise (manifests/ uses it too).
const DefaultNamespace = "syncd-system"

// ReleaseName is the Helm release name the chart is rendered with. The
// chart's object names do not depend on it.
const ReleaseName = "syncd"

// RenderOptions are what `syncd install` passes to Render.
type RenderOptions struct {
	// Namespace is the release namespace; empty: DefaultNamespace.
	Namespace string
	// ImageTag is the image tag (values image.tag); empty: the chart's
	// appVersion. A --set image.tag or a values file wins over it.
	ImageTag string
	// ValueFiles are values files (-f), merged in order.
	ValueFiles []string
	// Set are --set key=value pairs, applied after the files.
	Set []string
	// ChartDefaults renders the chart as `helm install` would, without the
	// values `syncd install` adds (namespace.create).
	ChartDefaults bool
}

// Chart loads the embedded chart.
func Chart() (*chart.Chart, error) {
	return LoadChart(syncdchart.FS)
}

// LoadChart loads the chart whose files are fsys's, the chart directory
// at its root.
func LoadChart(fsys fs.FS) (*chart.Chart, error) {
	var files []*archive.BufferedFile
	err := fs.WalkDir(fsys, ".", func(name string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || path.Ext(name) == ".go" {
			return err
		}
		data, err := fs.ReadFile(fsys, name)
		if err != nil {
			return err
		}
		files = append(files, &archive.BufferedFile{Name: name, Data: data})
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("chart: %w", err)
	}
	ch, err := loader.LoadFiles(files)
	if err != nil {
		return nil, fmt.Errorf("chart: %w", err)
	}
	return ch, nil
}

// Render renders the embedded chart with opts and returns its objects,
// CRDs included, in apply order (see applyRank).
func Render(opts RenderOptions) ([]*unstructured.Unstructured, error) {
	ch, err := Chart()
	if err != nil {
		return nil, err
	}
	return RenderChart(ch, opts)
}

// RenderChart renders ch with opts (Render for another chart, in tests).
func RenderChart(ch *chart.Chart, opts RenderOptions) ([]*unstructured.Unstructured, error) {
	vals, err := opts.values()
	if err != nil {
		return nil, err
	}
	release := common.ReleaseOptions{Name: ReleaseName, Namespace: opts.namespace(), Revision: 1, IsInstall: true}
	top, err := commonutil.ToRenderValues(ch, vals, release, nil)
	if err != nil {
		return nil, fmt.Errorf("chart values: %w", err)
	}
	out, err := engine.Engine{}.Render(ch, top)
	if err != nil {
		return nil, fmt.Errorf("chart: %w", err)
	}
	objs, err := decodeChart(ch, out)
	if err != nil {
		return nil, err
	}
	for _, o := range objs {
		if namespaced(o) && o.GetNamespace() == "" {
			o.SetNamespace(opts.namespace())
		}
	}
	sortForApply(objs)
	return objs, nil
}

func (o RenderOptions) namespace() string { return cmp.Or(o.Namespace, DefaultNamespace) }

// values layers the user's values (files, then --set, as helm does) over
// the ones syncd install adds.
func (o RenderOptions) values() (map[string]any, error) {
	user, err := o.userValues()
	if err != nil {
		return nil, err
	}
	base := map[string]any{}
	if !o.ChartDefaults {
		base["namespace"] = map[string]any{"create": true}
	}
	if o.ImageTag != "" {
		base["image"] = map[string]any{"tag": o.ImageTag}
	}
	return commonutil.CoalesceTables(user, base), nil
}

// userValues merges the values files in order, then the --set pairs,
// the way helm's -f and --set do (local files only: a URL is not
// fetched).
func (o RenderOptions) userValues() (map[string]any, error) {
	merged := map[string]any{}
	for _, f := range o.ValueFiles {
		data, err := os.ReadFile(f)
		if err != nil {
			return nil, fmt.Errorf("values file: %w", err)
		}
		vals, err := loader.LoadValues(bytes.NewReader(data))
		if err != nil {
			return nil, fmt.Errorf("values file %s: %w", f, err)
		}
		merged = loader.MergeMaps(merged, vals)
	}
	for _, kv := range o.Set {
		if err := strvals.ParseInto(kv, merged); err != nil {
			return nil, fmt.Errorf("--set %s: %w", kv, err)
		}
	}
	return merged, nil
}

// decodeChart decodes the chart's CRDs and rendered templates (NOTES.txt
// and empty documents left out) into objects.
func decodeChart(ch *chart.Chart, rendered map[string]string) ([]*unstructured.Unstructured, error) {
	var objs []*unstructured.Unstructured
	var errs []error
	for _, crd := range ch.CRDObjects() {
		o, err := decodeStream(crd.Filename, crd.File.Data)
		objs, errs = append(objs, o...), append(errs, err)
	}
	for _, name := range slices.Sorted(maps.Keys(rendered)) {
		if path.Base(name) == "NOTES.txt" {
			continue
		}
		o, err := decodeStream(name, []byte(rendered[name]))
		objs, errs = append(objs, o...), append(errs, err)
	}
	return objs, errors.Join(errs...)
}

// decodeStream decodes the YAML documents of one file.
func decodeStream(name string, data []byte) ([]*unstructured.Unstructured, error) {
	var objs []*unstructured.Unstructured
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	for {
		var raw json.RawMessage
		err := dec.Decode(&raw)
		if errors.Is(err, io.EOF) {
			return objs, nil
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		if len(bytes.TrimSpace(raw)) == 0 || string(bytes.TrimSpace(raw)) == "null" {
			continue
		}
		u := &unstructured.Unstructured{}
		if err := u.UnmarshalJSON(raw); err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		if u.GetName() == "" {
			return nil, fmt.Errorf("%s: a document without kind or metadata.name", name)
		}
		objs = append(objs, u)
	}
}

// clusterScoped are the kinds the chart renders that have no namespace.
var clusterScoped = map[string]bool{
	"CustomResourceDefinition": true, "Namespace": true,
	"ClusterRole": true, "ClusterRoleBinding": true,
}

func namespaced(o *unstructured.Unstructured) bool { return !clusterScoped[o.GetKind()] }

// applyOrder ranks kinds the way helm installs them: what others need
// (CRDs, the Namespace, identities and their rights) before what uses
// them. Unknown kinds go last.
var applyOrder = []string{
	"CustomResourceDefinition", "Namespace", "NetworkPolicy", "ServiceAccount",
	"Secret", "ConfigMap", "ClusterRole", "ClusterRoleBinding", "Role",
	"RoleBinding", "Service", "PodDisruptionBudget", "Deployment",
}

func applyRank(kind string) int {
	if i := slices.Index(applyOrder, kind); i >= 0 {
		return i
	}
	return len(applyOrder)
}

// sortForApply sorts objs by applyRank, then namespace and name.
func sortForApply(objs []*unstructured.Unstructured) {
	slices.SortStableFunc(objs, func(a, b *unstructured.Unstructured) int {
		return cmp.Or(
			cmp.Compare(applyRank(a.GetKind()), applyRank(b.GetKind())),
			strings.Compare(a.GetKind(), b.GetKind()),
			strings.Compare(a.GetNamespace(), b.GetNamespace()),
			strings.Compare(a.GetName(), b.GetName()),
		)
	})
}
