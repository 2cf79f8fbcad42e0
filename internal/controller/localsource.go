package controller

import (
	"fmt"

	"syncd.dev/syncd/internal/api/v1alpha1"
	"syncd.dev/syncd/internal/config"
)

// checkNetworkSource refuses a GitSource whose URL reads syncd's own
// disk (config.IsLocalGitURL: a file URL or a local path): through it a
// tenant would read another App's clone in syncd's cache, or any
// repository the process can open. The CRD refuses such URLs at
// admission; this check also holds for GitSources admitted before the
// CRD had the rule. The error does not repeat the URL (it may embed a
// secret).
func checkNetworkSource(src *v1alpha1.GitSource) error {
	if !config.IsLocalGitURL(src.Spec.URL) {
		return nil
	}
	return fmt.Errorf("GitSource %s/%s: spec.url: a file URL or local path reads syncd's own disk, where other Apps' clones are, not a repository of yours: a GitSource fetches over the network; use https://host/org/repo.git or ssh (git@host:org/repo.git). A local repository is for the operator's config file only", src.Namespace, src.Name)
}
