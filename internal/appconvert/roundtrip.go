package appconvert

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"syncd.dev/syncd/internal/api/v1alpha1"
	"syncd.dev/syncd/internal/config"
	"syncd.dev/syncd/internal/controller"
)

// checkRoundTrip translates the App back as the controller does and
// compares it with the file app: anything convert lost or changed is an
// error, whatever field it is.
func checkRoundTrip(a config.App, app *v1alpha1.App, src controller.Source, creds controller.Credentials) error {
	if src.Git == nil && src.Helm == nil && src.OCI == nil {
		return fmt.Errorf("source %q was not converted", a.Source)
	}
	if a.Decryption != nil {
		creds.DecryptionKeysFile = a.Decryption.KeysFile
	}
	cfg, err := controller.TranslateSource(app, src, creds)
	if err != nil {
		return err
	}
	changed, err := changedFields(expectedBack(a, app), cfg.Apps[0])
	if err != nil {
		return err
	}
	if len(changed) > 0 {
		return fmt.Errorf("the App does not translate back to the same app (fields %s differ); this is a bug in syncd convert, keep the app in the config file meanwhile", strings.Join(changed, ", "))
	}
	return nil
}

// expectedBack is the file app as the controller's translation of its
// App should give it back: under the App's app name and manager, in the
// App's namespace when it set none, without dependsOn (the controller
// orders Apps by spec.dependsOn itself, by App name), and with the
// kubeconfig in the Secret spec.cluster names.
func expectedBack(a config.App, app *v1alpha1.App) config.App {
	want := a
	want.Name = controller.AppName(app.Namespace, app.Name)
	want.Manager = app.Spec.Manager
	if want.Namespace == "" {
		want.Namespace = app.Namespace // targetNamespace warns of it
	}
	want.DependsOn = nil
	want.Cluster = kubeconfigMoved(a.Cluster, app.Spec.Cluster)
	return want
}

// kubeconfigMoved is the file app's cluster section with its kubeconfig
// where the App names it: the Secret of spec.cluster.
func kubeconfigMoved(file *config.ClusterSpec, obj *v1alpha1.ClusterReference) *config.ClusterSpec {
	if file == nil || obj == nil {
		return file
	}
	out := *file
	out.KubeconfigFile = ""
	out.Name = obj.Name
	out.SecretRef = &config.SecretKeyRef{Name: obj.KubeConfig.SecretRef.Name, Key: obj.KubeConfig.SecretRef.Key}
	return &out
}

// changedFields names the top-level fields of the apps whose JSON
// differs, in order.
func changedFields(want, got config.App) ([]string, error) {
	w, err := jsonFields(want)
	if err != nil {
		return nil, err
	}
	g, err := jsonFields(got)
	if err != nil {
		return nil, err
	}
	var changed []string
	for k := range w {
		if !bytes.Equal(w[k], g[k]) {
			changed = append(changed, k)
		}
	}
	for k := range g {
		if _, ok := w[k]; !ok {
			changed = append(changed, k)
		}
	}
	slices.Sort(changed)
	return changed, nil
}

// jsonFields is an app's JSON object, field by field.
func jsonFields(a config.App) (map[string]json.RawMessage, error) {
	data, err := json.Marshal(a)
	if err != nil {
		return nil, fmt.Errorf("app %s: encode: %w", a.Name, err)
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(data, &fields); err != nil {
		return nil, fmt.Errorf("app %s: decode: %w", a.Name, err)
	}
	return fields, nil
}
