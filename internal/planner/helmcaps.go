package planner

import (
	"context"
	"fmt"
	"sort"
	"strings"

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
