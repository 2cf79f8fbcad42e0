package controller

import (
	"fmt"
	"net/url"
	"slices"
	"strings"

	"syncd.dev/syncd/internal/config"
)

// checkNetworkSource refuses a source whose URL reads syncd's own disk:
// a GitSource's file URL or local path (config.IsLocalGitURL), or a
// HelmSource's or OCISource's URL of any scheme but the network ones
// (https, http and oci; oci only for an OCISource). Through it a tenant
// would read another App's source in syncd's cache, or any file the
// process can open. The CRDs refuse such URLs at admission; this check
// also holds for sources admitted before the CRD had the rule. The
// error does not repeat the URL (it may embed a secret).
func checkNetworkSource(src Source) error {
	switch {
	case src.Helm != nil:
		return checkNetworkURL(src, src.Helm.Spec.URL, "https", "http", "oci")
	case src.OCI != nil:
		return checkNetworkURL(src, src.OCI.Spec.URL, "oci")
	}
	if !config.IsLocalGitURL(src.Git.Spec.URL) {
		return nil
	}
	return fmt.Errorf("%s: spec.url: a file URL or local path reads syncd's own disk, where other Apps' clones are, not a repository of yours: a GitSource fetches over the network; use https://host/org/repo.git or ssh (git@host:org/repo.git). A local repository is for the operator's config file only", src)
}

// checkNetworkURL refuses a URL whose scheme is not one of schemes, or
// that names no host.
func checkNetworkURL(src Source, raw string, schemes ...string) error {
	u, err := url.Parse(strings.TrimSpace(raw))
	if err == nil && u.Host != "" && slices.Contains(schemes, strings.ToLower(u.Scheme)) {
		return nil
	}
	return fmt.Errorf("%s: spec.url: the URL is not a %s URL with a host: a %s fetches over the network (a file URL or a local path would read syncd's own disk, where other Apps' sources are)",
		src, strings.Join(schemes, ", "), src.Kind())
}
