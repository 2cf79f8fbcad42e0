package appconvert

import (
	"errors"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"syncd.dev/syncd/internal/api/v1alpha1"
	"syncd.dev/syncd/internal/config"
	"syncd.dev/syncd/internal/controller"
)

// Conversion is the objects of a config file and what the user must do
// besides applying them.
type Conversion struct {
	// Sources, HelmSources and OCISources are the objects of the
	// config's sources[].git, sources[].helm and sources[].oci.
	Sources     []*v1alpha1.GitSource
	HelmSources []*v1alpha1.HelmSource
	OCISources  []*v1alpha1.OCISource
	Apps        []*v1alpha1.App
	// AlertProviders and Alerts are the objects of the config's
	// alerts[]: one of each per entry.
	AlertProviders []*v1alpha1.AlertProvider
	Alerts         []*v1alpha1.Alert
	// Comments go above an object's document, by "Kind/name".
	Comments map[string][]string
	// Warnings say what the user must do or know: Secrets to create,
	// names that change, what is not converted.
	Warnings []string
}

// Convert converts every source and app of cfg into objects of
// namespace ns; the errors of every source and app are returned
// together, and the Conversion holds what did convert.
func Convert(cfg *config.Config, ns string) (*Conversion, error) {
	c := &Conversion{Comments: map[string][]string{}}
	creds := map[string]controller.Credentials{}
	sources := map[string]controller.Source{}
	var errs []error
	for i, s := range cfg.Sources {
		if s.Kind() == config.SourceGit && config.IsLocalGitURL(s.Git.URL) {
			errs = append(errs, fmt.Errorf("%s: sources[%d] (%s): a GitSource may not read syncd's own disk (a file URL; docs/security.md); keep it and its apps in the config file, or serve the repository over https or ssh", cfg.File, i, s.Name))
			continue
		}
		src, sc := c.anySource(s, ns)
		creds[s.Name], sources[s.Name] = sc, src
	}
	for i, a := range cfg.Apps {
		app, err := c.app(a, ns, sources[a.Source].Kind())
		if err == nil {
			err = checkRoundTrip(a, app, sources[a.Source], creds[a.Source])
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: apps[%d] (%s): %w", cfg.File, i, a.Name, err))
			continue
		}
		c.Apps = append(c.Apps, app)
	}
	for _, a := range cfg.Alerts {
		c.alert(a, ns)
	}
	return c, errors.Join(errs...)
}

// typeMeta is the apiVersion and kind of an object of this API version.
func typeMeta(kind string) metav1.TypeMeta {
	return metav1.TypeMeta{APIVersion: v1alpha1.GroupVersion.String(), Kind: kind}
}
