package planner

import (
	"bytes"
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"helm.sh/helm/v4/pkg/chart/common"
	chart "helm.sh/helm/v4/pkg/chart/v2"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/discovery"
)

// ClusterHelmCapabilities reads a chart's .Capabilities from a cluster's
// discovery: the server's version, and every served group/version and
// group/version/Kind (subresources left out), as helm install sees them.
// Groups that fail discovery are left out, as helm does; other errors are
// returned.
func ClusterHelmCapabilities(ctx context.Context, dc discovery.DiscoveryInterface) (HelmCapabilities, error) {
	if err := ctx.Err(); err != nil {
		return HelmCapabilities{}, err
	}
	v, err := dc.ServerVersion()
	if err != nil {
		return HelmCapabilities{}, fmt.Errorf("helm capabilities: server version: %w", err)
	}
	_, lists, err := dc.ServerGroupsAndResources()
	if err != nil && !discovery.IsGroupDiscoveryFailedError(err) {
		return HelmCapabilities{}, fmt.Errorf("helm capabilities: API versions: %w", err)
	}
	seen := map[string]bool{}
	for _, l := range lists {
		seen[l.GroupVersion] = true
		for _, res := range l.APIResources {
			if !strings.Contains(res.Name, "/") {
				seen[l.GroupVersion+"/"+res.Kind] = true
			}
		}
	}
	caps := HelmCapabilities{KubeVersion: v.GitVersion}
	for gv := range seen {
		caps.APIVersions = append(caps.APIVersions, gv)
	}
	sort.Strings(caps.APIVersions)
	return caps, nil
}

// chartCRDs are the documents of the crds/ files of a chart and its
// subcharts (chart.CRDObjects), decoded and named by their repository
// paths, and what did not decode.
type chartCRDs struct {
	manifests []Manifest
	errs      ManifestErrors
}

// decodeChartCRDs decodes the crds/ files of the chart in the directory
// rel and of its subcharts. Called on a chart whose dependencies Helm
// processed, so a disabled subchart's crds/ are left out, as with helm.
func decodeChartCRDs(ch *chart.Chart, rel string) chartCRDs {
	var out chartCRDs
	for _, crd := range ch.CRDObjects() {
		ms, errs := decodeStream(bytes.NewReader(crd.File.Data), chartFilePath(rel, filepath.ToSlash(crd.Filename)))
		out.manifests = append(out.manifests, ms...)
		out.errs = append(out.errs, errs...)
	}
	return out
}

// withCRDAPIs returns caps with the APIs the CustomResourceDefinitions
// among crds serve added (servedAPIVersions), as helm install sees them:
// it creates crds/ first, then reads the capabilities the templates get.
// caps is not changed.
func withCRDAPIs(caps *common.Capabilities, crds []Manifest) *common.Capabilities {
	var extra []string
	for _, m := range crds {
		extra = append(extra, servedAPIVersions(m.Object)...)
	}
	if len(extra) == 0 {
		return caps
	}
	out := *caps
	out.APIVersions = append(slices.Clone(caps.APIVersions), extra...)
	return &out
}

// servedAPIVersions is what discovery lists for obj when it is a
// CustomResourceDefinition: "group/version" and "group/version/Kind" of
// every version with served: true. Anything else serves nothing.
func servedAPIVersions(obj *unstructured.Unstructured) []string {
	if obj.GroupVersionKind().GroupKind() != crdGK {
		return nil
	}
	group, _, _ := unstructured.NestedString(obj.Object, "spec", "group")
	kind, _, _ := unstructured.NestedString(obj.Object, "spec", "names", "kind")
	versions, _, _ := unstructured.NestedSlice(obj.Object, "spec", "versions")
	if group == "" || kind == "" {
		return nil
	}
	var out []string
	for _, v := range versions {
		vm, _ := v.(map[string]any)
		name, _ := vm["name"].(string)
		served, _ := vm["served"].(bool)
		if name != "" && served {
			out = append(out, group+"/"+name, group+"/"+name+"/"+kind)
		}
	}
	return out
}
